"""Topology-aware preemption: dry-run victim selection on candidate nodes, then pick one.

Volcano's ``enableTopologyAwarePreemption`` mode (kube-scheduler's DefaultPreemption
algorithm inside Volcano): from a random offset, dry-run ``select_victims_on_node`` on
private clones of nodes until enough candidates are found, then choose among them with
four tie-breaking levels. Volcano dry-runs in ``topologyAwarePreemptWorkerNum`` goroutines,
so which candidates it finds first is racy; we run the same loop sequentially (the worker
count is read but does not change the result) with a seeded ``random.Random`` for the
offset, so the same session always makes the same choice.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from scheduler_core.actions.victims import (
    TaskFilter,
    VictimsHook,
    parse_start_time,
    sort_by_importance,
    validate_victims,
)
from scheduler_core.api.node import NodeError, NodeInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import ZERO
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.session import CycleState, Session
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.actions.topology")

_MAX_INT32 = 2**31 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


# --- how many candidates ------------------------------------------------------------------


def calculate_num_candidates(
    num_nodes: int,
    min_candidate_nodes_percentage: int = 10,
    min_candidate_nodes_absolute: int = 1,
    max_candidate_nodes_absolute: int = 100,
) -> int:
    """``numNodes * percentage / 100`` (integer), raised to the absolute minimum, capped by
    the absolute maximum and by the number of nodes."""
    n = num_nodes * min_candidate_nodes_percentage // 100
    n = max(n, min_candidate_nodes_absolute)
    n = min(n, max_candidate_nodes_absolute)
    return min(n, num_nodes)


def get_offset_and_num_candidates(
    rng: random.Random,
    num_nodes: int,
    min_candidate_nodes_percentage: int = 10,
    min_candidate_nodes_absolute: int = 1,
    max_candidate_nodes_absolute: int = 100,
) -> tuple[int, int]:
    """A random starting node, so that successive preemptions spread over the cluster."""
    return rng.randrange(num_nodes), calculate_num_candidates(
        num_nodes,
        min_candidate_nodes_percentage,
        min_candidate_nodes_absolute,
        max_candidate_nodes_absolute,
    )


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
        if self.check_allocatable and not self.ssn.simulate_allocatable(
            self.state, self.queue, self.preemptor
        ):
            return False
        if not self.preemptor.init_resreq.less_equal(self.node.future_idle(), ZERO):
            return False
        return self.ssn.predicate(self.preemptor, self.node) is None

    def remove(self, task: TaskInfo) -> None:
        self.ssn.simulate_remove_task(self.state, self.preemptor, task, self.node)
        self.node.remove_task(task)

    def add(self, task: TaskInfo) -> None:
        self.ssn.simulate_add_task(self.state, self.preemptor, task, self.node)
        self.node.add_task(task)

    def is_minimal_valid_set(
        self, uids: Sequence[str], accept: TaskFilter, hook: VictimsHook
    ) -> bool:
        """True if evicting exactly these tasks is allowed (filter and plugin hook accept
        every one), makes the preemptor fit, and no single one of them could be spared."""
        tasks: list[TaskInfo] = []
        for uid in dict.fromkeys(uids):
            task = self.node.tasks.get(uid)
            if task is None or not accept(task):
                return False
            tasks.append(task)
        if not tasks:
            return False
        accepted = {t.uid for t in hook(self.preemptor, tasks)}
        if accepted != {t.uid for t in tasks}:
            return False
        for task in tasks:
            self.remove(task)
        if not self.fits():
            return False
        for task in sort_by_importance(tasks):
            self.add(task)
            spared = self.fits()
            self.remove(task)
            if spared:
                return False
        return True


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


# --- many nodes ---------------------------------------------------------------------------


@dataclass(slots=True)
class Candidate:
    """A node where preemption would work, with its victims most important first."""

    name: str
    victims: list[TaskInfo]


def dry_run_preemption(
    ssn: Session,
    preemptor: TaskInfo,
    queue: QueueInfo,
    nodes: Sequence[NodeInfo],
    offset: int,
    num_candidates: int,
    accept: TaskFilter,
    state: CycleState,
) -> tuple[list[Candidate], dict[str, str]]:
    """Nodes from ``offset`` on (wrapping), each on its own clone, until ``num_candidates``
    nodes with at least one victim were found. Returns the candidates and, per failed
    node, why."""
    candidates: list[Candidate] = []
    statuses: dict[str, str] = {}
    total = len(nodes)
    for i in range(total):
        node = nodes[(offset + i) % total]
        try:
            copy = node.clone()
        except NodeError as exc:
            statuses[node.name] = str(exc)
            continue
        victims, err = select_victims_on_node(ssn, state.clone(), preemptor, queue, copy, accept)
        if err is None and victims:
            candidates.append(Candidate(node.name, sort_by_importance(victims)))
            if len(candidates) >= num_candidates:
                break
            continue
        statuses[node.name] = err or f'expected at least one victim pod on node "{node.name}"'
    return candidates, statuses


def find_candidates(
    ssn: Session,
    preemptor: TaskInfo,
    accept: TaskFilter,
    nodes: Sequence[NodeInfo],
    rng: random.Random,
    min_candidate_nodes_percentage: int = 10,
    min_candidate_nodes_absolute: int = 1,
    max_candidate_nodes_absolute: int = 100,
) -> tuple[list[Candidate], dict[str, str]]:
    """Volcano's ``findCandidates``: offset and count, then the dry run."""
    if not nodes:
        log.log(
            v(3),
            "No nodes are eligible to preempt task %s/%s",
            preemptor.namespace,
            preemptor.name,
        )
        return [], {}
    job = ssn.jobs.get(preemptor.job)
    queue = ssn.queues.get(job.queue) if job is not None else None
    if queue is None:
        return [], {"": f"not found Job {preemptor.job} in Session"}
    offset, num_candidates = get_offset_and_num_candidates(
        rng,
        len(nodes),
        min_candidate_nodes_percentage,
        min_candidate_nodes_absolute,
        max_candidate_nodes_absolute,
    )
    state = ssn.new_cycle_state(preemptor)
    return dry_run_preemption(ssn, preemptor, queue, nodes, offset, num_candidates, accept, state)


