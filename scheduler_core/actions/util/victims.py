"""Victim selection shared by the preempt and reclaim actions and the extender's preempt verb.

Volcano keeps these in ``actions/utils/select_victims.go`` and ``util/scheduler_helper.go``.
Everything is sequential: Volcano evaluates predicates in 16 goroutines, which makes its node
order (and so its choices) non-deterministic; we keep its rules and give them a fixed order
instead (nodes by name, scores descending then name).
"""

from __future__ import annotations

import logging
from bisect import insort
from collections.abc import Callable, Iterator, Sequence
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

#: How many candidate sets the fewest-victims search may simulate on one node (each is a
#: full predicate check). Past it the removal-and-reprieve set stands: minimal, if not
#: proven fewest. A node with up to seven candidates is always searched whole (at most
#: 2**7 - 2 sets are smaller than the set found).
FEWEST_VICTIMS_CHECKS = 256
#: How many candidate sets it may look at in all, most of them ruled out by arithmetic on
#: the freed resources alone: this bounds the search's time where such sets abound.
FEWEST_VICTIMS_STEPS = 16 * FEWEST_VICTIMS_CHECKS


@dataclass(slots=True)
class SearchBudget:
    """Simulations the fewest-victims searches of one caller may still run, across nodes:
    the preempt verb asks about up to a hundred nodes and must answer within milliseconds,
    so its searches share one budget (each node still at most ``FEWEST_VICTIMS_CHECKS``)."""

    checks: int


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


def eviction_order(
    ssn: Session, victims: Sequence[TaskInfo], preemptor: TaskInfo
) -> list[TaskInfo]:
    """``victims`` lowest value first: the pop order of the plugins' victim priority queue
    (``BuildVictimsPriorityQueue``), fed most important first so equal values keep a
    stable order. The order ``select_victims_on_node`` removes candidates in."""
    queue = ssn.build_victims_priority_queue(sort_by_importance(victims), preemptor)
    ordered: list[TaskInfo] = []
    while not queue.empty():
        ordered.append(queue.pop())
    return ordered


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
    fewest: bool = False,
    fewest_checks: int = FEWEST_VICTIMS_CHECKS,
    fewest_budget: SearchBudget | None = None,
) -> tuple[list[TaskInfo], str | None]:
    """Volcano's ``SelectVictimsOnNode`` on a PRIVATE ``node`` clone and ``state``.

    Candidates are the node's tasks that ``accept`` takes and the plugins' victim hook
    (``ssn.preemptable`` unless ``victims_fn`` says otherwise) allows. They are removed
    lowest value first (``BuildVictimsPriorityQueue``) until the preemptor fits; then the
    removed ones are offered back most valuable first, and each one whose return still lets
    the preemptor fit is reprieved. What is left is a set from which no victim can be
    dropped. Returns ``(victims, None)`` or ``([], reason)``; on success the clone is left
    without the victims.

    Volcano only re-checks the predicates after removing every candidate, so a node where
    the queue or the resources still do not fit can come out with all candidates as
    victims; ``require_fit`` (used by the extender) turns that case into a failure.

    A set no victim can be dropped from may still be larger than needed (two cheap pods
    removed first where one valuable pod alone would do). ``fewest`` (the live loop's
    minimal victims and the extender, never Volcano's own paths) then looks for a set with
    fewer victims among all candidates, within ``fewest_checks`` simulations (see
    ``FewestVictims``). Searches that share ``fewest_budget`` spend
    its simulations between them.
    """
    hook = victims_fn if victims_fn is not None else ssn.preemptable
    sim = NodeSimulation(ssn, state, preemptor, queue, node, check_allocatable)
    preemptees = [task for task in node.tasks.values() if accept(task)]
    all_victims = hook(preemptor, preemptees)
    err = validate_victims(preemptor, node, all_victims)
    if err is not None:
        log.log(v(3), "No validated victims on Node <%s>: %s", node.name, err)
        return [], f"no validated victims on Node <{node.name}>: {err}"

    # What the node offers before any removal: the fewest search's arithmetic starts here.
    untouched = node.future_idle() if fewest else None
    # Most important first, so that equal-value victims pop in a stable order.
    queue_of_victims = ssn.build_victims_priority_queue(sort_by_importance(all_victims), preemptor)
    potential: list[TaskInfo] = []
    fitted = False
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
            fitted = True
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
    if fewest and fitted and len(victims) > 1 and untouched is not None:
        # The whole lowest-value-first order: what the removal took, then what it left.
        order = list(potential)
        while not queue_of_victims.empty():
            order.append(queue_of_victims.pop())
        checks = (
            fewest_checks if fewest_budget is None else min(fewest_checks, fewest_budget.checks)
        )
        search = FewestVictims(sim, order, untouched, checks)
        victims = search.search(victims)
        if fewest_budget is not None:
            fewest_budget.checks -= checks - search.checks_left
    return victims, None


