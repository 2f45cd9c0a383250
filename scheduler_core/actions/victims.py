"""Victim selection shared by preempt, reclaim and the extender's preempt verb.

Volcano keeps these in ``actions/utils`` and ``util/scheduler_helper.go``; here they sit
with the actions that use them. Everything is sequential: Volcano evaluates predicates in
16 goroutines, which makes its node order (and so its choices) non-deterministic; we keep
its rules and give them a fixed order instead (nodes by name, scores descending then name).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from scheduler_core.api.node import NodeError, NodeInfo
from scheduler_core.api.pdb import PodDisruptionBudget
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import ZERO
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus, preemptable_status
from scheduler_core.framework.fit import FitError
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v

if TYPE_CHECKING:
    from scheduler_core.api.job import JobInfo

log = logging.getLogger("scheduler_core.actions.victims")

TaskFilter = Callable[[TaskInfo], bool]
VictimsHook = Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]
NodePredicate = Callable[[TaskInfo, NodeInfo], FitError | None]

#: The argument both actions read (Volcano's ``conf.EnablePredicateErrCacheKey``).
PREDICATE_ERROR_CACHE_KEY = "predicateErrorCacheEnable"


# --- validation ---------------------------------------------------------------------------


def validate_victims(
    preemptor: TaskInfo, node: NodeInfo, victims: Sequence[TaskInfo]
) -> str | None:
    """``util.ValidateVictims``: can the node ever hold the preemptor if all of ``victims`` go?

    An empty list is allowed on purpose (Volcano dropped that check): a preemptor that
    already fits the node's future idle needs no eviction at all.
    """
    future_idle = node.future_idle()
    for victim in victims:
        future_idle.add(victim.resreq)
    if not preemptor.init_resreq.less_equal(future_idle, ZERO):
        return (
            f"not enough resources: requested <{preemptor.init_resreq!r}>, "
            f"but future idle <{future_idle!r}>"
        )
    return None


# --- victim filters (which tasks on a node may be considered at all) ----------------------


def inter_job_filter(ssn: Session, preemptor: TaskInfo, preemptor_job: JobInfo) -> TaskFilter:
    """Preempt phase 1: a Bound/Running, preemptable task of ANOTHER job of the SAME queue.

    A best-effort preemptor may only displace best-effort tasks: it would otherwise evict
    a pod with guaranteed requests to run one without any.
    """

    def accept(task: TaskInfo) -> bool:
        if not preemptable_status(task.status):
            return False
        if preemptor.best_effort and not task.best_effort:
            return False
        if not task.preemptable:
            return False
        job = ssn.jobs.get(task.job)
        if job is None:
            return False
        return job.queue == preemptor_job.queue and task.job != preemptor.job

    return accept


def intra_job_filter(preemptor: TaskInfo) -> TaskFilter:
    """Preempt phase 2: a Bound/Running, preemptable task of the preemptor's own job."""

    def accept(task: TaskInfo) -> bool:
        if not preemptable_status(task.status):
            return False
        if preemptor.best_effort and not task.best_effort:
            return False
        if not task.preemptable:
            return False
        return task.job == preemptor.job

    return accept


def reclaimee_filter(ssn: Session, reclaimer_job: JobInfo) -> TaskFilter:
    """Reclaim's four conditions: Running (not merely Bound), preemptable, in ANOTHER queue,
    and that queue lends its resources (``reclaimable``)."""

    def accept(task: TaskInfo) -> bool:
        if task.status != TaskStatus.RUNNING or not task.preemptable:
            return False
        job = ssn.jobs.get(task.job)
        if job is None or job.queue == reclaimer_job.queue:
            return False
        queue = ssn.queues.get(job.queue)
        return queue is not None and queue.reclaimable()

    return accept


# --- ordering -----------------------------------------------------------------------------


