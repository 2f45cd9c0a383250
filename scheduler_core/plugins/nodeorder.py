"""nodeorder: kube-scheduler's node scores, weighted and summed as Volcano's plugin does.

Per node (Volcano's ``NodeOrderFn``): least-requested, most-requested and balanced-resource
scores (each 0..100) and the raw sum of matching preferred node-affinity term weights, each
times its weight. Across nodes (``BatchNodeOrderFn``): taint-toleration, normalised over the
candidate nodes (nodes with fewer untolerated ``PreferNoSchedule`` taints score higher).

Both are registered as one batch hook computed with numpy over the session's
``NodeTable`` (5,000 nodes in Python cost ~30 ms a pod, over the extender's latency budget).
The scalar functions stay the reference: the vectorised ones reproduce them to the float,
integer truncations and skip rules included, and the hook falls back to them at V(4) (to
log per node) and for nodes the table does not hold.

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
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import NodeSelectorRequirement, TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.hooks import BATCH_NODE_ORDER
from scheduler_core.framework.node_scores import NodeScoreArray
from scheduler_core.framework.registry import FollowStep, Plugin, UsageChange, register_plugin
from scheduler_core.framework.session import EventHandler, Session
from scheduler_core.logutil import v
from scheduler_core.plugins.predicates import term_matches
from scheduler_core.plugins.util.node_table import (
    EXACT_LIMIT,
    BoolArray,
    FloatArray,
    IntArray,
    NodeTable,
    RowArray,
    follow_nodes,
    intolerable_prefer_no_schedule,
)
from scheduler_core.plugins.util.pod_affinity_score import (
    normalized_scores,
    scores_others,
    topology_scores,
)
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

# --- kube-scheduler resource scorers (integer arithmetic, as in Go) -----------------------


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    requested = min(requested, capacity)
    return requested * MAX_NODE_SCORE // capacity


def mean_resource_score(pairs: Iterable[tuple[int, int]], scorer: Callable[[int, int], int]) -> int:
    """Integer mean of ``scorer(requested, allocatable)`` over the resources the node has
    (allocatable 0 is skipped); cpu and memory weigh the same, as in Volcano's setup."""
    total = 0
    counted = 0
    for requested, allocatable in pairs:
        if allocatable == 0:
            continue
        total += scorer(requested, allocatable)
        counted += 1
    return total // counted if counted else 0


def balanced_score(fractions: list[float]) -> int:
    """``(1 - std of the utilisation fractions) * 100``, fractions capped at 1."""
    capped = [min(f, 1.0) for f in fractions]
    std = 0.0
    if len(capped) == 2:
        std = abs((capped[0] - capped[1]) / 2)
    elif len(capped) > 2:
        mean = sum(capped) / len(capped)
        # (f - mean) * (f - mean), as kube-scheduler writes it: a product rounds once, the
        # same way numpy's does, where ``** 2`` goes through libm's pow.
        std = math.sqrt(sum((f - mean) * (f - mean) for f in capped) / len(capped))
    return int((1 - std) * MAX_NODE_SCORE)


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


def _requested_on(node: NodeInfo, name: str) -> float:
    """What the node's pods request of ``name``, pipelined ones included (kube-scheduler's
    view once the pipelined pods are bound)."""
    return node.used.get(name) + node.pipelined.get(name)


def _cpu_memory_pairs(pod: PodRequests, node: NodeInfo) -> list[tuple[int, int]]:
    used, pipelined, allocatable = node.used, node.pipelined, node.allocatable
    return [
        (int(used.milli_cpu + pipelined.milli_cpu + pod.cpu), int(allocatable.milli_cpu)),
        (int(used.memory + pipelined.memory + pod.memory), int(allocatable.memory)),
    ]


def least_requested(pod: PodRequests, node: NodeInfo) -> int:
    return mean_resource_score(_cpu_memory_pairs(pod, node), least_requested_score)


def most_requested(pod: PodRequests, node: NodeInfo) -> int:
    return mean_resource_score(_cpu_memory_pairs(pod, node), most_requested_score)


def balanced_resource(pod: PodRequests, node: NodeInfo) -> int:
    """Balanced allocation on actual requests; a pod requesting none of the balanced
    resources gets 0 (kube-scheduler skips best-effort pods)."""
    if pod.best_effort:
        return 0
    fractions: list[float] = []
    for name, request in pod.balanced:
        allocatable = node.allocatable.get(name)
        if allocatable == 0:
            continue
        fractions.append((_requested_on(node, name) + request) / allocatable)
    return balanced_score(fractions)


# --- node affinity (preferred terms) ------------------------------------------------------


