"""The reclaim action: a starving job takes back what OTHER queues borrowed beyond their share.

Volcano's ``actions/reclaim``
(https://github.com/volcano-sh/volcano/tree/master/pkg/scheduler/actions/reclaim).
Queues are visited in queue order; an overused queue may not reclaim. For each starving job
of a queue, one statement collects, task by task, evictions of Running, preemptable tasks of other,
reclaimable queues (the plugins' ``Reclaimable`` decides which), and the statement is
committed only if the job ends up pipelined. Reclaim never takes from the reclaimer's own
queue and never evicts a task that is merely Bound.

The arguments of ``actions/util/reclaim_rules.py`` add the rules a loop evicting in a live
cluster needs (no boundary victims, minimal gang-aware victim sets, minimum runtime,
eviction limits); all are off by default, so ``simulate`` runs Volcano's reclaim.

A gang with a network topology request is reclaimed for inside ONE domain: every domain of
the lowest tier the request allows is tried (on a statement that is then undone), each
member taking free room in the domain or else victims on the domain's nodes only, and the
domain where every member not placed yet gets a place with the fewest, least important
victims wins; a tier up is tried only when none of a tier can hold the gang. When no
allowed domain can, nothing is evicted for a hard request (the session records why, for
the loop to tell the pods), and a soft one is reclaimed for as any gang. Evicting across
domains for a hard gang would be in vain: its members may only run inside one domain.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable

from scheduler_core.actions.util.idle_room import IdleRoom
from scheduler_core.actions.util.job_checks import JobChecks, skipped_invalid
from scheduler_core.actions.util.predicate_helper import (
    PREDICATE_ERROR_CACHE_KEY,
    HardVerdicts,
    PredicateHelper,
)
from scheduler_core.actions.util.reclaim_rules import (
    ReclaimGuard,
    ReclaimRules,
    reclaimed_dimensions,
)
from scheduler_core.actions.util.victims import (
    eviction_order,
    fits_without,
    reclaimee_filter,
    select_victims_on_node,
    sort_by_importance,
    validate_victims,
)
from scheduler_core.api.errors import NodeError
from scheduler_core.api.job import JobInfo
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import ZERO, Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.topology import Domain
from scheduler_core.api.types import PREEMPTION_POLICY_NEVER, TaskStatus
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.cannot_help import note_if_unhelpable
from scheduler_core.framework.cannot_help_alike import AlikeRefusals
from scheduler_core.framework.priority_queue import PriorityQueue
from scheduler_core.framework.registry import Action
from scheduler_core.framework.session import QueueShare, Session
from scheduler_core.framework.statement import Op, Statement, StatementError
from scheduler_core.framework.topology_fit import (
    TierTrial,
    candidate_domains,
    choose_domain,
    count_fitting,
    domain_nodes,
    no_domain_sentence,
    pending_members,
)
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.actions.reclaim")


class ReclaimAction(Action):
    name = "reclaim"

    def __init__(self) -> None:
        self.enable_predicate_error_cache = True
        self.rules = ReclaimRules()
        self._nodes: list[NodeInfo] = []
        self._verdicts: HardVerdicts | None = None
        self._guard: ReclaimGuard | None = None
        self._node_queues: dict[str, set[str]] = {}
        #: set when a pass begins: which waiting tasks fit idle room as it began
        self._room: IdleRoom
        #: starving jobs whose every pending task fits idle room: nothing to do for them
        self._hopeless: set[str] = set()
        #: the names of the nodes a feasible-index list (one per pod constraints signature)
        #: holds, kept with the list itself so that its identity stays unique
        self._feasible_names: dict[int, tuple[list[int], frozenset[str]]] = {}
        #: the nodes' refusals of waiting pods, judged once per pods alike (``cannot_help``)
        self._alike: AlikeRefusals | None = None
        #: whether each job starves, kept while the session stands (``JobChecks``)
        self._checks: JobChecks | None = None
        #: ``_preemptive``'s answers by queue and pod likeness, and the session state (the
        #: session, its placements, evictions, bound tasks) they were given in
        self._preemptive_known: dict[tuple[str, Hashable], bool] = {}
        self._preemptive_at: tuple[int, int, int, int] = (-1, -1, -1, -1)
        #: the session asked for, and whether the engine's V(3) lines were unread then
        self._quiet: tuple[Session, bool] | None = None

    def initialize(self, arguments: Arguments) -> None:
        self.enable_predicate_error_cache = arguments.get_bool(
            PREDICATE_ERROR_CACHE_KEY, self.enable_predicate_error_cache
        )
        self.rules = ReclaimRules.from_arguments(arguments)

    def execute(self, ssn: Session) -> None:
        log.log(v(5), "Enter Reclaim ...")
        try:
            self._execute(ssn)
        finally:
            log.log(v(5), "Leaving Reclaim ...")

    def _execute(self, ssn: Session) -> None:
        self._room = IdleRoom(ssn)
        self._feasible_names = {}
        self._alike = AlikeRefusals(ssn)
        checks = self._checks = JobChecks(ssn)
        queues: PriorityQueue[QueueInfo] = PriorityQueue(_distinct_first(ssn.queue_order_fn))
        queue_map: dict[str, QueueInfo] = {}
        preemptors_map: dict[str, PriorityQueue[JobInfo]] = {}
        preemptor_tasks: dict[str, PriorityQueue[TaskInfo]] = {}

        log.log(
            v(3),
            "There are <%d> Jobs and <%d> Queues in total for scheduling.",
            len(ssn.jobs),
            len(ssn.queues),
        )
        for job in ssn.schedulable_jobs():
            if job.is_pending():
                # Not admitted, so never reclaimed for; but a job no eviction could ever
                # place is told what is missing (its first waiting pod, as it stands for
                # the job's admission).
                waiting = [t for t in job.tasks_with(TaskStatus.PENDING) if not t.gated]
                if waiting:
                    first = PriorityQueue(ssn.task_order_fn, waiting).pop()
                    note_if_unhelpable(ssn, job, first, alike=self._alike_in(ssn))
                continue
            if skipped_invalid(ssn, job, "reclaim", log):
                continue
            queue = ssn.queues.get(job.queue)
            if queue is None:
                log.error(
                    "Failed to find Queue <%s> for Job <%s/%s>", job.queue, job.namespace, job.name
                )
                continue
            if queue.uid not in queue_map:
                log.log(
                    v(4), "Added Queue <%s> for Job <%s/%s>", queue.name, job.namespace, job.name
                )
                queue_map[queue.uid] = queue
                queues.push(queue)
            if checks.starving(job):
                if job.queue not in preemptors_map:
                    preemptors_map[job.queue] = ssn.job_queue(kept=True)
                preemptors_map[job.queue].push(job)
                if self.rules.minimal_victims and self._fits_as_is(ssn, job):
                    # Each of its tasks would stop at the idle-room check and change
                    # nothing (idle room is judged once, before any eviction): no task
                    # order is needed. It keeps its place so that the others' order holds.
                    self._hopeless.add(job.uid)
                    continue
                preemptor_tasks[job.uid] = PriorityQueue(
                    ssn.task_order_fn,
                    [t for t in job.tasks_with(TaskStatus.PENDING) if not t.gated],
                )

        helper = PredicateHelper(enable_error_cache=self.enable_predicate_error_cache)
        # Nodes in a stable order, computed once: sorting 5,000 names per waiting task cost
        # more than the rest of reclaim at that scale.
        self._nodes = [ssn.nodes[name] for name in sorted(ssn.nodes)]
        self._verdicts = HardVerdicts(self._nodes, ssn.predicate_for_preempt, ssn.snapshot.storage)
        guard = self._guard = ReclaimGuard(ssn, self.rules)
        while not queues.empty():
            if guard.exhausted():
                log.log(v(3), "Eviction limit %d reached, stop reclaiming.", guard.committed)
                break
            queue = queues.pop()
            if ssn.overused(queue):
                log.log(v(3), "Queue <%s> is overused, ignore it.", queue.name)
                continue
            while True:
                jobs = preemptors_map.get(queue.uid)
                if jobs is None or jobs.empty():
                    log.log(v(4), "No preemptors in Queue <%s>, break.", queue.name)
                    break
                if guard.exhausted():
                    break
                job = jobs.pop()
                guard.new_job()
                stmt = Statement(ssn)
                if job.uid not in self._hopeless:
                    self._reclaim_for_job(ssn, stmt, queue, job, preemptor_tasks, helper)
                victim_queues = _victim_queues(ssn, stmt)
                if stmt.settles_alike():
                    pass  # nothing to commit or to undo: the vote would choose nothing
                elif checks.pipelined(job) and not guard.over_total(len(victim_queues)):
                    stmt.commit()
                    guard.record(victim_queues)
                else:
                    stmt.discard()
                # As Volcano: the queue goes back while it has jobs, though this loop goes
                # on draining them; the extra pop then finds none.
                if not jobs.empty():
                    queues.push(queue)

    def _fits_as_is(self, ssn: Session, job: JobInfo) -> bool:
        """Whether ``job`` can be placed without any eviction: each pending task in some
        idle room; for a gang with a topology request, every member together inside one
        allowed domain (a soft one also anywhere: evicting for a mere preference is not
        worth a pod)."""
        if job.network_topology is not None:
            choice = choose_domain(ssn, job)
            if choice is not None:
                return choice.domain is not None or (not choice.hard and self._room.job_fits(job))
        return self._room.job_fits(job)

    def _reclaim_for_job(
        self,
        ssn: Session,
        stmt: Statement,
        queue: QueueInfo,
        job: JobInfo,
        preemptor_tasks: dict[str, PriorityQueue[TaskInfo]],
        helper: PredicateHelper,
    ) -> None:
        if job.network_topology is not None and self._reclaim_in_one_domain(
            ssn, stmt, queue, job, helper
        ):
            return
        checks = self._checks
        if checks is None or checks.session is not ssn:
            checks = self._checks = JobChecks(ssn)
        # Asked once a job: its V(3) lines are neither formatted nor called when unread.
        verbose = log.isEnabledFor(v(3))
        while True:
            if not checks.starving(job):
                return
            tasks = preemptor_tasks.get(job.uid)
            if tasks is None or tasks.empty():
                if verbose:
                    log.log(v(3), "No preemptor task in job <%s/%s>.", job.namespace, job.name)
                return
            if verbose:
                log.log(
                    v(3),
                    "Considering reclaim for %d tasks of job <%s/%s>.",
                    len(tasks),
                    job.namespace,
                    job.name,
                )
            task = tasks.pop()
            if task.preemption_policy == PREEMPTION_POLICY_NEVER:
                if verbose:
                    log.log(
                        v(3), "Task %s/%s cannot preempt (policy Never)", task.namespace, task.name
                    )
                continue
            if not self._preemptive(ssn, queue, task):
                if verbose:
                    log.log(
                        v(3), "Queue <%s> cannot reclaim for task <%s>, skip", queue.name, task.name
                    )
                note_if_unhelpable(ssn, job, task, alike=self._alike_in(ssn))
                continue
            err = ssn.pre_predicate(task)
            if err is not None:
                if verbose:
                    log.log(
                        v(3),
                        "PrePredicate failed for task %s/%s: %s",
                        task.namespace,
                        task.name,
                        err,
                    )
                continue
            self.reclaim_for_task(ssn, stmt, task, job, helper)

    # --- one domain for a topology gang -------------------------------------------------

    def _reclaim_in_one_domain(
        self, ssn: Session, stmt: Statement, queue: QueueInfo, job: JobInfo, helper: PredicateHelper
    ) -> bool:
        """Reclaim for every member of ``job`` not placed yet inside the one domain that
        needs the fewest, least important victims (lowest tier first), into ``stmt``.
        Returns False when the job should be reclaimed for as any other (no tree; a soft
        request no domain can satisfy), True when it was handled here: placed, or refused
        with the sentence in ``ssn.no_domain``."""
        candidates = candidate_domains(ssn, job)
        if candidates is None:
            return False
        hard = candidates.hard
        members = pending_members(job)
        if not members or not ssn.job_starving(job):
            return True
        wanted = Resource.empty()
        for task in members:
            wanted.add(task.init_resreq)
        accept = reclaimee_filter(ssn, job)
        trials: list[TierTrial] = []
        for tier, domains in candidates.tiers:
            best: tuple[tuple[int, list[tuple[int, int]], str], Domain] | None = None
            most: tuple[int, Domain | None] = (0, None)
            for domain in domains:
                if not _may_free_enough(ssn, domain, wanted, accept):
                    # Even every reclaimable pod gone leaves too little room in total: no
                    # trial. (What it holds in free room still counts for the sentence.)
                    held = count_fitting(ssn, members, domain_nodes(ssn, domain))
                    if held > most[0]:
                        most = (held, domain)
                    continue
                trial = Statement(ssn)
                held = self._fill_domain(ssn, trial, queue, job, domain, helper)
                victims = [op.task for op in trial.operations if op.op is Op.EVICT]
                trial.discard()
                if held == len(members) and not _fits_once_gone(ssn, members, domain, victims):
                    # Placement judges the gang node by node in the room left once the
                    # victims are gone: if it would not find the gang a place there, the
                    # evictions would be in vain.
                    held -= 1
                log.log(
                    v(4),
                    "Job <%s>: domain <%s> holds %d of %d members with %d victims",
                    job.uid,
                    domain.name,
                    held,
                    len(members),
                    len(victims),
                )
                if held > most[0]:
                    most = (held, domain)
                if held == len(members):
                    key = (len(victims), _importance(victims), domain.name)
                    if best is None or key < best[0]:
                        best = (key, domain)
            if best is not None:
                domain = best[1]
                if self._fill_domain(ssn, stmt, queue, job, domain, helper) == len(members):
                    log.log(
                        v(3),
                        "Job <%s>: reclaiming inside %s, %d victims",
                        job.uid,
                        domain.describe(),
                        best[0][0],
                    )
                else:  # the trial's own replay: cannot differ, but never evict on doubt
                    log.error("Job <%s>: reclaim in <%s> did not replay", job.uid, domain.name)
                    stmt.discard()
                return True
            trials.append(TierTrial(tier, most[1], most[0]))
        if not hard:
            log.log(
                v(3),
                "Job <%s>: no domain holds the gang even after reclaim; soft request, "
                "reclaiming anywhere",
                job.uid,
            )
            return False
        if any(t.key in ssn.not_evaluable for t in members):
            return True  # the pods are told that instead: it is why no domain was judged
        if not candidates.reason and not any(
            t.preemption_policy != PREEMPTION_POLICY_NEVER and ssn.preemptive(queue, [t])
            for t in members
        ):
            # Its queue may not reclaim for any member: the domains are not why.
            log.log(v(3), "Job <%s>: queue <%s> may not reclaim for it", job.uid, queue.name)
            return True
        if candidates.reason:
            why = candidates.reason
        else:
            why = no_domain_sentence(
                candidates.request,
                len(members),
                wanted,
                candidates.max_tier if candidates.max_tier is not None else 0,
                trials,
            )
        sentence = (
            f"no single domain can hold the gang even after reclaim, so nothing is evicted "
            f"for it ({candidates.request.describe()}): {why}"
        )
        log.log(v(3), "Job <%s>: %s", job.uid, sentence)
        ssn.no_domain[job.uid] = (tuple(t for t in members if not t.gated), sentence)
        return True

    def _fill_domain(
        self,
        ssn: Session,
        stmt: Statement,
        queue: QueueInfo,
        job: JobInfo,
        domain: Domain,
        helper: PredicateHelper,
    ) -> int:
        """Place the members of ``job`` not placed yet inside ``domain``, each in free room
        there or else by victims on the domain's nodes (into ``stmt``), until one finds no
        place; returns how many got one."""
        nodes = [ssn.nodes[name] for name in sorted(domain.nodes) if name in ssn.nodes]
        held = 0
        for task in pending_members(job):
            # Free room only for a member its queue admits now, as the filter verb would.
            if ssn.allocatable(queue, task) and _pipeline_in_room(ssn, stmt, task, nodes):
                held += 1
                continue
            if (
                task.preemption_policy == PREEMPTION_POLICY_NEVER
                or not ssn.preemptive(queue, [task])
                or ssn.pre_predicate(task) is not None
            ):
                break
            if not self.reclaim_for_task(ssn, stmt, task, job, helper, within=domain.nodes):
                break
            held += 1
        return held

    def reclaim_for_task(
        self,
        ssn: Session,
        stmt: Statement,
        task: TaskInfo,
        job: JobInfo,
        helper: PredicateHelper,
        within: frozenset[str] | None = None,
    ) -> bool:
        """Evict victims on the first node where that frees enough for ``task`` and pipeline
        it there; other nodes' tentative evictions are undone. Returns whether it worked.
        ``within``: only these nodes, every one the hard predicates allow (a topology
        gang's domain, whose members the caller already tried in free room)."""
        if not self._nodes:
            self._nodes = [ssn.nodes[name] for name in sorted(ssn.nodes)]
        if self._verdicts is None:
            self._verdicts = HardVerdicts(
                self._nodes, ssn.predicate_for_preempt, ssn.snapshot.storage
            )
        if self._guard is None:
            self._guard = ReclaimGuard(ssn, self.rules)
        guard = self._guard
        queue = ssn.queues.get(job.queue)
        if queue is None or not guard.preemptor_within_share(queue, task):
            log.log(
                v(3),
                "Task <%s> would take queue <%s> above its deserved share",
                task.key,
                job.queue,
            )
            # Beyond its share, yet that may not be all: a pod no eviction could place is
            # told what is missing rather than nothing.
            note_if_unhelpable(ssn, job, task, alike=self._alike_in(ssn))
            return False
        if within is not None:
            feasible = self._feasible_in(task)
            nodes = [ssn.nodes[name] for name in sorted(within) if name in feasible]
        else:
            nodes = self._verdicts.walk(helper, task)
            if self.rules.minimal_victims and self._room.fits(task):
                log.log(v(3), "Task <%s> fits idle capacity: nothing to evict for it", task.key)
                return False
        accept = reclaimee_filter(ssn, job)
        tentative = _count_by_queue(ssn, stmt)
        donors = guard.donor_queues(task)
        dims = reclaimed_dimensions(task)
        shares: dict[str, QueueShare | None] = {}
        for node in nodes:
            if donors is not None and donors.isdisjoint(self._queues_on(ssn, node)):
                continue
            log.log(
                v(3), "Considering Task <%s/%s> on Node <%s>.", task.namespace, task.name, node.name
            )
            reclaimees = [t for t in node.tasks.values() if accept(t)]
            if not reclaimees:
                log.log(v(4), "No reclaimees on Node <%s>.", node.name)
                continue
            possible = [t for t in reclaimees if guard.could_go(t, dims, shares)]
            if validate_victims(task, node, possible) is not None:
                # Victims are a subset of these: the node cannot be freed enough for it.
                log.log(v(4), "Node <%s> cannot be freed enough for <%s>", node.name, task.key)
                continue
            if self.rules.minimal_victims:
                node_stmt = self._minimal_on_node(ssn, task, queue, node, possible, tentative)
                if node_stmt is None:
                    continue
                stmt.merge(node_stmt)
                return True
            victims = ssn.reclaimable(task, reclaimees)
            err = validate_victims(task, node, victims)
            if err is not None:
                log.log(v(3), "No validated victims on Node <%s>: %s", node.name, err)
                continue
            if guard.narrows:
                victims = guard.narrow(task, eviction_order(ssn, victims, task), tentative)
                err = validate_victims(task, node, victims)
                if err is not None:
                    log.log(v(3), "No victims on Node <%s> within the rules: %s", node.name, err)
                    continue

            victims_queue = ssn.build_victims_priority_queue(victims, task)
            resreq = task.init_resreq.clone()
            reclaimed = Resource.empty()
            available = node.future_idle()
            node_stmt = Statement(ssn)
            while not victims_queue.empty():
                if resreq.less_equal(available, ZERO):
                    break
                reclaimee = victims_queue.pop()
                log.log(
                    v(3),
                    "Try to reclaim Task <%s/%s> for Tasks <%s/%s>",
                    reclaimee.namespace,
                    reclaimee.name,
                    task.namespace,
                    task.name,
                )
                node_stmt.evict(reclaimee, "reclaim", task)
                reclaimed.add(reclaimee.resreq)
                available.add(reclaimee.resreq)
            log.log(
                v(3),
                "Reclaimed <%s> for task <%s/%s> requested <%s>, and Node <%s> "
                "availableResources <%s>.",
                reclaimed,
                task.namespace,
                task.name,
                task.init_resreq,
                node.name,
                available,
            )
            if resreq.less_equal(available, ZERO) and guard.rules.keep_gangs:
                evicted = [op.task for op in node_stmt.operations if op.op is Op.EVICT]
                whole = guard.complete_gangs(task, evicted, victims, tentative)
                if whole is None:
                    node_stmt.discard()
                    continue
                for extra in whole[len(evicted) :]:
                    node_stmt.evict(extra, "reclaim", task)
            if resreq.less_equal(available, ZERO):
                try:
                    node_stmt.pipeline(task, node.name)
                except StatementError:
                    log.error(
                        "Failed to pipeline Task <%s/%s> on Node <%s>",
                        task.namespace,
                        task.name,
                        node.name,
                    )
                    node_stmt.discard()
                    continue
                stmt.merge(node_stmt)
                return True
            node_stmt.discard()
        # No node could be freed for it: say so when no eviction at all could have.
        note_if_unhelpable(ssn, job, task, likely=nodes, alike=self._alike_in(ssn))
        return False

    def _preemptive(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
        """``ssn.preemptive(queue, [task])``, kept for the next pod alike of the same queue
        until the session places, evicts or commits anything: the plugins judge it from
        the queue's records and the pod's requests (ten thousand waiting pods of a few
        specs asked it once each). Asked every time while the engine's V(3) lines are read,
        as the plugins say why they refuse at that level, and for a pod judged alone."""
        if self._quiet is None or self._quiet[0] is not ssn:
            self._quiet = (ssn, not logging.getLogger("scheduler_core").isEnabledFor(v(3)))
        key = self._alike_in(ssn).likeness_of(task) if self._quiet[1] else None
        if key is None:
            return ssn.preemptive(queue, [task])
        at = (ssn.uid, *ssn.moves())
        if at != self._preemptive_at:
            self._preemptive_known = {}
            self._preemptive_at = at
        found = self._preemptive_known.get((queue.uid, key))
        if found is None:
            found = self._preemptive_known[queue.uid, key] = ssn.preemptive(queue, [task])
        return found

    def _alike_in(self, ssn: Session) -> AlikeRefusals:
        """The refusals of pods alike kept for ``ssn`` (a new record for a new session)."""
        alike = self._alike
        if alike is None or alike.session is not ssn:
            alike = self._alike = AlikeRefusals(ssn)
        return alike

    def _feasible_in(self, task: TaskInfo) -> frozenset[str]:
        """The names of the nodes the hard predicates allow ``task`` on (computed once per
        constraints signature, as the walk's verdicts are)."""
        verdicts = self._verdicts
        assert verdicts is not None
        found = verdicts.feasible_indices(task)
        kept = self._feasible_names.get(id(found))
        if kept is None or kept[0] is not found:
            kept = (found, frozenset(verdicts.nodes[i].name for i in found))
            self._feasible_names[id(found)] = kept
        return kept[1]

    def _queues_on(self, ssn: Session, node: NodeInfo) -> set[str]:
        """Queues with a Running task on ``node`` as the session opened: a session only
        turns Running tasks into Releasing ones (and back), so this stays a superset."""
        queues = self._node_queues.get(node.name)
        if queues is None:
            queues = set()
            for task in node.tasks.values():
                if task.status == TaskStatus.RUNNING:
                    job = ssn.jobs.get(task.job)
                    if job is not None:
                        queues.add(job.queue)
            self._node_queues[node.name] = queues
        return queues

    def _allowed_together(
        self, ssn: Session, task: TaskInfo, victims: list[TaskInfo], tentative: dict[str, int]
    ) -> bool:
        """Whether the plugins and the rules let all of ``victims`` go at once."""
        guard = self._guard
        assert guard is not None
        order = eviction_order(ssn, victims, task)
        voted = ssn.reclaimable(task, order)
        return len(voted) == len(victims) and len(guard.narrow(task, voted, tentative)) == len(
            victims
        )

    def _minimal_on_node(
        self,
        ssn: Session,
        task: TaskInfo,
        queue: QueueInfo,
        node: NodeInfo,
        reclaimees: list[TaskInfo],
        tentative: dict[str, int],
    ) -> Statement | None:
        """The fewest victims on ``node`` after which ``task`` passes every predicate there,
        within the guard's rules; the statement evicts them and pipelines ``task``."""
        guard = self._guard
        assert guard is not None
        node_stmt = Statement(ssn)
        victims: list[TaskInfo] = []
        if not (
            task.init_resreq.less_equal(node.future_idle(), ZERO)
            and ssn.predicate(task, node) is None
        ):
            # Plugins and rules once, before any copy: most nodes fail right here, and the
            # plugins' verdict alone (before ordering) already rules most of them out.
            voted = ssn.reclaimable(task, reclaimees)
            if not voted or validate_victims(task, node, voted) is not None:
                return None
            approved = guard.narrow(task, eviction_order(ssn, voted, task), tentative)
            if not approved or validate_victims(task, node, approved) is not None:
                log.log(v(4), "No allowed victims on Node <%s> free enough", node.name)
                return None
            chosen, err = _search_on_copy(ssn, task, queue, node, approved)
            if err is not None:
                # The plugins and the rules approve victims in eviction order, each one
                # while those before it are gone; the ones that make the preemptor fit (its
                # host ports, pod anti-affinity, topology spread) may lie further on. Any
                # victim they would let go on its own may be searched, if the set found is
                # one they let go together.
                alone = [
                    t
                    for t in reclaimees
                    if ssn.reclaimable(task, [t]) and guard.narrow(task, [t], tentative)
                ]
                if len(alone) > len(approved):
                    chosen, err = _search_on_copy(ssn, task, queue, node, alone)
                    if err is None and not self._allowed_together(ssn, task, chosen, tentative):
                        err = "the victims that would make it fit may not all go"
            if err is not None or not chosen:
                log.log(v(3), "No minimal victims on Node <%s>: %s", node.name, err)
                return None
            victims = [node.tasks[t.uid] for t in chosen]
            whole = guard.complete_gangs(task, victims, approved, tentative)
            if whole is None:
                log.log(v(3), "Node <%s>: victims would break a gang", node.name)
                return None
            if len(whole) > len(victims) and not fits_without(ssn, task, node, whole):
                # Whole gangs leave: a pod the preemptor wants near may be among them.
                log.log(
                    v(3), "Node <%s>: %s would not fit once whole gangs left", node.name, task.key
                )
                return None
            victims = whole
        for victim in sort_by_importance(victims):
            log.log(v(3), "Try to reclaim Task <%s> for Tasks <%s>", victim.key, task.key)
            node_stmt.evict(victim, "reclaim", task)
        try:
            node_stmt.pipeline(task, node.name)
        except StatementError:
            log.error("Failed to pipeline Task <%s> on Node <%s>", task.key, node.name)
            node_stmt.discard()
            return None
        return node_stmt


def _pipeline_in_room(ssn: Session, stmt: Statement, task: TaskInfo, nodes: list[NodeInfo]) -> bool:
    """Pipeline ``task`` on the first of ``nodes`` whose free room and predicates take it."""
    for node in nodes:
        if (
            task.init_resreq.less_equal(node.future_idle(), ZERO)
            and ssn.predicate(task, node) is None
        ):
            try:
                stmt.pipeline(task, node.name)
            except StatementError:
                continue
            return True
    return False


def _may_free_enough(
    ssn: Session, domain: Domain, wanted: Resource, accept: Callable[[TaskInfo], bool]
) -> bool:
    """A cheap upper bound before a trial: the domain's free room plus everything its
    reclaimable pods hold covers the gang's total request on every dimension it asks for."""
    room = Resource.empty()
    for name in domain.nodes:
        node = ssn.nodes.get(name)
        if node is None:
            continue
        room.add(node.future_idle())
        for task in node.tasks.values():
            if accept(task):
                room.add(task.resreq)
    return all(room.get(dim) >= wanted.get(dim) for dim in wanted.resource_names() if dim != "pods")


def _fits_once_gone(
    ssn: Session, members: list[TaskInfo], domain: Domain, victims: list[TaskInfo]
) -> bool:
    """Whether placement (``count_fitting``, as ``choose_domain`` judges) finds every member
    a place inside ``domain`` in the room left once ``victims`` are gone."""
    freed: dict[str, Resource] = {}
    for victim in victims:
        freed.setdefault(victim.node_name, Resource.empty()).add(victim.resreq)

    def room(node: NodeInfo) -> Resource:
        left = node.future_idle()
        extra = freed.get(node.name)
        if extra is not None:
            left.add(extra)
        return left

    return count_fitting(ssn, members, domain_nodes(ssn, domain), room) == len(members)


def _importance(victims: list[TaskInfo]) -> list[tuple[int, int]]:
    """The victims' (pod priority, job priority), most important first: of two sets of as
    many victims, the one that compares lower spares the more important pods."""
    return sorted(((t.pod_priority, t.priority) for t in victims), reverse=True)


def _search_on_copy(
    ssn: Session, task: TaskInfo, queue: QueueInfo, node: NodeInfo, candidates: list[TaskInfo]
) -> tuple[list[TaskInfo], str | None]:
    """``select_victims_on_node`` among ``candidates`` on a copy of ``node``."""
    uids = {t.uid for t in candidates}

    def allowed(preemptor: TaskInfo, tasks: list[TaskInfo]) -> list[TaskInfo]:
        return [t for t in tasks if t.uid in uids]

    try:
        copy = node.clone()
    except NodeError as exc:
        return [], str(exc)
    chosen, err = select_victims_on_node(
        ssn,
        ssn.new_cycle_state(task),
        task,
        queue,
        copy,
        lambda t: t.uid in uids,
        victims_fn=allowed,
        check_allocatable=False,
        require_fit=True,
        fewest=True,
    )
    if err is None and not chosen:
        err = "no victims chosen"
    return chosen, err


def _distinct_first(
    less: Callable[[QueueInfo, QueueInfo], bool],
) -> Callable[[QueueInfo, QueueInfo], bool]:
    """``less`` that answers a queue compared with itself at once. The pass pushes a queue
    back once per job it takes, so its heap holds the same queue thousands of times over
    and most comparisons are of a queue with itself: the plugins' chain would say "equal"
    (no order says a queue comes before itself), here without the walk."""

    def ordered(l: QueueInfo, r: QueueInfo) -> bool:
        return l is not r and less(l, r)

    return ordered


def _count_by_queue(ssn: Session, stmt: Statement) -> dict[str, int]:
    counts: dict[str, int] = {}
    for queue in _victim_queues(ssn, stmt):
        counts[queue] = counts.get(queue, 0) + 1
    return counts


def _victim_queues(ssn: Session, stmt: Statement) -> list[str]:
    """The queue of every eviction in ``stmt``, one entry per eviction."""
    queues: list[str] = []
    for op in stmt.operations:
        if op.op is Op.EVICT:
            job = ssn.jobs.get(op.task.job)
            queues.append(job.queue if job is not None else "")
    return queues
