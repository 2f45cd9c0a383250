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

from scheduler_core.actions.util.victims import (
    TaskFilter,
    parse_start_time,
    select_victims_on_node,
    sort_by_importance,
)
from scheduler_core.api.errors import NodeError
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.queue import QueueInfo
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