def preferred_terms(task: TaskInfo) -> tuple[PreferredTerm, ...]:
    """The task's preferred node-affinity terms as (weight, requirements)."""
    return task.preferred_affinity


def node_affinity_score(terms: Iterable[PreferredTerm], labels: Mapping[str, str]) -> int:
    """Sum of the weights of matching preferred terms; zero-weight or empty terms never
    count. Not normalised across nodes: Volcano adds the raw sum."""
    score = 0
    for weight, requirements in terms:
        if weight != 0 and term_matches(requirements, labels):
            score += weight
    return score


# --- taint toleration (batch) -------------------------------------------------------------


def normalize_reverse(raw: Mapping[str, int]) -> dict[str, int]:
    """kube-scheduler's ``DefaultNormalizeScore(MaxNodeScore, reverse=true)``."""
    top = max(raw.values(), default=0)
    if top == 0:
        return {name: MAX_NODE_SCORE for name in raw}
    return {name: MAX_NODE_SCORE - MAX_NODE_SCORE * score // top for name, score in raw.items()}


# --- the vectorised scorers: the scalar ones above, integer truncations included ----------


def least_requested_scores(requested: IntArray, capacity: IntArray) -> IntArray:
    safe = np.where(capacity == 0, 1, capacity)
    scores: IntArray = (capacity - requested) * MAX_NODE_SCORE // safe
    scores[(capacity == 0) | (requested > capacity)] = 0
    return scores


def most_requested_scores(requested: IntArray, capacity: IntArray) -> IntArray:
    safe = np.where(capacity == 0, 1, capacity)
    scores: IntArray = np.minimum(requested, capacity) * MAX_NODE_SCORE // safe
    scores[capacity == 0] = 0
    return scores


def _cpu_memory_arrays(
    table: NodeTable, rows: RowArray, pod: PodRequests
) -> list[tuple[IntArray, IntArray]] | None:
    """(requested, capacity) per node for cpu and memory, truncated to int as
    ``_cpu_memory_pairs`` does; ``None`` when the amounts are too large to be exact."""
    pairs = []
    for name, request in (("cpu", pod.cpu), ("memory", pod.memory)):
        col = table.column(name)
        if not col.exact or abs(request) >= EXACT_LIMIT:
            return None
        requested = ((col.used[rows] + col.pipelined[rows]) + request).astype(np.int64)
        pairs.append((requested, col.allocatable[rows].astype(np.int64)))
    return pairs


def mean_resource_scores(
    pairs: list[tuple[IntArray, IntArray]], scorer: Callable[[IntArray, IntArray], IntArray]
) -> IntArray:
    """``mean_resource_score`` per node: resources with capacity 0 neither score nor count."""
    total = np.zeros(len(pairs[0][0]), dtype=np.int64)
    counted = np.zeros(len(pairs[0][0]), dtype=np.int64)
    for requested, capacity in pairs:
        total += scorer(requested, capacity)  # 0 where capacity is 0
        counted += capacity != 0
    return np.where(counted > 0, total // np.maximum(counted, 1), 0)


def balanced_resource_scores(table: NodeTable, rows: RowArray, pod: PodRequests) -> IntArray:
    """``balanced_resource`` per node: the nodes differ in how many of the pod's balanced
    resources they have (allocatable 0 is skipped), so each count gets its own formula."""
    if pod.best_effort:
        return np.zeros(len(rows), dtype=np.int64)
    capped: list[FloatArray] = []
    present: list[BoolArray] = []
    for name, request in pod.balanced:
        col = table.column(name)
        allocatable = col.allocatable[rows]
        has = allocatable != 0
        fraction = ((col.used[rows] + col.pipelined[rows]) + request) / np.where(
            has, allocatable, 1.0
        )
        capped.append(np.minimum(fraction, 1.0))
        present.append(has)
    counted = np.zeros(len(rows), dtype=np.int64)
    for has in present:
        counted += has
    std = np.zeros(len(rows), dtype=np.float64)
    # two resources: whichever two the node has, first and last in the pod's order
    first = np.where(present[0], capped[0], capped[1])
    last = np.where(present[2], capped[2], capped[1]) if len(capped) > 2 else capped[1]
    std = np.where(counted == 2, np.abs((first - last) / 2), std)
    if len(capped) > 2:
        total = 0.0 + capped[0]
        for c in capped[1:]:
            total = total + c
        mean = total / len(capped)
        squares = np.zeros(len(rows), dtype=np.float64)
        for c in capped:
            squares = squares + (c - mean) * (c - mean)
        every = counted == len(capped)
        std = np.where(every, np.sqrt(np.where(every, squares, 0.0) / len(capped)), std)
    scores: IntArray = ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    return scores


def node_affinity_scores(
    table: NodeTable, rows: RowArray, terms: Iterable[PreferredTerm]
) -> IntArray:
    """``node_affinity_score`` per node: each counted term's weight where all its
    requirements hold."""
    scores = np.zeros(len(rows), dtype=np.int64)
    for weight, requirements in terms:
        if weight == 0 or not requirements:
            continue
        matched = table.requirement_mask(requirements[0])
        for req in requirements[1:]:
            matched = matched & table.requirement_mask(req)
        scores += weight * matched[rows]
    return scores


def taint_toleration_scores(table: NodeTable, rows: RowArray, task: TaskInfo) -> IntArray:
    """``normalize_reverse`` of the untolerated ``PreferNoSchedule`` counts over ``rows``."""
    raw = table.prefer_no_schedule_counts(task)[rows]
    top = int(raw.max()) if len(raw) else 0
    if top == 0:
        return np.full(len(rows), MAX_NODE_SCORE, dtype=np.int64)
    scores: IntArray = MAX_NODE_SCORE - MAX_NODE_SCORE * raw // top
    return scores


# --- the plugin ---------------------------------------------------------------------------


def _fits(value: int) -> bool:
    return abs(value) < EXACT_LIMIT


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

    # --- scalar path (Volcano parity, V(4) logging, nodes outside the table) -------------

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """Volcano's per-node ``NodeOrderFn``: every score but taint toleration."""
        pod, terms = self._pod(task)
        score = 0.0
        if self.least_requested_weight != 0:
            score += least_requested(pod, node) * self.least_requested_weight
        if self.most_requested_weight != 0:
            score += most_requested(pod, node) * self.most_requested_weight
        if self.balanced_resource_weight != 0:
            score += balanced_resource(pod, node) * self.balanced_resource_weight
        if self.node_affinity_weight != 0 and terms:
            score += node_affinity_score(terms, node.labels) * self.node_affinity_weight
        if self._verbose:
            log.log(
                v(4),
                "Total Score for task %s/%s on node %s is: %f",
                task.namespace,
                task.name,
                node.name,
                score,
            )
        return score

    def taint_toleration_score(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        """Volcano's ``BatchNodeOrderFn``: taint toleration, normalised over ``nodes``."""
        if self.taint_toleration_weight == 0:
            return {}
        raw = {node.name: intolerable_prefer_no_schedule(task, node) for node in nodes}
        weight = self.taint_toleration_weight
        return {name: float(s * weight) for name, s in normalize_reverse(raw).items()}

    def scalar_node_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        scores = {node.name: self.node_score(task, node) for node in nodes}
        for name, score in self.taint_toleration_score(task, nodes).items():
            scores[name] += score
        extra = self._pod_level_scores(task, nodes)
        if extra is not None:
            for name, score in extra.items():
                scores[name] += score
        return scores

    # --- vectorised path ----------------------------------------------------------------

    def batch_node_score(self, task: TaskInfo, nodes: list[NodeInfo]) -> Mapping[str, float]:
        if not self._verbose and self._table is not None:
            scores = self.vector_node_scores(self._table, task, nodes)
            if scores is not None:
                return scores
        return self.scalar_node_scores(task, nodes)

    def vector_node_scores(
        self, table: NodeTable, task: TaskInfo, nodes: list[NodeInfo]
    ) -> NodeScoreArray | None:
        """``scalar_node_scores`` computed on arrays, to the same float; ``None`` when a
        node is not in the table or an amount is too large to be exact in int64."""
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
        score = np.zeros(len(rows), dtype=np.float64)
        if self.least_requested_weight != 0 or self.most_requested_weight != 0:
            pairs = _cpu_memory_arrays(table, rows, pod)
            if pairs is None:
                return None
            if self.least_requested_weight != 0:
                least = mean_resource_scores(pairs, least_requested_scores)
                score += least * self.least_requested_weight
            if self.most_requested_weight != 0:
                most = mean_resource_scores(pairs, most_requested_scores)
                score += most * self.most_requested_weight
        if self.balanced_resource_weight != 0:
            if not all(table.column(name).exact for name, _ in pod.balanced):
                return None
            score += balanced_resource_scores(table, rows, pod) * self.balanced_resource_weight
        if self.node_affinity_weight != 0 and terms:
            score += node_affinity_scores(table, rows, terms) * self.node_affinity_weight
        if self.taint_toleration_weight != 0:
            score += taint_toleration_scores(table, rows, task) * self.taint_toleration_weight
        extra = self._pod_level_scores(task, nodes)
        if extra is not None:
            score += np.fromiter((extra[n] for n in names), np.float64, len(names))
        return NodeScoreArray(names, score)