def parse_start_time(text: str, now: datetime) -> datetime:
    """A pod's ``status.startTime``; a pod that has not started counts as starting ``now``
    (kube-scheduler's ``GetPodStartTime``)."""
    if not text:
        return now
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return now
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def sort_by_importance(tasks: Sequence[TaskInfo], now: datetime | None = None) -> list[TaskInfo]:
    """Most important first (kube-scheduler's ``MoreImportantPod``): higher pod priority, then
    the one that started earlier. The order kube-scheduler expects victim lists in."""
    moment = now or datetime.now(UTC)
    return sorted(tasks, key=lambda t: (-t.pod_priority, parse_start_time(t.start_time, moment)))


def sort_nodes_by_score(nodes: Sequence[NodeInfo], scores: dict[str, float]) -> list[NodeInfo]:
    """Best score first; equal scores by node name so the walk is reproducible."""
    return sorted(nodes, key=lambda n: (-scores.get(n.name, 0.0), n.name))


# --- node pre-filtering -------------------------------------------------------------------


def calculate_num_feasible_nodes_to_find(
    num_all_nodes: int,
    percentage_of_nodes_to_find: int = 0,
    min_nodes_to_find: int = 100,
    min_percentage_of_nodes_to_find: int = 5,
) -> int:
    """``CalculateNumOfFeasibleNodesToFind``: small clusters are searched whole; large ones
    until an adaptive share (50% minus 1% per 125 nodes, at least 5%) of nodes passed."""
    if num_all_nodes <= min_nodes_to_find or percentage_of_nodes_to_find >= 100:
        return num_all_nodes
    percentage = percentage_of_nodes_to_find
    if percentage <= 0:
        percentage = max(min_percentage_of_nodes_to_find, 50 - num_all_nodes // 125)
    return max(num_all_nodes * percentage // 100, min_nodes_to_find)


@dataclass
class PredicateHelper:
    """Volcano's ``PredicateHelper`` without the goroutines.

    Nodes are checked in the order given, starting where the previous call stopped, until
    enough feasible nodes were found; a predicate error is cached per ``job/role`` (tasks
    of one role share their constraints) when the task has a role and the cache is on.
    """

    enable_error_cache: bool = True
    percentage_of_nodes_to_find: int = 0
    _last_index: int = 0
    _errors: dict[str, dict[str, FitError]] = field(default_factory=dict)

    def predicate_nodes(
        self, task: TaskInfo, nodes: Sequence[NodeInfo], predicate: NodePredicate
    ) -> tuple[list[NodeInfo], dict[str, FitError]]:
        total = len(nodes)
        errors: dict[str, FitError] = {}
        if total == 0:
            return [], errors
        wanted = calculate_num_feasible_nodes_to_find(total, self.percentage_of_nodes_to_find)
        group = f"{task.job}/{task.role}" if task.role else ""
        cached = self._errors.get(group) if group else None
        found: list[NodeInfo] = []
        processed = 0
        for i in range(total):
            if len(found) >= wanted:
                break
            node = nodes[(self._last_index + i) % total]
            processed += 1
            if self.enable_error_cache and cached is not None and node.name in cached:
                errors[node.name] = cached[node.name]
                continue
            err = predicate(task, node)
            if err is not None:
                if self.enable_error_cache and group:
                    self._errors.setdefault(group, {})[node.name] = err
                errors[node.name] = err
                continue
            found.append(node)
        self._last_index = (self._last_index + processed) % total
        return found, errors


# --- PDB accounting -----------------------------------------------------------------------


def count_pdb_violations(pdbs: Sequence[PodDisruptionBudget], victims: Sequence[TaskInfo]) -> int:
    """How many victims would break a PodDisruptionBudget, counted as kube-scheduler does
    (``filterPodsWithPDBViolation``): each matching budget's allowance is spent victim by
    victim in the order given; a pod without labels, or a budget with an empty selector,
    matches nothing there."""
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violations = 0
    for victim in victims:
        if not victim.labels:
            continue
        violated = False
        for i, pdb in enumerate(pdbs):
            if not pdb.match_labels and not pdb.match_expressions:
                continue
            if not pdb.matches(victim.namespace, victim.labels):
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                violated = True
        if violated:
            violations += 1
    return violations


# --- the extender's preempt verb ----------------------------------------------------------


@dataclass(slots=True)
class VictimChoice:
    """The engine's victim set for one node: most important victim first, as
    kube-scheduler's ``pickOneNodeForPreemption`` expects."""

    victims: list[TaskInfo]
    num_pdb_violations: int
    mode: Literal["preempt", "reclaim"]


def select_victims_for_node(
    ssn: Session, preemptor: TaskInfo, node: NodeInfo, proposed_uids: list[str] | None
) -> VictimChoice | None:
    """The smallest valid victim set on ``node`` for a pending ``preemptor``, or None.

    Same-queue preempt rules are tried first, then (only when the preemptor's queue is not
    overused and may grow by this task) cross-queue reclaim rules. If kube-scheduler
    proposed victims (``proposed_uids``) and they already form a valid set that cannot
    shrink, they are kept, so both schedulers agree whenever the queue rules allow it;
    otherwise the engine's own set (remove lowest-value victims until the preemptor fits,
    then reprieve the most important ones) is returned. A node where the preemptor fits
    without any eviction gets None: there is nothing to preempt there.

    The session is not changed: all simulation runs on a clone of the node and of the
    plugins' cycle state.
    """
    job = ssn.jobs.get(preemptor.job)
    queue = ssn.queues.get(job.queue) if job is not None else None
    if job is None or queue is None:
        log.log(v(4), "Task <%s> has no job or queue in the session: no victims", preemptor.key)
        return None
    if preemptor.preemption_policy == "Never":
        return None
    if ssn.pre_predicate(preemptor) is not None:
        return None
    if ssn.predicate_for_preempt(preemptor, node) is not None:
        return None

    choice = _choose_on_node(
        ssn,
        preemptor,
        queue,
        node,
        proposed_uids,
        inter_job_filter(ssn, preemptor, job),
        ssn.preemptable,
        "preempt",
    )
    if choice is not None:
        return choice
    if ssn.overused(queue) or not ssn.preemptive(queue, [preemptor]):
        return None
    return _choose_on_node(
        ssn,
        preemptor,
        queue,
        node,
        proposed_uids,
        reclaimee_filter(ssn, job),
        ssn.reclaimable,
        "reclaim",
    )


def _choose_on_node(
    ssn: Session,
    preemptor: TaskInfo,
    queue: QueueInfo,
    node: NodeInfo,
    proposed_uids: list[str] | None,
    accept: TaskFilter,
    hook: VictimsHook,
    mode: Literal["preempt", "reclaim"],
) -> VictimChoice | None:
    # topology imports this module; importing it here keeps the two files acyclic.
    from scheduler_core.actions.topology import NodeSimulation, select_victims_on_node

    # Reclaim does not consult the preemptor's queue allocatable (§12): taking from
    # other queues cannot change it, and Preemptive already vouched for the queue.
    check_allocatable = mode == "preempt"
    chosen: list[TaskInfo] | None = None
    if proposed_uids:
        try:
            sim = NodeSimulation.open(ssn, preemptor, queue, node, check_allocatable)
        except NodeError:
            return None
        if sim.is_minimal_valid_set(proposed_uids, accept, hook):
            chosen = [node.tasks[uid] for uid in dict.fromkeys(proposed_uids)]
    if chosen is None:
        try:
            copy = node.clone()
        except NodeError:
            return None
        victims, err = select_victims_on_node(
            ssn,
            ssn.new_cycle_state(preemptor),
            preemptor,
            queue,
            copy,
            accept,
            victims_fn=hook,
            check_allocatable=check_allocatable,
            require_fit=True,
        )
        if err is not None or not victims:
            return None
        chosen = [node.tasks[t.uid] for t in victims if t.uid in node.tasks]
    ordered = sort_by_importance(chosen)
    return VictimChoice(ordered, count_pdb_violations(ssn.snapshot.pdbs, ordered), mode)
