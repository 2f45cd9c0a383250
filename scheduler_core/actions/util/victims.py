"""Victim selection shared by the preempt and reclaim actions and the extender's preempt verb.

Volcano keeps these in ``actions/utils/select_victims.go`` and ``util/scheduler_helper.go``.
Everything is sequential: Volcano evaluates predicates in 16 goroutines, which makes its node
order (and so its choices) non-deterministic; we keep its rules and give them a fixed order
instead (nodes by name, scores descending then name).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import ZERO, Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus, preemptable_status
from scheduler_core.framework.session import CycleState, Session
from scheduler_core.logutil import v

if TYPE_CHECKING:
    from scheduler_core.api.job import JobInfo

log = logging.getLogger("scheduler_core.actions.util.victims")

TaskFilter = Callable[[TaskInfo], bool]
VictimsHook = Callable[[TaskInfo, list[TaskInfo]], list[TaskInfo]]

# --- validation ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VictimShortfall:
    """Why a node cannot be freed enough: worded only when someone reads it. Reclaim and
    preempt ask this of tens of thousands of nodes a session and almost always only test
    for ``None``; formatting two resources for each answer was a tenth of a session."""

    requested: Resource
    future_idle: Resource

    def __str__(self) -> str:
        return (
            f"not enough resources: requested <{self.requested!r}>, "
            f"but future idle <{self.future_idle!r}>"
        )


def validate_victims(
    preemptor: TaskInfo, node: NodeInfo, victims: Sequence[TaskInfo]
) -> VictimShortfall | None:
    """``util.ValidateVictims``: can the node ever hold the preemptor if all of ``victims`` go?

    An empty list is allowed on purpose (Volcano dropped that check): a preemptor that
    already fits the node's future idle needs no eviction at all.
    """
    future_idle = node.future_idle()
    for victim in victims:
        future_idle.add(victim.resreq)
    if not preemptor.init_resreq.less_equal(future_idle, ZERO):
        return VictimShortfall(preemptor.init_resreq, future_idle)
    return None


def fits_without(
    ssn: Session, preemptor: TaskInfo, node: NodeInfo, victims: Sequence[TaskInfo]
) -> bool:
    """Whether ``preemptor`` fits ``node``'s future idle and passes every predicate there
    once ``victims`` have left (judged on a copy: the session's node is not touched). The
    last word on a plan: no eviction is made for a preemptor that would still not fit."""
    copy = node.copy_sharing_tasks()
    for victim in victims:
        copy.remove_task(victim)
    return (
        preemptor.init_resreq.less_equal(copy.future_idle(), ZERO)
        and ssn.predicate(preemptor, copy) is None
    )


# --- victim filters (which tasks on a node may be considered at all) ----------------------


def inter_job_filter(ssn: Session, preemptor: TaskInfo, preemptor_job: JobInfo) -> TaskFilter:
    """Preempt phase 1: a Bound/Running, preemptable task of ANOTHER job of the SAME queue.

    A best-effort preemptor may only displace best-effort tasks: it would otherwise evict
    a pod with guaranteed requests to run one without any.
    """

    def accept(task: TaskInfo) -> bool:
        if not _may_displace(preemptor, task):
            return False
        job = ssn.jobs.get(task.job)
        if job is None:
            return False
        return job.queue == preemptor_job.queue and task.job != preemptor.job

    return accept


def intra_job_filter(preemptor: TaskInfo) -> TaskFilter:
    """Preempt phase 2: a Bound/Running, preemptable task of the preemptor's own job."""

    def accept(task: TaskInfo) -> bool:
        return _may_displace(preemptor, task) and task.job == preemptor.job

    return accept


def _may_displace(preemptor: TaskInfo, task: TaskInfo) -> bool:
    """What both preempt phases ask first: the task is Bound/Running and preemptable, and a
    best-effort preemptor meets a best-effort task."""
    if not preemptable_status(task.status):
        return False
    if preemptor.best_effort and not task.best_effort:
        return False
    return task.preemptable


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


# --- one node -----------------------------------------------------------------------------


class NodeSimulation:
    """A preemptor's what-if view of one node: tasks are removed from and added back to a
    private node clone, and the plugins follow through the simulate hooks on a private
    cycle state, so the session itself never changes.

    ``fits`` is Volcano's three-part test: the queue may grow by the preemptor (simulated
    ``Allocatable``, skipped for reclaim), the request fits the node's future idle, and the
    predicates pass on the simulated node (our stand-in for ``SimulatePredicateFn``).
    """

    def __init__(
        self,
        ssn: Session,
        state: CycleState,
        preemptor: TaskInfo,
        queue: QueueInfo,
        node: NodeInfo,
        check_allocatable: bool = True,
    ) -> None:
        self.ssn = ssn
        self.state = state
        self.preemptor = preemptor
        self.queue = queue
        self.node = node
        self.check_allocatable = check_allocatable

    @classmethod
    def open(
        cls,
        ssn: Session,
        preemptor: TaskInfo,
        queue: QueueInfo,
        node: NodeInfo,
        check_allocatable: bool = True,
    ) -> NodeSimulation:
        """Clone ``node`` and a fresh cycle state (raises ``NodeError`` if the node's
        accounting cannot be rebuilt)."""
        return cls(
            ssn,
            ssn.new_cycle_state(preemptor),
            preemptor,
            queue,
            node.clone(),
            check_allocatable,
        )

    def fits(self) -> bool:
        if self.check_allocatable and not self.queue_allows():
            return False
        if not self.preemptor.init_resreq.less_equal(self.node.future_idle(), ZERO):
            return False
        return self.ssn.predicate(self.preemptor, self.node) is None

    def queue_allows(self) -> bool:
        """The plugins' simulated ``Allocatable`` on this what-if's cycle state."""
        return self.ssn.simulate_allocatable(self.state, self.queue, self.preemptor)

    def remove(self, task: TaskInfo) -> None:
        self.ssn.simulate_remove_task(self.state, self.preemptor, task, self.node)
        self.node.remove_task(task)

    def add(self, task: TaskInfo) -> None:
        self.ssn.simulate_add_task(self.state, self.preemptor, task, self.node)
        self.node.add_task(task)


def select_victims_on_node(
    ssn: Session,
    state: CycleState,
    preemptor: TaskInfo,
    queue: QueueInfo,
    node: NodeInfo,
    accept: TaskFilter,
    *,
    victims_fn: VictimsHook | None = None,
    check_allocatable: bool = True,
    require_fit: bool = False,
) -> tuple[list[TaskInfo], str | None]:
    """Volcano's ``SelectVictimsOnNode`` on a PRIVATE ``node`` clone and ``state``.

    Candidates are the node's tasks that ``accept`` takes and the plugins' victim hook
    (``ssn.preemptable`` unless ``victims_fn`` says otherwise) allows. They are removed
    lowest value first (``BuildVictimsPriorityQueue``) until the preemptor fits; then the
    removed ones are offered back most valuable first, and each one whose return still lets
    the preemptor fit is reprieved. What is left is a set from which no victim can be
    dropped. Returns ``(victims, None)`` or ``([], reason)``.

    Volcano only re-checks the predicates after removing every candidate, so a node where
    the queue or the resources still do not fit can come out with all candidates as
    victims; ``require_fit`` (used by the extender) turns that case into a failure.
    """
    hook = victims_fn if victims_fn is not None else ssn.preemptable
    sim = NodeSimulation(ssn, state, preemptor, queue, node, check_allocatable)
    preemptees = [task for task in node.tasks.values() if accept(task)]
    all_victims = hook(preemptor, preemptees)
    err = validate_victims(preemptor, node, all_victims)
    if err is not None:
        log.log(v(3), "No validated victims on Node <%s>: %s", node.name, err)
        return [], f"no validated victims on Node <{node.name}>: {err}"

    # Most important first, so that equal-value victims pop in a stable order.
    queue_of_victims = ssn.build_victims_priority_queue(sort_by_importance(all_victims), preemptor)
    potential: list[TaskInfo] = []
    while not queue_of_victims.empty():
        task = queue_of_victims.pop()
        potential.append(task)
        sim.remove(task)
        if sim.fits():
            log.log(
                v(3),
                "Pod %s/%s can be scheduled on node %s after preempt %s/%s, "
                "stop evicting more pods",
                preemptor.namespace,
                preemptor.name,
                node.name,
                task.namespace,
                task.name,
            )
            break
    if not potential:
        return [], "no preemption victims found for incoming pod"
    if ssn.predicate(preemptor, node) is not None:
        return [], (
            f"failed to predicate pod {preemptor.namespace}/{preemptor.name} on node {node.name}"
        )
    if require_fit and not sim.fits():
        return [], f"pod {preemptor.key} does not fit node {node.name} even without all victims"

    victims: list[TaskInfo] = []
    for task in reversed(potential):
        sim.add(task)
        if sim.fits():
            log.log(v(4), "Task <%s> reprieved on node <%s>", task.key, node.name)
            continue
        sim.remove(task)
        victims.append(task)
        log.log(v(3), "Pod %s is a potential preemption victim on node %s", task.key, node.name)
    return victims, None
