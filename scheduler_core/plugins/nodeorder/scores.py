"""kube-scheduler's node scores as nodeorder sums them, each formula written once, on arrays.

Per node (Volcano's ``NodeOrderFn``): least-requested, most-requested and balanced-resource
scores (each 0..100) and the raw sum of matching preferred node-affinity term weights. Across
nodes (``BatchNodeOrderFn``): taint-toleration, normalised over the candidate nodes.

Every formula takes one element per scored node (``ScoredNodes``): the batch hook passes a
session table's rows, the per-node path the nodes themselves (``GivenNodes``).

Requests are read from the model, not from pod specs: a node's requested amount is the sum
of its tasks' requests (``used + pipelined``), and kube-scheduler's non-zero defaults for a
pod that requests no CPU or memory (100m, 200Mi) are applied to the incoming pod only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scheduler_core.api.task import NodeSelectorRequirement, TaskInfo
from scheduler_core.plugins.util.node_table import EXACT_LIMIT, BoolArray, FloatArray, IntArray
from scheduler_core.plugins.util.scored_nodes import ScoredNodes
from scheduler_core.plugins.util.table_scoring import fits_exactly

MAX_NODE_SCORE = 100

#: kube-scheduler's requests for a container that sets none (``schedutil.DefaultMilliCPURequest``
#: and ``DefaultMemoryRequest``), used by least/most-requested.
DEFAULT_MILLI_CPU_REQUEST = 100.0
DEFAULT_MEMORY_REQUEST = 200.0 * 1024 * 1024

#: Volcano balances GPUs too, but only for pods that request them.
BALANCED_RESOURCES = ("cpu", "memory", "nvidia.com/gpu")

PreferredTerm = tuple[int, tuple[NodeSelectorRequirement, ...]]

#: Whole-number scores and amounts: int64 while every value is below ``EXACT_LIMIT``,
#: Python ints (exact at any size) in an object array beyond it.
WholeArray = npt.NDArray[np.int64] | npt.NDArray[np.object_]


@dataclass(frozen=True, slots=True)
class PodRequests:
    """What one pod asks for, as the scorers read it; computed once per pod, not per node.

    ``cpu``/``memory`` carry kube-scheduler's non-zero defaults (least/most-requested);
    ``balanced`` lists (resource, actual request) for balanced allocation, without extended
    resources the pod does not request.
    """

    cpu: float
    memory: float
    balanced: tuple[tuple[str, float], ...]
    best_effort: bool

    @classmethod
    def of(cls, task: TaskInfo) -> PodRequests:
        req = task.resreq
        balanced = tuple(
            (name, req.get(name))
            for name in BALANCED_RESOURCES
            if name in ("cpu", "memory") or req.get(name) != 0
        )
        return cls(
            cpu=req.milli_cpu or DEFAULT_MILLI_CPU_REQUEST,
            memory=req.memory or DEFAULT_MEMORY_REQUEST,
            balanced=balanced,
            best_effort=not any(amount for _, amount in balanced),
        )


# --- kube-scheduler's scores, each written once, on arrays --------------------------------
#
# Every formula takes one element per scored node. The batch hook passes a session table's
# rows; the per-node path passes the nodes themselves (``GivenNodes``), so logging a node's
# score or scoring a node outside the table runs this same code on a short array.
# Whole-number arithmetic is on int64 while every amount is below ``EXACT_LIMIT`` and on
# Python ints in object arrays beyond it: numpy applies the same operators to both, so one
# text serves both, and an amount too large for int64 is still scored to the unit.


def whole(amounts: FloatArray) -> WholeArray:
    """``amounts`` truncated toward zero, as Go's ``int64(float)`` and Python's ``int``
    do: int64 when every value is below ``EXACT_LIMIT`` (so ``* 100`` cannot overflow),
    else exact Python ints."""
    if len(amounts) == 0 or float(np.abs(amounts).max()) < EXACT_LIMIT:
        return amounts.astype(np.int64)
    return np.array([int(a) for a in amounts.tolist()], dtype=object)


def whole_values(values: Sequence[int]) -> WholeArray:
    """Python ints as an array, int64 when every value is below ``EXACT_LIMIT``."""
    if all(abs(value) < EXACT_LIMIT for value in values):
        return np.array(values, dtype=np.int64)
    return np.array(values, dtype=object)


def least_requested_scores(requested: WholeArray, capacity: WholeArray) -> WholeArray:
    """kube-scheduler's ``leastRequestedScore``: ``(capacity - requested) * 100 //
    capacity``; 0 where the capacity is 0 or the request exceeds it."""
    safe = np.where(capacity == 0, 1, capacity)
    scores: WholeArray = (capacity - requested) * MAX_NODE_SCORE // safe
    scores[(capacity == 0) | (requested > capacity)] = 0
    return scores


def most_requested_scores(requested: WholeArray, capacity: WholeArray) -> WholeArray:
    """kube-scheduler's ``mostRequestedScore``: ``min(requested, capacity) * 100 //
    capacity`` (an overcommitted node scores as a full one); 0 where the capacity is 0."""
    safe = np.where(capacity == 0, 1, capacity)
    scores: WholeArray = np.minimum(requested, capacity) * MAX_NODE_SCORE // safe
    scores[capacity == 0] = 0
    return scores


def mean_resource_scores(
    pairs: Sequence[tuple[WholeArray, WholeArray]],
    scorer: Callable[[WholeArray, WholeArray], WholeArray],
) -> WholeArray:
    """Integer mean of ``scorer(requested, capacity)`` per node over the resources the node
    has: a resource with capacity 0 neither scores nor counts (cpu and memory weigh the
    same, as in Volcano's setup); a node with none scores 0. ``pairs`` is not empty."""
    total: WholeArray = np.zeros(len(pairs[0][0]), dtype=np.int64)
    counted = np.zeros(len(pairs[0][0]), dtype=np.int64)
    for requested, capacity in pairs:
        total = total + scorer(requested, capacity)  # 0 where capacity is 0
        counted += capacity != 0
    scores: WholeArray = np.where(counted > 0, total // np.maximum(counted, 1), 0)
    return scores


def cpu_memory_requests(
    pod: PodRequests, nodes: ScoredNodes
) -> list[tuple[WholeArray, WholeArray]]:
    """(requested, capacity) per node for cpu and memory: the node's tasks (pipelined ones
    included) plus this pod, truncated to whole units as kube-scheduler's int64 amounts."""
    pairs = []
    for name, request in (("cpu", pod.cpu), ("memory", pod.memory)):
        amounts = nodes.amounts(name)
        requested = (amounts.used + amounts.pipelined) + request
        pairs.append((whole(requested), whole(amounts.allocatable)))
    return pairs


def balanced_scores(fractions: Sequence[FloatArray], present: Sequence[BoolArray]) -> IntArray:
    """kube-scheduler's balanced allocation per node: ``(1 - std) * 100`` of the
    utilisation fractions (each capped at 1) of the resources the node has (``present``).

    Two resources: half their difference; more: the population standard deviation; fewer:
    std 0. Floats are added in the resources' order, each square written as a product (a
    product rounds once, where ``** 2`` goes through libm's pow), as kube-scheduler writes
    it. ``fractions`` is not empty.
    """
    count = len(fractions[0])
    capped = [np.minimum(f, 1.0) for f in fractions]
    # None for a resource every node has (cpu and memory, usually): nothing to mask
    masks = [None if has.all() else has for has in present]
    counted = np.full(count, sum(has is None for has in masks), dtype=np.int64)
    for has in masks:
        if has is not None:
            counted += has

    def where_present(i: int, other: FloatArray | float) -> FloatArray:
        has = masks[i]
        return capped[i] if has is None else np.where(has, capped[i], other)

    # two resources: whichever two the node has, the first and the last in order
    first = capped[-1]
    for i in reversed(range(len(capped) - 1)):
        first = where_present(i, first)
    last = capped[0]
    for i in range(1, len(capped)):
        last = where_present(i, last)
    std: FloatArray = np.where(counted == 2, np.abs((first - last) / 2), 0.0)
    if len(capped) > 2 and bool((counted > 2).any()):
        # 0.0 in place of a resource the node lacks changes no rounding of the sums
        total: FloatArray = np.zeros(count, dtype=np.float64)
        for i in range(len(capped)):
            total = total + where_present(i, 0.0)
        divisor = np.maximum(counted, 1)
        mean = total / divisor
        squares: FloatArray = np.zeros(count, dtype=np.float64)
        for c, has in zip(capped, masks, strict=True):
            square = (c - mean) * (c - mean)
            squares = squares + (square if has is None else np.where(has, square, 0.0))
        std = np.where(counted > 2, np.sqrt(squares / divisor), std)
    scores: IntArray = ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    return scores


def balanced_resource_scores(pod: PodRequests, nodes: ScoredNodes) -> IntArray:
    """Balanced allocation on actual requests (``used + pipelined`` plus the pod's) over
    allocatable; a resource a node has none of is skipped on that node, and a pod
    requesting none of the balanced resources scores 0 (kube-scheduler skips best-effort
    pods)."""
    if pod.best_effort:
        return np.zeros(nodes.count, dtype=np.int64)
    fractions: list[FloatArray] = []
    present: list[BoolArray] = []
    for name, request in pod.balanced:
        amounts = nodes.amounts(name)
        allocatable = amounts.allocatable
        has = allocatable != 0
        requested = (amounts.used + amounts.pipelined) + request
        fractions.append(requested / np.where(has, allocatable, 1.0))
        present.append(has)
    return balanced_scores(fractions, present)


# --- node affinity (preferred terms) ------------------------------------------------------


def preferred_terms(task: TaskInfo) -> tuple[PreferredTerm, ...]:
    """The task's preferred node-affinity terms as (weight, requirements)."""
    return task.preferred_affinity


def node_affinity_scores(terms: Sequence[PreferredTerm], nodes: ScoredNodes) -> WholeArray:
    """Per node, the sum of the weights of the preferred terms it matches; zero-weight or
    empty terms never count. Not normalised across nodes: Volcano adds the raw sum."""
    exact = fits_exactly(sum(abs(weight) for weight, _ in terms))
    scores: WholeArray = np.zeros(nodes.count, dtype=np.int64 if exact else object)
    for weight, requirements in terms:
        if weight == 0 or not requirements:
            continue
        scores += np.multiply(nodes.term_mask(requirements), weight, dtype=scores.dtype)
    return scores


# --- taint toleration (across nodes) ------------------------------------------------------


def normalize_reverse_scores(raw: WholeArray) -> WholeArray:
    """kube-scheduler's ``DefaultNormalizeScore(MaxNodeScore, reverse=true)``: the highest
    raw score gets 0, a raw 0 gets 100 (everything 100 when nothing scores)."""
    top = raw.max() if len(raw) else 0
    if top == 0:
        return np.full(len(raw), MAX_NODE_SCORE, dtype=np.int64)
    scores: WholeArray = MAX_NODE_SCORE - MAX_NODE_SCORE * raw // top
    return scores