# --- choosing one -------------------------------------------------------------------------


def earliest_start_of_most_important(victims: Sequence[TaskInfo], now: datetime) -> datetime:
    """``GetEarliestPodStartTime``: among the victims of the highest pod priority, the
    earliest start (a pod that never started counts as ``now``)."""
    top = max(t.pod_priority for t in victims)
    return min(parse_start_time(t.start_time, now) for t in victims if t.pod_priority == top)


def pick_one_node_for_preemption(
    nodes_to_victims: dict[str, list[TaskInfo]], now: datetime | None = None
) -> str | None:
    """Four levels, each keeping only the best-scoring nodes, stopping at a single winner:

    1. lowest priority of the most important victim (``victims[0]``: lists must be sorted
       most important first);
    2. lowest sum of victim priorities (each shifted by 2^31 so negatives behave);
    3. fewest victims;
    4. latest start among the most important victims (disturb the youngest work).

    Remaining ties go to the first node in the mapping's order. Volcano's comment also
    lists fewest PDB violations; its code does not implement it, nor do we.
    """
    if not nodes_to_victims:
        return None
    moment = now or datetime.now(UTC)

    def highest(node: str) -> int:
        return -nodes_to_victims[node][0].pod_priority

    def total(node: str) -> int:
        return -sum(t.pod_priority + _MAX_INT32 + 1 for t in nodes_to_victims[node])

    def count(node: str) -> int:
        return -len(nodes_to_victims[node])

    def latest(node: str) -> int:
        start = earliest_start_of_most_important(nodes_to_victims[node], moment)
        return (start - _EPOCH) // timedelta(microseconds=1) * 1000

    remaining = [node for node, victims in nodes_to_victims.items() if victims]
    if not remaining:
        return None
    for score in (highest, total, count, latest):
        best = max(score(node) for node in remaining)
        remaining = [node for node in remaining if score(node) == best]
        if len(remaining) == 1:
            return remaining[0]
    return remaining[0]


def select_candidate(
    candidates: Sequence[Candidate], now: datetime | None = None
) -> Candidate | None:
    """None for no candidate, the only one for one, else ``pick_one_node_for_preemption``."""
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates[0]
    by_name = {c.name: c for c in candidates}
    chosen = pick_one_node_for_preemption({c.name: c.victims for c in candidates}, now)
    return by_name.get(chosen or "", candidates[0])
