"""The preempt action: starving jobs take resources from lower-value work of their OWN queue.

Volcano's ``actions/preempt``
(https://github.com/volcano-sh/volcano/tree/master/pkg/scheduler/actions/preempt).
Two phases per queue, queues in queue order:

1. between jobs: each starving job, in job order, gets one statement; its pending tasks
   preempt tasks of other jobs of the queue until the job stops starving; the statement is
   committed only if the job is then pipelined (gang), otherwise everything is undone;
2. inside jobs: each starving job's pending tasks may displace lower-value tasks of the
   same job, one committed statement per task, stopping at the job's first failure.

Preempt never crosses queues; taking from other queues is reclaim's job.

The ``preempt.*`` rules of ``actions/util/reclaim_rules.py`` (off by default, as Volcano)
are for a loop that really evicts: a pod under its minimum runtime is never a victim, a victim
gang keeps minMember or goes whole, the eviction limits hold per session, and with
``preempt.equalPriorityOnly`` only what kube-scheduler never preempts for is preempted (then
only nodes holding enough acceptable victims are examined at all: the predicates and node
scores over every node, per waiting task, are what made a preempt pass cost a minute at
5,000 nodes).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence

from scheduler_core.actions.topology import find_candidates, select_candidate
from scheduler_core.actions.util.idle_room import IdleRoom
from scheduler_core.actions.util.job_checks import JobChecks, skipped_invalid
from scheduler_core.actions.util.predicate_helper import (
    PREDICATE_ERROR_CACHE_KEY,
    HardVerdicts,
    PredicateHelper,
)
from scheduler_core.actions.util.reclaim_rules import ReclaimGuard, ReclaimRules
from scheduler_core.actions.util.victims import (
    TaskFilter,
    inter_job_filter,
    intra_job_filter,
    sort_nodes_by_score,
    validate_victims,
)
from scheduler_core.api.job import JobInfo
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import ZERO, Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import PREEMPTION_POLICY_NEVER, TaskStatus, preemptable_status
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.priority_queue import PriorityQueue
from scheduler_core.framework.registry import Action
from scheduler_core.framework.session import Session
from scheduler_core.framework.statement import Op, Statement, StatementError
from scheduler_core.framework.status import Code
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.actions.preempt")

ENABLE_TOPOLOGY_AWARE_PREEMPTION_KEY = "enableTopologyAwarePreemption"
TOPOLOGY_AWARE_PREEMPT_WORKER_NUM_KEY = "topologyAwarePreemptWorkerNum"
MIN_CANDIDATE_NODES_PERCENTAGE_KEY = "minCandidateNodesPercentage"
MIN_CANDIDATE_NODES_ABSOLUTE_KEY = "minCandidateNodesAbsolute"
MAX_CANDIDATE_NODES_ABSOLUTE_KEY = "maxCandidateNodesAbsolute"
#: Not a Volcano argument: fixes the topology-aware offset sequence (tests, what-if runs).
RANDOM_SEED_KEY = "randomSeed"
#: The whole-number arguments, each with the attribute it sets (kept when absent).
_COUNT_ARGUMENTS = (
    (TOPOLOGY_AWARE_PREEMPT_WORKER_NUM_KEY, "topology_aware_preempt_worker_num"),
    (MIN_CANDIDATE_NODES_PERCENTAGE_KEY, "min_candidate_nodes_percentage"),
    (MIN_CANDIDATE_NODES_ABSOLUTE_KEY, "min_candidate_nodes_absolute"),
    (MAX_CANDIDATE_NODES_ABSOLUTE_KEY, "max_candidate_nodes_absolute"),
)


def preemptor_fits_on_node(
    ssn: Session, queue: QueueInfo, preemptor: TaskInfo, node: NodeInfo
) -> bool:
    """Room in the queue AND on the node AND the predicates pass.

    The queue test comes first on purpose: when the queue is at its deserved share,
    evicting same-queue victims is what makes room, even on a node with idle resources.
    """
    return (
        ssn.allocatable(queue, preemptor)
        and preemptor.init_resreq.less_equal(node.future_idle(), ZERO)
        and ssn.predicate(preemptor, node) is None
    )


def terminating_by_preemption(task: TaskInfo) -> bool:
    """Deleted (Releasing) with a ``DisruptionTarget`` condition from the scheduler."""
    return task.status == TaskStatus.RELEASING and task.disruption_target


def task_eligible_to_preempt(ssn: Session, preemptor: TaskInfo) -> str | None:
    """Why ``preemptor`` may not preempt now, or None (Volcano's ``taskEligibleToPreempt``).

    A pod nominated to a node waits while lower-priority pods there are still terminating
    for it, unless that node became hopeless (UnschedulableAndUnresolvable).
    """
    if preemptor.preemption_policy == PREEMPTION_POLICY_NEVER:
        return "not eligible to preempt other tasks due to preemptionPolicy is Never"
    nominated = preemptor.nominated_node_name
    if not nominated:
        return None
    node = ssn.nodes.get(nominated)
    if node is None:
        return "not eligible due to the pod's nominated node is not found in the session"
    err = ssn.predicate(preemptor, node)
    if err is None:
        return (
            "not eligible due to the pod's nominated node is already schedulable, which "
            "should not happen as preemption means no node is schedulable"
        )
    if err.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        return None
    for task in node.tasks.values():
        if task.pod_priority < preemptor.pod_priority and terminating_by_preemption(task):
            return (
                "not eligible due to a terminating pod caused by preemption on the nominated node"
            )
    return None


def _pending_tasks(ssn: Session, job: JobInfo) -> PriorityQueue[TaskInfo]:
    """The job's pending, non-gated tasks in task order (highest value first)."""
    return PriorityQueue(
        ssn.task_order_fn, [t for t in job.tasks_with(TaskStatus.PENDING) if not t.gated]
    )


class PreemptAction(Action):
    name = "preempt"

    def __init__(self) -> None:
        self.enable_predicate_error_cache = True
        self.enable_topology_aware_preemption = False
        self.topology_aware_preempt_worker_num = 16
        self.min_candidate_nodes_percentage = 10
        self.min_candidate_nodes_absolute = 1
        self.max_candidate_nodes_absolute = 100
        self.rng = random.Random()
        self.rules = ReclaimRules()
        self._guard: ReclaimGuard | None = None
        #: queue -> node name -> the Bound/Running tasks of the queue there, as the pass began
        self._by_queue: dict[str, dict[str, list[TaskInfo]]] | None = None
        #: queue -> the highest pod priority of its tasks in ``_by_queue`` (None: no task)
        self._top_priority: dict[str, int | None] = {}
        #: set when a pass begins: which waiting tasks fit idle room as it began
        self._room: IdleRoom
        #: starving jobs whose every pending task fits idle room: nothing to do for them
        self._hopeless: set[str] = set()
        #: ``_nodes_with_room``'s answers in phase 1, by what they depend on (see
        #: ``_room_signature``), valid while the session's placements stay as they were
        self._rooms: dict[tuple[object, ...], list[NodeInfo]] = {}
        self._rooms_at = -1
        #: by the same signature, the hard predicate verdicts on the nodes searched
        self._hard: dict[tuple[object, ...], HardVerdicts] = {}
        #: by signature and ``Session.preemptor_key``: node name -> whether the victims the
        #: plugins let go there free enough (``_has_valid_victims``), kept as the rooms are
        self._valid: dict[tuple[object, ...], dict[str, bool]] = {}
        #: the same under the live rules, worked out once over the nodes with room: where
        #: in the signature's ``HardVerdicts.nodes`` (those nodes) the victims free enough
        self._valid_at: dict[tuple[object, ...], set[int]] = {}
        #: set when a pass begins: whether each job starves, kept while the session stands
        self._checks: JobChecks

    def initialize(self, arguments: Arguments) -> None:
        self.enable_predicate_error_cache = arguments.get_bool(
            PREDICATE_ERROR_CACHE_KEY, self.enable_predicate_error_cache
        )
        self.enable_topology_aware_preemption = arguments.get_bool(
            ENABLE_TOPOLOGY_AWARE_PREEMPTION_KEY, self.enable_topology_aware_preemption
        )
        for key, attribute in _COUNT_ARGUMENTS:
            setattr(self, attribute, arguments.get_int(key, getattr(self, attribute)))
        seed = arguments.get_int(RANDOM_SEED_KEY, -1)
        self.rng = random.Random(seed) if seed >= 0 else random.Random()
        self.rules = ReclaimRules.for_preempt(arguments)

    # --- Execute ------------------------------------------------------------------------

    def execute(self, ssn: Session) -> None:
        log.log(v(5), "Enter Preempt ...")
        try:
            self._execute(ssn)
        finally:
            log.log(v(5), "Leaving Preempt ...")

    def _execute(self, ssn: Session) -> None:
        preemptors_map: dict[str, PriorityQueue[JobInfo]] = {}
        preemptor_tasks: dict[str, PriorityQueue[TaskInfo]] = {}
        under_request_by_queue: dict[str, list[JobInfo]] = {}

        self._guard = ReclaimGuard(ssn, self.rules)
        self._by_queue = None
        self._top_priority = {}
        self._room = IdleRoom(ssn)
        self._hopeless = set()
        self._rooms = {}
        self._rooms_at = -1
        self._hard = {}
        self._valid = {}
        self._valid_at = {}
        checks = self._checks = JobChecks(ssn)
        for job in ssn.schedulable_jobs():
            # Starving first: both are pure checks, and most jobs are not starving while
            # the gang validity check walks every task.
            if job.is_pending() or not checks.starving(job):
                continue
            if job.network_topology is not None and not ssn.topology.empty:
                # As Volcano: no preemption for a gang with a network topology request
                # here, where victims would be picked node by node across domains. Reclaim
                # frees one domain for it; the preempt verb offers victims in one domain.
                log.log(v(4), "Job <%s> asks for a network topology: skip preemption", job.uid)
                continue
            if skipped_invalid(ssn, job, "preemption", log):
                continue
            if job.queue not in ssn.queues:
                log.log(
                    v(3),
                    "Queue <%s> not found for Job <%s/%s>, skip preemption",
                    job.queue,
                    job.namespace,
                    job.name,
                )
                continue
            if job.queue not in preemptors_map:
                preemptors_map[job.queue] = ssn.job_queue(kept=True)
            preemptors_map[job.queue].push(job)
            under_request_by_queue.setdefault(job.queue, []).append(job)
            if self.rules.equal_priority_only and self._room.job_fits(job):
                # Each of its tasks would fail at once and change nothing (idle room is
                # judged as the pass began): neither phase can do anything for the job. It
                # keeps its place in the queues, so every other job is taken in the same order.
                self._hopeless.add(job.uid)
                continue
            preemptor_tasks[job.uid] = _pending_tasks(ssn, job)

        queues = PriorityQueue(ssn.queue_order_fn, [ssn.queues[q] for q in preemptors_map])
        helper = PredicateHelper(enable_error_cache=self.enable_predicate_error_cache)

        while not queues.empty():
            queue = queues.pop()
            self._between_jobs(ssn, queue, preemptors_map, preemptor_tasks, helper)
            self._within_jobs(ssn, under_request_by_queue.get(queue.uid, []), helper)

    def _between_jobs(
        self,
        ssn: Session,
        queue: QueueInfo,
        preemptors_map: dict[str, PriorityQueue[JobInfo]],
        preemptor_tasks: dict[str, PriorityQueue[TaskInfo]],
        helper: PredicateHelper,
    ) -> None:
        """Phase 1: one statement per job, kept only if the whole gang got pipelined."""
        # Asked once: the per-job lines below are neither formatted nor called when unread.
        verbose = log.isEnabledFor(v(3))
        while True:
            preemptors = preemptors_map.get(queue.uid)
            if preemptors is None or preemptors.empty():
                log.log(v(4), "No preemptors in Queue <%s>, break.", queue.name)
                return
            if self.guard(ssn).exhausted():
                log.log(v(3), "Eviction limit reached, stop preempting.")
                return
            preemptor_job = preemptors.pop()
            if preemptor_job.uid in self._hopeless:
                continue
            stmt = Statement(ssn)
            while True:
                if not self._checks.starving(preemptor_job):
                    break
                tasks = preemptor_tasks[preemptor_job.uid]
                if tasks.empty():
                    if verbose:
                        log.log(
                            v(3),
                            "No preemptor task in job <%s/%s>.",
                            preemptor_job.namespace,
                            preemptor_job.name,
                        )
                    break
                preemptor = tasks.pop()
                accept = inter_job_filter(ssn, preemptor, preemptor_job)
                signature = (
                    _room_signature(preemptor, preemptor_job)
                    if not _holds_victims(preemptor_job)
                    else None
                )
                verdicts = None
                if signature is not None:
                    plugins_read = ssn.preemptor_key(preemptor)
                    if plugins_read is not None:
                        verdicts = (signature, plugins_read)
                _, err = self.preempt(ssn, stmt, preemptor, accept, helper, signature, verdicts)
                if verbose and err is not None:
                    _log_failure(preemptor, err)
            if stmt.settles_alike():
                continue
            if self._checks.pipelined(preemptor_job) and self._within_rules(ssn, stmt):
                self._commit(ssn, stmt)
            else:
                stmt.discard()

    def _within_jobs(self, ssn: Session, jobs: list[JobInfo], helper: PredicateHelper) -> None:
        """Phase 2: a fresh look at each job's pending tasks; every success is committed on
        its own, the first failure ends the job."""
        for job in jobs:
            if job.uid in self._hopeless:
                continue
            if self.rules.equal_priority_only and not _holds_victims(job):
                # This phase evicts only the job's own Bound and Running tasks: with none,
                # and a preemptor that fits idle room left to kube-scheduler, its first
                # preemptor fails on every node, which ends the job here anyway. (Volcano's
                # preempt places a preemptor that fits with no victim at all.)
                continue
            preemptors = _pending_tasks(ssn, job)
            while not preemptors.empty():
                if self.guard(ssn).exhausted():
                    return
                preemptor = preemptors.pop()
                stmt = Statement(ssn)
                assigned, err = self.preempt(
                    ssn, stmt, preemptor, intra_job_filter(preemptor), helper
                )
                _log_failure(preemptor, err)
                if not assigned or not self._within_rules(ssn, stmt):
                    stmt.discard()
                    break
                self._commit(ssn, stmt)

    # --- the live rules -----------------------------------------------------------------

    def guard(self, ssn: Session) -> ReclaimGuard:
        if self._guard is None or self._guard.ssn is not ssn:
            self._guard = ReclaimGuard(ssn, self.rules)
        return self._guard

    def _nodes_with_room(
        self,
        ssn: Session,
        preemptor: TaskInfo,
        accept: TaskFilter,
        signature: tuple[object, ...] | None = None,
    ) -> list[NodeInfo]:
        """The nodes where evicting every acceptable task could make room for ``preemptor``
        (a necessary condition of ``validate_victims``), in name order. Victims are of the
        preemptor's queue, so only that queue's tasks are looked at.

        With ``signature`` (everything ``accept`` and the room asked for depend on), the
        answer is kept for the next preemptor of the same signature until the session
        places or evicts anything: a backlog of alike waiting pods walks the queue's tasks
        once, not once a pod."""
        job = ssn.jobs.get(preemptor.job)
        if job is None:
            return []
        if signature is not None:
            known = self._rooms.get(signature)
            if known is not None:
                return known
            found = self._walk_rooms(ssn, preemptor, accept, job)
            self._rooms[signature] = found
            return found
        return self._walk_rooms(ssn, preemptor, accept, job)

    def _keep_fresh(self, ssn: Session) -> None:
        """Forget what was kept per signature once the session placed or evicted anything."""
        if self._rooms_at != ssn.placements:
            self._rooms = {}
            self._hard = {}
            self._valid = {}
            self._valid_at = {}
            self._rooms_at = ssn.placements

    def _walk_rooms(
        self, ssn: Session, preemptor: TaskInfo, accept: TaskFilter, job: JobInfo
    ) -> list[NodeInfo]:
        need = preemptor.init_resreq
        found = []
        for name, tasks in self._placed_in(ssn, job.queue).items():
            node = ssn.nodes[name]
            room: Resource | None = None  # worked out at the first task accepted
            for task in tasks:
                current = node.tasks.get(task.uid)
                if current is not None and accept(current):
                    if room is None:
                        room = node.future_idle()
                    room.add(current.resreq)
            if room is not None and need.less_equal(room, ZERO):
                found.append(node)
        return sorted(found, key=lambda n: n.name)

    def _may_hold_victims_for(self, ssn: Session, preemptor: TaskInfo) -> bool:
        """Whether any Bound or Running task of the preemptor's queue is of its pod priority
        or above: under the live rules no other may be its victim, so without one the walk
        over the queue's tasks (``_nodes_with_room``) would accept none and find no node."""
        job = ssn.jobs.get(preemptor.job)
        if job is None:
            return True  # ``_nodes_with_room`` answers for a preemptor without its job
        self._placed_in(ssn, job.queue)
        top = self._top_priority[job.queue]
        return top is not None and preemptor.pod_priority <= top

    def _placed_in(self, ssn: Session, queue: str) -> dict[str, list[TaskInfo]]:
        """The queue's Bound and Running tasks by node, found from its jobs on first use in
        the action (a queue's few hundred tasks, not the cluster's every pod). Found later
        than the action began, it misses only tasks an earlier statement evicted, which no
        victim filter takes."""
        if self._by_queue is None:
            self._by_queue = {}
        per_node = self._by_queue.get(queue)
        if per_node is None:
            per_node = self._by_queue[queue] = {}
            nodes = ssn.nodes
            for job in ssn.jobs.values():
                if job.queue != queue:
                    continue
                for task in job.tasks.values():
                    if task.node_name in nodes and preemptable_status(task.status):
                        per_node.setdefault(task.node_name, []).append(task)
            self._top_priority[queue] = max(
                (t.pod_priority for tasks in per_node.values() for t in tasks), default=None
            )
        return per_node

    def _within_rules(self, ssn: Session, stmt: Statement) -> bool:
        """The statement's evictions keep every victim gang whole or at minMember and stay
        within the session's eviction limits (all off unless configured)."""
        guard = self.guard(ssn)
        victims = _evicted(stmt)
        if not victims:
            return True
        if not guard.gangs_kept(victims) or guard.over_total(len(victims)):
            return False
        per_queue = guard.rules.max_evictions_per_queue
        if per_queue > 0:
            counts: dict[str, int] = {}
            for task in victims:
                queue = guard.queue_of(task)
                counts[queue] = counts.get(queue, 0) + 1
            for queue, count in counts.items():
                if guard.committed_per_queue.get(queue, 0) + count > per_queue:
                    return False
        return True

    def _commit(self, ssn: Session, stmt: Statement) -> None:
        self._rooms_at = -1  # a commit changes task statuses without an event
        guard = self.guard(ssn)
        queues = [guard.queue_of(t) for t in _evicted(stmt)]
        stmt.commit()
        guard.record(queues)

    # --- one preemptor ------------------------------------------------------------------

    def preempt(
        self,
        ssn: Session,
        stmt: Statement,
        preemptor: TaskInfo,
        accept: TaskFilter,
        helper: PredicateHelper,
        signature: tuple[object, ...] | None = None,
        verdicts: tuple[object, ...] | None = None,
    ) -> tuple[bool, str | None]:
        """Try to make room for ``preemptor`` on one node; on success its evictions and
        pipeline are merged into ``stmt``. Returns (assigned, why not). ``signature``: see
        ``_nodes_with_room``; with it, the hard predicate verdicts on the nodes searched are
        kept per pod constraints (``HardVerdicts``, the same walk). ``verdicts``: the
        signature and ``Session.preemptor_key``, under which ``normal_preempt`` keeps its
        first test of each node."""
        if signature is not None:
            self._keep_fresh(ssn)
        reason = task_eligible_to_preempt(ssn, preemptor)
        if reason is not None:
            return False, reason
        pre = ssn.pre_predicate(preemptor)
        if pre is not None:
            return False, (
                f"PrePredicate for task {preemptor.namespace}/{preemptor.name} failed for: {pre}"
            )
        # Volcano also drops nodes that allocate found UnschedulableAndUnresolvable for this
        # task; our session keeps no such record, and the preempt predicate below rejects
        # exactly those nodes again.
        guard = self.guard(ssn)
        if guard.check_runtime:
            accept = _old_enough_only(accept, guard)
        if self.rules.equal_priority_only:
            if self._room.fits(preemptor):
                return False, "fits idle capacity: kube-scheduler will place it"
            accept = _not_lower_priority(accept, preemptor)
            all_nodes = (
                self._nodes_with_room(ssn, preemptor, accept, signature)
                if self._may_hold_victims_for(ssn, preemptor)
                else []
            )
            if not all_nodes:
                return False, "no node holds enough victims of its priority or above"
        else:
            all_nodes = [ssn.nodes[name] for name in sorted(ssn.nodes)]
        if signature is not None:
            hard = self._hard.get(signature)
            if hard is None:
                hard = self._hard[signature] = HardVerdicts(
                    all_nodes, ssn.predicate_for_preempt, ssn.snapshot.storage
                )
            if (
                verdicts is not None
                and self.rules.equal_priority_only
                and not self.enable_topology_aware_preemption
            ):
                # The nodes with room are few and alike preemptors many: each node's victims
                # test once, then a preemptor none of whose nodes passes stops here.
                valid = self._valid_at.get(verdicts)
                if valid is None:
                    valid = self._valid_at[verdicts] = {
                        i
                        for i, node in enumerate(hard.nodes)
                        if _has_valid_victims(ssn, preemptor, accept, node)
                    }
                if not valid:
                    # No node passes, whichever the walk takes: it only moves on.
                    hard.advance(helper, preemptor)
                    return False, None
                picked = hard.walk_indices(helper, preemptor)
                if valid.isdisjoint(picked):
                    return False, None
            else:
                picked = hard.walk_indices(helper, preemptor)
            nodes = [hard.nodes[i] for i in picked]
        else:
            nodes, _ = helper.predicate_nodes(preemptor, all_nodes, ssn.predicate_for_preempt)
        if self.enable_topology_aware_preemption:
            return self.topology_aware_preempt(ssn, stmt, preemptor, accept, nodes)
        return self.normal_preempt(ssn, stmt, preemptor, accept, nodes, verdicts)

    def normal_preempt(
        self,
        ssn: Session,
        stmt: Statement,
        preemptor: TaskInfo,
        accept: TaskFilter,
        nodes: list[NodeInfo],
        verdicts: tuple[object, ...] | None = None,
    ) -> tuple[bool, str | None]:
        """Best-scored node first; evict lowest-value victims until the preemptor fits, with
        a statement per node so a node that does not work out keeps its pods. ``verdicts``:
        see ``preempt``."""
        job = ssn.jobs.get(preemptor.job)
        queue = ssn.queues.get(job.queue) if job is not None else None
        if queue is None:
            return False, f"not found Job {preemptor.job} in Session"
        known = self._valid.setdefault(verdicts, {}) if verdicts is not None else None
        if not any(
            self._victims_free_enough(ssn, preemptor, accept, node, known) for node in nodes
        ):
            # Every node below is judged as the session stands now (a node that does not
            # work out is discarded before the next), so none would: scoring them all, the
            # larger part of a preemptor that can displace nobody, would be in vain.
            return False, None
        scores = ssn.node_scores(preemptor, nodes)
        for node in sort_nodes_by_score(nodes, scores):
            log.log(
                v(3),
                "Considering Task <%s/%s> on Node <%s>.",
                preemptor.namespace,
                preemptor.name,
                node.name,
            )
            preemptees = [task for task in node.tasks.values() if accept(task)]
            victims = ssn.preemptable(preemptor, preemptees)
            err = validate_victims(preemptor, node, victims)
            if err is not None:
                log.log(v(3), "No validated victims on Node <%s>: %s", node.name, err)
                continue

            node_stmt = Statement(ssn)
            victims_queue = ssn.build_victims_priority_queue(victims, preemptor)
            preempted = Resource.empty()
            fits = preemptor_fits_on_node(ssn, queue, preemptor, node)
            while not victims_queue.empty() and not fits:
                preemptee = victims_queue.pop()
                log.log(
                    v(3),
                    "Try to preempt Task <%s/%s> for Task <%s/%s>",
                    preemptee.namespace,
                    preemptee.name,
                    preemptor.namespace,
                    preemptor.name,
                )
                node_stmt.evict(preemptee, "preempt", preemptor)
                preempted.add(preemptee.resreq)
                fits = preemptor_fits_on_node(ssn, queue, preemptor, node)

            log.log(
                v(3),
                "Preempted <%s> for Task <%s/%s> requested <%s>.",
                preempted,
                preemptor.namespace,
                preemptor.name,
                preemptor.init_resreq,
            )
            if fits and not self.guard(ssn).gangs_kept(_evicted(node_stmt)):
                log.log(v(3), "Victims on Node <%s> would break a gang", node.name)
                fits = False
            if fits:
                try:
                    node_stmt.pipeline(preemptor, node.name)
                except StatementError:
                    log.error(
                        "Failed to pipeline Task <%s/%s> on Node <%s>",
                        preemptor.namespace,
                        preemptor.name,
                        node.name,
                    )
                    node_stmt.discard()
                    continue
                stmt.merge(node_stmt)
                return True, None
            node_stmt.discard()
        return False, None

    @staticmethod
    def _victims_free_enough(
        ssn: Session,
        preemptor: TaskInfo,
        accept: TaskFilter,
        node: NodeInfo,
        known: dict[str, bool] | None,
    ) -> bool:
        """``_has_valid_victims``, kept in ``known`` (when given) by node name."""
        if known is None:
            return _has_valid_victims(ssn, preemptor, accept, node)
        found = known.get(node.name)
        if found is None:
            found = known[node.name] = _has_valid_victims(ssn, preemptor, accept, node)
        return found

    def topology_aware_preempt(
        self,
        ssn: Session,
        stmt: Statement,
        preemptor: TaskInfo,
        accept: TaskFilter,
        nodes: Sequence[NodeInfo],
    ) -> tuple[bool, str | None]:
        """Dry-run candidate nodes, choose one by the four levels, evict its victims."""
        candidates, statuses = find_candidates(
            ssn,
            preemptor,
            accept,
            nodes,
            self.rng,
            self.min_candidate_nodes_percentage,
            self.min_candidate_nodes_absolute,
            self.max_candidate_nodes_absolute,
        )
        if not candidates:
            return False, f"no candidates that fit the pod, the status of the nodes are {statuses}"
        best = select_candidate(candidates)
        if best is None or not best.name:
            return False, "no candidate node for preemption"
        node = ssn.nodes[best.name]
        tmp = Statement(ssn)
        for victim in best.victims:
            task = node.tasks.get(victim.uid)
            if task is None:
                tmp.discard()
                return False, (
                    f"failed to prepare candidate: task {victim.key} is not on node {node.name}"
                )
            log.log(
                v(3),
                "Try to preempt Task <%s/%s> for Task <%s/%s>",
                task.namespace,
                task.name,
                preemptor.namespace,
                preemptor.name,
            )
            tmp.evict(task, "preempt", preemptor)
        try:
            tmp.pipeline(preemptor, best.name)
        except StatementError as exc:
            log.error(
                "Failed to pipeline Task <%s/%s> on Node <%s>",
                preemptor.namespace,
                preemptor.name,
                best.name,
            )
            tmp.discard()
            return False, str(exc)
        stmt.merge(tmp)
        return True, None


def _has_valid_victims(
    ssn: Session, preemptor: TaskInfo, accept: TaskFilter, node: NodeInfo
) -> bool:
    """``normal_preempt``'s first test of a node: the victims the plugins let go there
    would free enough for ``preemptor``."""
    preemptees = [task for task in node.tasks.values() if accept(task)]
    return validate_victims(preemptor, node, ssn.preemptable(preemptor, preemptees)) is None


def _holds_victims(job: JobInfo) -> bool:
    """Whether ``job`` has a Bound or Running task (the only statuses a victim may have)."""
    return any(bucket and preemptable_status(s) for s, bucket in job.status_index.items())


def _room_signature(preemptor: TaskInfo, job: JobInfo) -> tuple[object, ...]:
    """What phase 1's victim filter and ``_nodes_with_room`` read of a preemptor whose job
    holds no victim itself (so "another job's task" excludes nothing): its queue, pod
    priority, best-effort class and the room it needs."""
    need = preemptor.init_resreq
    scalars = tuple(sorted(need.scalars.items())) if need.scalars else ()
    return (
        job.queue,
        preemptor.pod_priority,
        preemptor.best_effort,
        need.milli_cpu,
        need.memory,
        need.max_task_num,
        scalars,
    )


def _log_failure(preemptor: TaskInfo, err: str | None) -> None:
    if err is not None:
        log.log(
            v(3),
            "Preemptor <%s/%s> failed to preempt Task , err: %s",
            preemptor.namespace,
            preemptor.name,
            err,
        )


def _evicted(stmt: Statement) -> list[TaskInfo]:
    return [o.task for o in stmt.operations if o.op is Op.EVICT]


def _not_lower_priority(accept: TaskFilter, preemptor: TaskInfo) -> TaskFilter:
    """``accept`` less the pods kube-scheduler would preempt for ``preemptor`` itself."""

    def accepted(task: TaskInfo) -> bool:
        return task.pod_priority >= preemptor.pod_priority and accept(task)

    return accepted


def _old_enough_only(accept: TaskFilter, guard: ReclaimGuard) -> TaskFilter:
    """``accept`` less the pods under their minimum runtime."""

    def accepted(task: TaskInfo) -> bool:
        return accept(task) and guard.old_enough(task)

    return accepted