class FewestVictims:
    """The smallest victim set on one node, when it is smaller than the removal-and-reprieve
    set found first: candidate sets of one victim, then two, and so on below that set's
    size, each tried on the same ``NodeSimulation`` (its node and its plugins' cycle state)
    with the same ``fits``. The first set that fits wins.

    Within one size, sets come in colex order over the candidates' lowest-value-first order:
    the set whose most valuable victim is the least valuable comes first, ties broken by the
    next most valuable, and so on. This is the order the reprieve itself honours (it spares
    the most valuable victim it can, then the next), so the search agrees with it on what
    "lowest value" means: among the sets of one size that fit, the one picked spares the
    more valuable pods, not the one that happens to take the cheapest pod first.

    Only the resources are pruned on: ``fits`` asks the node's future idle to hold the
    preemptor's request, and removing a task adds a fixed amount to it whatever else is
    removed, so a set whose freed amounts cannot cover the request, even with the largest
    remaining candidates added per dimension, cannot fit. The predicates get no such
    shortcut: removing a pod lifts an anti-affinity or frees a host port, but it can also
    take away the pod the preemptor's required pod affinity needs, so no predicate is
    assumed to only gain from removals and every set the arithmetic allows is simulated.
    (Amounts are whole numbers: sums are exact in any order.)

    The simulation is moved between sets by removing and adding tasks, removals first so no
    add needs room the node has not got, and is always left with exactly the answered set
    removed.
    """

    def __init__(
        self, sim: NodeSimulation, order: Sequence[TaskInfo], untouched: Resource, checks: int
    ) -> None:
        self.sim = sim
        self.order = list(order)
        self.checks_left = checks
        self.steps_left = FEWEST_VICTIMS_STEPS
        request = sim.preemptor.init_resreq
        self.request = request
        self.scalar_names: tuple[str, ...] = tuple(request.scalars) if request.scalars else ()
        self.base = self._vector(untouched)
        self.gains = [self._gain(task) for task in self.order]
        self.removed: set[int] = set()
        #: ``best[m][j]``: per dimension, the sum of the ``j`` largest gains among the first
        #: ``m`` candidates (filled by ``search`` up to the sizes it needs).
        self.best: list[list[tuple[float, ...]]] = []

    def search(self, found: Sequence[TaskInfo]) -> list[TaskInfo]:
        """``found`` (removed from the simulation now) or a set with fewer victims, most
        valuable first; the simulation ends without exactly the returned victims."""
        index = {task.uid: i for i, task in enumerate(self.order)}
        self.removed = {index[task.uid] for task in found}
        smallest = self._smallest_size(len(found))
        if smallest >= len(found):
            return list(found)  # no fewer candidates free enough, whichever they are
        self._fill_best(len(found) - 2)
        node, preemptor = self.sim.node, self.sim.preemptor
        try:
            for size in range(smallest, len(found)):
                for subset in self._subsets(size, len(self.order), self._zero()):
                    if self.checks_left <= 0:
                        raise _SpentError
                    self.checks_left -= 1
                    if self._try(subset):
                        chosen = [self.order[i] for i in sorted(subset, reverse=True)]
                        log.log(
                            v(3),
                            "Fewer victims on node <%s> for <%s>: %d instead of %d (%s)",
                            node.name,
                            preemptor.key,
                            len(chosen),
                            len(found),
                            ", ".join(t.key for t in chosen),
                        )
                        return chosen
        except _SpentError:
            log.log(
                v(4),
                "Victims on node <%s> for <%s> are minimal but not proven fewest: "
                "search budget spent, keeping %d",
                node.name,
                preemptor.key,
                len(found),
            )
        self._move_to({index[task.uid] for task in found})
        return list(found)

    # --- simulation ---------------------------------------------------------------------

    def _try(self, subset: tuple[int, ...]) -> bool:
        self._move_to(set(subset))
        return self.sim.fits()

    def _move_to(self, target: set[int]) -> None:
        """From the candidates removed now to ``target`` removed: removals first, both in
        the lowest-value-first order so the same move always makes the same calls."""
        sim, order, current = self.sim, self.order, self.removed
        for i in sorted(target - current):
            sim.remove(order[i])
        for i in sorted(current - target):
            sim.add(order[i])
        self.removed = target

    # --- arithmetic on the freed resources ----------------------------------------------

    def _vector(self, res: Resource) -> tuple[float, ...]:
        return (res.milli_cpu, res.memory, *(res.get(n) for n in self.scalar_names))

    def _zero(self) -> tuple[float, ...]:
        return (0.0,) * (2 + len(self.scalar_names))

    def _gain(self, task: TaskInfo) -> tuple[float, ...]:
        """What removing ``task`` adds to the node's future idle (``NodeInfo.remove_task``):
        its request, except for a releasing task, whose request already counts there."""
        status = self.sim.node.recorded_status.get(task.uid, task.status)
        if status == TaskStatus.RELEASING:
            return self._zero()
        return self._vector(task.resreq)

    def _covers(self, gain: tuple[float, ...]) -> bool:
        """Whether the request fits the untouched future idle plus ``gain``, compared as
        ``fits`` compares them."""
        total = [b + g for b, g in zip(self.base, gain, strict=True)]
        scalars = dict(zip(self.scalar_names, total[2:], strict=True)) or None
        return self.request.less_equal(Resource(total[0], total[1], scalars), ZERO)

    def _smallest_size(self, below: int) -> int:
        """The fewest candidates that might free enough: the first size whose largest gains,
        taken per dimension, cover the request (``below`` when none under it does). Where
        victims are alike, as they often are, this alone settles the search."""
        dims = len(self.base)
        ranked = [sorted((g[d] for g in self.gains), reverse=True) for d in range(dims)]
        total = list(self._zero())
        for size in range(1, below):
            for d in range(dims):
                total[d] += ranked[d][size - 1]
            if self._covers(tuple(total)):
                return size
        return below

    def _fill_best(self, most: int) -> None:
        """``best[m][j]`` for every ``m`` and ``j`` up to ``most``: a bound per dimension on
        what any ``j`` of the first ``m`` candidates can free together."""
        dims = len(self.base)
        most = max(most, 0)
        ranked: list[list[float]] = [[] for _ in range(dims)]  # ascending, per dimension
        self.best = []
        for m in range(len(self.order) + 1):
            columns: list[list[float]] = []
            for d in range(dims):
                sums = [0.0]
                for amount in reversed(ranked[d][-most:] if most else []):
                    sums.append(sums[-1] + amount)
                sums += [sums[-1]] * (most + 1 - len(sums))  # fewer than j: all of them
                columns.append(sums)
            self.best.append([tuple(col[j] for col in columns) for j in range(most + 1)])
            if m < len(self.order):
                for d in range(dims):
                    insort(ranked[d], self.gains[m][d])

    def _subsets(self, size: int, limit: int, gain: tuple[float, ...]) -> Iterator[tuple[int, ...]]:
        """Sets of ``size`` indices below ``limit`` in colex order (by their largest index,
        then the next), each with ``gain`` plus its own gains covering the request."""
        if size == 0:
            yield ()
            return
        for top in range(size - 1, limit):
            if self.steps_left <= 0:
                raise _SpentError
            self.steps_left -= 1
            total = tuple(a + b for a, b in zip(gain, self.gains[top], strict=True))
            optimistic = tuple(a + b for a, b in zip(total, self.best[top][size - 1], strict=True))
            if not self._covers(optimistic):
                continue
            for rest in self._subsets(size - 1, top, total):
                yield (*rest, top)


class _SpentError(Exception):
    """The fewest search ran out of its budget."""
