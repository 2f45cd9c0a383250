"""nodeorder: kube-scheduler's node scores, weighted and summed as Volcano's plugin does.

Per node (Volcano's ``NodeOrderFn``): least-requested, most-requested and balanced-resource
scores (each 0..100) and the raw sum of matching preferred node-affinity term weights, each
times its weight. Across nodes (``BatchNodeOrderFn``): taint-toleration, normalised over the
candidate nodes (nodes with fewer untolerated ``PreferNoSchedule`` taints score higher).

Both are registered as one batch hook computed with numpy over the session's
``NodeTable`` (5,000 nodes in Python cost ~30 ms a pod, over the extender's latency budget).
Each formula is written once, on arrays (one element per node); the batch hook runs it on
the table's rows and sums the weighted scores as float64 arrays. The per-node path runs the
same formulas on arrays read from the nodes it is given and sums each node's scores as
Python numbers: it serves at V(4) (to log per node), for nodes the table does not hold, and
when a score times its weight might not be exact in int64.

Requests are read from the model, not from pod specs: a node's requested amount is the sum
of its tasks' requests (``used + pipelined``), and kube-scheduler's non-zero defaults for a
pod that requests no CPU or memory (100m, 200Mi) are applied to the incoming pod only.

Across nodes too: inter-pod affinity (``podaffinity.weight``, ``plugins/util/pod_affinity_
score.py``) and topology spread (``podtopologyspread.weight``, ``plugins/util/spread_score.
py``), each 0..100 normalised over the candidates, added to either path's sums; a pod with
no such terms (and, for affinity, a session where no placed pod has any) costs nothing.

Not built (no data in the model): image locality.

"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import NodeSelectorRequirement, TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.hooks import BATCH_NODE_ORDER
from scheduler_core.framework.node_scores import NodeScoreArray
from scheduler_core.framework.registry import FollowStep, Plugin, UsageChange, register_plugin
from scheduler_core.framework.session import EventHandler, Session
from scheduler_core.logutil import v
from scheduler_core.plugins.util.node_table import (
    EXACT_LIMIT,
    BoolArray,
    FloatArray,
    IntArray,
    NodeTable,
    follow_nodes,
    intolerable_prefer_no_schedule,
)
from scheduler_core.plugins.util.pod_affinity_score import (
    normalized_scores,
    scores_others,
    topology_scores,
)
from scheduler_core.plugins.util.scored_nodes import (
    GivenNodes,
    ScoredNodes,
    TableRows,
    node_matches_term,
)
from scheduler_core.plugins.util.short_lists import SHORT_LIST_NODES
from scheduler_core.plugins.util.spread_score import soft_constraints, spread_scores

log = logging.getLogger("scheduler_core.plugins.nodeorder")

MAX_NODE_SCORE = 100

#: kube-scheduler's requests for a container that sets none (``schedutil.DefaultMilliCPURequest``
#: and ``DefaultMemoryRequest``), used by least/most-requested.
DEFAULT_MILLI_CPU_REQUEST = 100.0
DEFAULT_MEMORY_REQUEST = 200.0 * 1024 * 1024

LEAST_REQUESTED_WEIGHT = "leastrequested.weight"
MOST_REQUESTED_WEIGHT = "mostrequested.weight"
BALANCED_RESOURCE_WEIGHT = "balancedresource.weight"
NODE_AFFINITY_WEIGHT = "nodeaffinity.weight"
TAINT_TOLERATION_WEIGHT = "tainttoleration.weight"
POD_AFFINITY_WEIGHT = "podaffinity.weight"
IMAGE_LOCALITY_WEIGHT = "imagelocality.weight"
POD_TOPOLOGY_SPREAD_WEIGHT = "podtopologyspread.weight"

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
    exact = _fits(sum(abs(weight) for weight, _ in terms))
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


# --- the plugin ---------------------------------------------------------------------------


def _fits(value: int) -> bool:
    return abs(value) < EXACT_LIMIT


def _short_balanced(pod: PodRequests, node: NodeInfo) -> int:
    """``balanced_resource_scores`` of one node for a pod balancing at most two resources."""
    capped: list[float] = []
    for name, request in pod.balanced:
        allocatable = node.allocatable.get(name)
        if allocatable != 0:
            requested = (node.used.get(name) + node.pipelined.get(name)) + request
            capped.append(min(requested / allocatable, 1.0))
    std = abs((capped[0] - capped[1]) / 2) if len(capped) == 2 else 0.0
    return int((1 - std) * MAX_NODE_SCORE)


@register_plugin
class NodeOrderPlugin(Plugin):
    """All of nodeorder as one batch hook: the per-node scores and the taint-toleration
    normalisation summed per node, vectorised over the session's ``NodeTable``."""

    name = "nodeorder"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.least_requested_weight = arguments.get_int(LEAST_REQUESTED_WEIGHT, 1)
        self.most_requested_weight = arguments.get_int(MOST_REQUESTED_WEIGHT, 0)
        self.balanced_resource_weight = arguments.get_int(BALANCED_RESOURCE_WEIGHT, 1)
        self.node_affinity_weight = arguments.get_int(NODE_AFFINITY_WEIGHT, 1)
        self.taint_toleration_weight = arguments.get_int(TAINT_TOLERATION_WEIGHT, 1)
        self.pod_affinity_weight = arguments.get_int(POD_AFFINITY_WEIGHT, 1)
        self.pod_topology_spread_weight = arguments.get_int(POD_TOPOLOGY_SPREAD_WEIGHT, 2)
        self._ssn: Session | None = None
        #: the session's nodes holding pods with terms that score other pods, while
        #: placements stand
        self._affinity_nodes: list[NodeInfo] | None = None
        #: task uid -> its weight per topology pair, while placements stand
        self._pairs: dict[str, Counter[tuple[str, str]]] = {}
        self._epoch = 0
        self._verbose = False
        self._table: NodeTable | None = None
        self._last: tuple[TaskInfo, PodRequests, tuple[PreferredTerm, ...]] | None = None

    def on_session_open(self, ssn: Session) -> None:
        if ssn.memos.first_time("nodeorder.unbuilt"):
            log.log(
                v(4),
                "nodeorder: %s is not evaluated by this scheduler",
                IMAGE_LOCALITY_WEIGHT,
            )
        self._verbose = log.isEnabledFor(v(4))
        self._table = NodeTable.of(ssn)
        self._ssn = ssn
        self._forget()
        self._epoch = ssn.snapshot.placement_epoch.value
        ssn.add_hook(BATCH_NODE_ORDER, self.name, self.batch_node_score)
        ssn.add_event_handler(EventHandler(allocate=self._placed, deallocate=self._placed))

    def _placed(self, task: TaskInfo) -> None:
        self._pairs = {}
        if task.pod_affinity is not None:
            self._affinity_nodes = None

    def _forget(self) -> None:
        self._pairs = {}
        self._affinity_nodes = None

    def pod_affinity_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float] | None:
        """kube-scheduler's InterPodAffinity score per node, normalised over ``nodes``;
        None when it is 0 everywhere (no term on either side), found without a walk."""
        ssn = self._ssn
        if self.pod_affinity_weight == 0 or ssn is None:
            return None
        epoch = ssn.snapshot.placement_epoch.value
        if epoch != self._epoch:
            self._epoch = epoch
            self._forget()
        affinity = task.pod_affinity
        own = affinity is not None and bool(affinity.preferred or affinity.preferred_anti)
        if not own:
            if self._affinity_nodes is None:
                self._affinity_nodes = [
                    n for n in ssn.nodes.values() if n.affinity_uids and scores_others(n)
                ]
            if not self._affinity_nodes:
                return None
        pairs = self._pairs.get(task.uid)
        if pairs is None:
            source = ssn.nodes.values() if own else (self._affinity_nodes or ())
            pairs = topology_scores(task, source, ssn.snapshot.namespace_labels)
            if len(self._pairs) >= 1024:
                self._pairs = {}
            self._pairs[task.uid] = pairs
        if not pairs:
            return None
        return normalized_scores(pairs, nodes)

    def pod_topology_spread_scores(
        self, task: TaskInfo, nodes: list[NodeInfo]
    ) -> dict[str, float] | None:
        """kube-scheduler's PodTopologySpread score per node over ``nodes``; None for a pod
        without ``ScheduleAnyway`` constraints (one attribute read)."""
        ssn = self._ssn
        if self.pod_topology_spread_weight == 0 or ssn is None or not task.spread_constraints:
            return None
        if not soft_constraints(task):
            return None
        return spread_scores(task, nodes, ssn.nodes.values())

    def _pod_level_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float] | None:
        """InterPodAffinity and PodTopologySpread, weighted and summed per node."""
        total: dict[str, float] | None = None
        for scores, weight in (
            (self.pod_affinity_scores(task, nodes), self.pod_affinity_weight),
            (self.pod_topology_spread_scores(task, nodes), self.pod_topology_spread_weight),
        ):
            if scores is None:
                continue
            if total is None:
                total = dict.fromkeys(scores, 0.0)
            for name, score in scores.items():
                total[name] = total.get(name, 0.0) + score * weight
        return total

    def on_session_close(self, ssn: Session) -> None:
        self._ssn = None
        self._forget()
        if self._table is not None:
            self._table.release_nodes()  # its arrays stay for the next session's table
            self._table = None

    def can_follow(self, ssn: Session) -> bool:
        return True

    def follow(self, ssn: Session, change: UsageChange) -> FollowStep:
        return follow_nodes(self._table, change)

    def _pod(self, task: TaskInfo) -> tuple[PodRequests, tuple[PreferredTerm, ...]]:
        """The pod's requests and terms, remembered for the task being scored: the session
        scores one task on every node in a row."""
        cached = self._last
        if cached is None or cached[0] is not task:
            cached = self._last = (task, PodRequests.of(task), preferred_terms(task))
        return cached[1], cached[2]

    def _weighted(
        self, pod: PodRequests, terms: tuple[PreferredTerm, ...], nodes: ScoredNodes
    ) -> list[tuple[WholeArray, int]]:
        """Volcano's per-node scores (every score but taint toleration) on ``nodes``, each
        beside its weight, in Volcano's order; the zero-weighted ones are not computed."""
        weighted: list[tuple[WholeArray, int]] = []
        if self.least_requested_weight != 0 or self.most_requested_weight != 0:
            pairs = cpu_memory_requests(pod, nodes)
            if self.least_requested_weight != 0:
                least = mean_resource_scores(pairs, least_requested_scores)
                weighted.append((least, self.least_requested_weight))
            if self.most_requested_weight != 0:
                most = mean_resource_scores(pairs, most_requested_scores)
                weighted.append((most, self.most_requested_weight))
        if self.balanced_resource_weight != 0:
            balanced = balanced_resource_scores(pod, nodes)
            weighted.append((balanced, self.balanced_resource_weight))
        if self.node_affinity_weight != 0 and terms:
            weighted.append((node_affinity_scores(terms, nodes), self.node_affinity_weight))
        return weighted

    # --- per-node path (V(4) logging, nodes outside the table, amounts beyond int64) -----

    def per_node_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> list[float]:
        """Volcano's per-node ``NodeOrderFn`` for each of ``nodes`` (every score but taint
        toleration), read from the nodes themselves and summed as Python numbers, score
        times weight, so that no amount or weight is too large; logged at V(4)."""
        pod, terms = self._pod(task)
        weighted = [(s.tolist(), w) for s, w in self._weighted(pod, terms, GivenNodes(nodes))]
        totals = []
        for i, node in enumerate(nodes):
            score = 0.0
            for scores, weight in weighted:
                score += scores[i] * weight
            if self._verbose:
                log.log(
                    v(4),
                    "Total Score for task %s/%s on node %s is: %f",
                    task.namespace,
                    task.name,
                    node.name,
                    score,
                )
            totals.append(score)
        return totals

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """Volcano's per-node ``NodeOrderFn`` for one node."""
        return self.per_node_scores(task, [node])[0]

    def taint_toleration_score(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        """Volcano's ``BatchNodeOrderFn``: taint toleration, normalised over ``nodes``."""
        if self.taint_toleration_weight == 0:
            return {}
        raw = {node.name: intolerable_prefer_no_schedule(task, node) for node in nodes}
        normalized = normalize_reverse_scores(whole_values(list(raw.values()))).tolist()
        weight = self.taint_toleration_weight
        return {name: float(s * weight) for name, s in zip(raw, normalized, strict=True)}

    def scalar_node_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        """The batch hook's answer on the per-node path (a node listed twice counts once)."""
        totals = self.per_node_scores(task, nodes)
        scores = {node.name: total for node, total in zip(nodes, totals, strict=True)}
        for name, score in self.taint_toleration_score(task, nodes).items():
            scores[name] += score
        extra = self._pod_level_scores(task, nodes)
        if extra is not None:
            for name, score in extra.items():
                scores[name] += score
        return scores

    # --- short lists: plain Python ------------------------------------------------------

    def short_node_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float] | None:
        """``vector_node_scores`` node by node on Python numbers, the same operations in the
        same order, so the same floats; ``None`` where the array path takes a turn this one
        does not follow (more than two balanced resources, a weight or an amount too large
        for int64)."""
        pod, terms = self._pod(task)
        lw, mw = self.least_requested_weight, self.most_requested_weight
        bw, aw = self.balanced_resource_weight, self.node_affinity_weight
        tw = self.taint_toleration_weight
        term_total = sum(abs(weight) for weight, _ in terms)
        if not all(_fits(w * MAX_NODE_SCORE) for w in (lw, mw, bw, tw)) or not _fits(
            term_total * aw
        ):
            return None
        balanced = bw != 0 and not pod.best_effort
        if balanced and len(pod.balanced) > 2:
            return None
        terms = tuple((w, reqs) for w, reqs in terms if w != 0 and reqs) if aw != 0 else ()
        raw = (
            [intolerable_prefer_no_schedule(task, n) if n.taints else 0 for n in nodes]
            if tw != 0
            else []
        )
        top = max(raw) if raw else 0
        scores: dict[str, float] = {}
        for i, node in enumerate(nodes):
            allocatable, used, pipelined = node.allocatable, node.used, node.pipelined
            score = 0.0
            if lw != 0 or mw != 0:
                least = most = counted = 0
                for name, request in (("cpu", pod.cpu), ("memory", pod.memory)):
                    capacity_amount = allocatable.get(name)
                    requested_amount = (used.get(name) + pipelined.get(name)) + request
                    if capacity_amount >= EXACT_LIMIT or abs(requested_amount) >= EXACT_LIMIT:
                        return None
                    capacity, requested = int(capacity_amount), int(requested_amount)
                    if capacity == 0:
                        continue
                    counted += 1
                    if requested <= capacity:
                        least += (capacity - requested) * MAX_NODE_SCORE // capacity
                    most += min(requested, capacity) * MAX_NODE_SCORE // capacity
                if lw != 0:
                    score += (least // counted if counted else 0) * lw
                if mw != 0:
                    score += (most // counted if counted else 0) * mw
            if bw != 0:
                score += (_short_balanced(pod, node) if balanced else 0) * bw
            if terms:
                score += sum(w for w, reqs in terms if node_matches_term(reqs, node)) * aw
            if tw != 0:
                normalized = (
                    MAX_NODE_SCORE
                    if top == 0
                    else (MAX_NODE_SCORE - MAX_NODE_SCORE * raw[i] // top)
                )
                score += normalized * tw
            scores[node.name] = score
        extra = self._pod_level_scores(task, nodes)
        if extra is not None:
            for name in scores:
                scores[name] += extra[name]
        return scores

    # --- vectorised path ----------------------------------------------------------------

    def batch_node_score(self, task: TaskInfo, nodes: list[NodeInfo]) -> Mapping[str, float]:
        if len(nodes) <= SHORT_LIST_NODES and not self._verbose:
            short = self.short_node_scores(task, nodes)
            if short is not None:
                return short
        if self._table is not None:
            scores = self.vector_node_scores(self._table, task, nodes)
            if scores is not None:
                if self._verbose:  # logging only: the scores are the table's at any -v
                    for name, score in scores.items():
                        log.log(
                            v(4),
                            "Total Score for task %s/%s on node %s is: %f",
                            task.namespace,
                            task.name,
                            name,
                            score,
                        )
                return scores
        return self.scalar_node_scores(task, nodes)

    def vector_node_scores(
        self, table: NodeTable, task: TaskInfo, nodes: list[NodeInfo]
    ) -> NodeScoreArray | None:
        """``scalar_node_scores`` summed on float64 arrays, to the same float; ``None``
        when a node is not in the table, or a score times its weight might not be exact in
        int64 (a weight or an amount too large: the per-node path scores those exactly)."""
        found = table.rows(nodes)
        if found is None:
            return None
        rows, names = found
        pod, terms = self._pod(task)
        weights = (
            self.least_requested_weight,
            self.most_requested_weight,
            self.balanced_resource_weight,
            self.taint_toleration_weight,
        )
        term_total = sum(abs(weight) for weight, _ in terms)
        if not all(_fits(w * MAX_NODE_SCORE) for w in weights) or not _fits(
            term_total * self.node_affinity_weight
        ):
            return None
        if self.balanced_resource_weight != 0 and not all(
            table.column(name).exact for name, _ in pod.balanced
        ):
            return None
        weighted = self._weighted(pod, terms, TableRows(table, rows))
        if any(scores.dtype != np.int64 for scores, _ in weighted):
            return None  # an amount beyond EXACT_LIMIT
        score = np.zeros(len(rows), dtype=np.float64)
        for scores, weight in weighted:
            score += scores * weight
        if self.taint_toleration_weight != 0:
            raw = table.prefer_no_schedule_counts(task)[rows]
            score += normalize_reverse_scores(raw) * self.taint_toleration_weight
        extra = self._pod_level_scores(task, nodes)
        if extra is not None:
            score += np.fromiter((extra[n] for n in names), np.float64, len(names))
        return NodeScoreArray(names, score)
