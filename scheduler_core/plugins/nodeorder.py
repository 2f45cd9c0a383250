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

Not built (no data in the model): inter-pod affinity, image locality, pod topology spread.

"""

from __future__ import annotations

import logging
import math
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter, is_, methodcaller

import numpy as np
import numpy.typing as npt

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import NodeSelectorRequirement, TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.hooks import BATCH_NODE_ORDER
from scheduler_core.framework.registry import Plugin, register_plugin
from scheduler_core.framework.session import EventHandler, Session
from scheduler_core.logutil import v
from scheduler_core.plugins.predicates import (
    PREFER_NO_SCHEDULE,
    requirement_matches,
    term_matches,
    untolerated_taint,
)

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

_unbuilt_logged = False
_NAME = attrgetter("name")


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


_PREFER_EFFECTS = frozenset({PREFER_NO_SCHEDULE})


def intolerable_prefer_no_schedule(task: TaskInfo, node: NodeInfo) -> int:
    """Number of ``PreferNoSchedule`` taints no toleration (with effect "" or
    ``PreferNoSchedule``) tolerates."""
    tolerations = [t for t in task.tolerations if t.effect in ("", PREFER_NO_SCHEDULE)]
    count = 0
    for taint in node.taints:
        if taint.effect == PREFER_NO_SCHEDULE and untolerated_taint(
            (taint,), tolerations, _PREFER_EFFECTS
        ):
            count += 1
    return count


def normalize_reverse(raw: Mapping[str, int]) -> dict[str, int]:
    """kube-scheduler's ``DefaultNormalizeScore(MaxNodeScore, reverse=true)``."""
    top = max(raw.values(), default=0)
    if top == 0:
        return {name: MAX_NODE_SCORE for name in raw}
    return {name: MAX_NODE_SCORE - MAX_NODE_SCORE * score // top for name, score in raw.items()}


# --- node arrays: the session's nodes as numpy columns (shared with binpack) --------------

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
RowArray = npt.NDArray[np.intp]

#: Magnitude below which the vectorised scorers are exact: ``(requested) * 100`` stays in
#: int64 and every integer score sum stays exact in float64. Larger inputs (never seen on a
#: real node) take the scalar path instead of risking a different integer result.
EXACT_LIMIT = 2**50

RequirementKey = tuple[str, str, tuple[str, ...]]
TolerationsKey = tuple[tuple[str, str, str, str], ...]

#: Per-pod caches (taint counts, affinity masks) are dropped past this many entries, so a
#: long-lived accounting session cannot grow without bound.
_CACHE_LIMIT = 1024

_TABLES: dict[int, NodeTable] = {}


def _requirement_key(req: NodeSelectorRequirement) -> RequirementKey:
    return (req.key, req.operator, req.values)


@dataclass(slots=True)
class ResourceColumn:
    """One resource over the session's nodes, row order fixed by the table."""

    allocatable: FloatArray
    used: FloatArray
    pipelined: FloatArray
    #: every value below ``EXACT_LIMIT`` (integer arithmetic on it is exact in int64)
    exact: bool


@dataclass(slots=True)
class _LabelColumn:
    """One label key: a code per node (-1: no such label) into the distinct values."""

    codes: IntArray
    code_of: dict[str, int]
    values: list[str]


def _amounts(nodes: list[NodeInfo], side: str, name: str) -> FloatArray:
    if name in ("cpu", "memory"):
        attr = attrgetter(f"{side}.{'milli_cpu' if name == 'cpu' else 'memory'}")
        return np.fromiter(map(attr, nodes), np.float64, len(nodes))
    get = methodcaller("get", name)
    return np.fromiter(map(get, map(attrgetter(side), nodes)), np.float64, len(nodes))


def _below_limit(*arrays: FloatArray) -> bool:
    return all(a.size == 0 or float(np.abs(a).max()) < EXACT_LIMIT for a in arrays)


class NodeTable:
    """The session's nodes as numpy columns, built lazily, one table per session.

    Scoring one pod on 5,000 nodes through per-node Python costs ~30 ms; with the nodes'
    amounts in arrays it is a few dozen vector operations. Columns are built on first use
    (a cluster without GPU pods never reads GPUs) and kept for the session: its node set is
    fixed, and the session's own node changes (statements allocating, pipelining, evicting,
    discarding) reach the table through the session's allocate/deallocate events, which mark
    the node's row for re-reading. Nodes changed behind the session's back (the live cache
    between two accounting rebuilds) are seen at the next session, as every other share is.

    A node the table does not hold (a simulation's clone, a node not in the session) makes
    ``rows`` answer ``None``: callers then score on the scalar path.
    """

    def __init__(self, nodes: Mapping[str, NodeInfo]) -> None:
        self._source = nodes
        self._nodes: list[NodeInfo] | None = None
        self._row_of_id: dict[int, int] = {}
        self._row_of_name: dict[str, int] = {}
        self._columns: dict[str, ResourceColumn] = {}
        self._labels: dict[str, _LabelColumn] = {}
        self._requirement_masks: dict[RequirementKey, BoolArray] = {}
        self._prefer_tainted: list[int] | None = None
        self._taint_counts: dict[TolerationsKey, IntArray] = {}
        self._placed: dict[str, str] = {}  # task uid -> node, from allocate events
        self._dirty: set[str] = set()
        self._last_rows: tuple[Sequence[NodeInfo], list[NodeInfo], RowArray, list[str]] | None = (
            None
        )

    @classmethod
    def of(cls, ssn: Session) -> NodeTable:
        """The session's table, created (and subscribed to its events) on first request;
        forgotten when the session is garbage-collected."""
        table = _TABLES.get(ssn.uid)
        if table is None:
            table = _TABLES[ssn.uid] = cls(ssn.nodes)
            ssn.add_event_handler(
                EventHandler(allocate=table.on_allocate, deallocate=table.on_deallocate)
            )
            weakref.finalize(ssn, _TABLES.pop, ssn.uid, None)
        return table

    # --- staying current with the session ------------------------------------------------

    def on_allocate(self, task: TaskInfo) -> None:
        if task.node_name:
            self._placed[task.uid] = task.node_name
            self._dirty.add(task.node_name)

    def on_deallocate(self, task: TaskInfo) -> None:
        # A discarded allocation has lost its node name by the time the event fires.
        name = task.node_name or self._placed.get(task.uid)
        if name:
            self._dirty.add(name)

    def _current(self) -> list[NodeInfo]:
        nodes = self._nodes
        if nodes is None:
            nodes = self._nodes = list(self._source.values())
            self._row_of_id = {id(node): row for row, node in enumerate(nodes)}
            self._row_of_name = {node.name: row for row, node in enumerate(nodes)}
            self._dirty.clear()
        elif self._dirty:
            for name in self._dirty:
                row = self._row_of_name.get(name)
                if row is not None:
                    self._reread(nodes[row], row)
            self._dirty.clear()
        return nodes

    def _reread(self, node: NodeInfo, row: int) -> None:
        for name, col in self._columns.items():
            col.allocatable[row] = node.allocatable.get(name)
            col.used[row] = node.used.get(name)
            col.pipelined[row] = node.pipelined.get(name)
            col.exact = col.exact and _below_limit(
                col.allocatable[row : row + 1],
                col.used[row : row + 1],
                col.pipelined[row : row + 1],
            )

    # --- what scorers read ---------------------------------------------------------------

    def rows(self, nodes: Sequence[NodeInfo]) -> tuple[RowArray, list[str]] | None:
        """The rows and names of ``nodes`` (one dict lookup each, by identity), or ``None``
        if one of them is not a node of this session.

        Remembered for the last list asked about: the session hands the same list to
        nodeorder and to binpack in a row. The list is re-checked element by element (by
        identity) before the answer is reused, in case its owner changed it in place.
        """
        self._current()
        last = self._last_rows
        if (
            last is not None
            and last[0] is nodes
            and len(nodes) == len(last[1])
            and all(map(is_, nodes, last[1]))
        ):
            return last[2], last[3]
        try:
            rows = np.fromiter(map(self._row_of_id.get, map(id, nodes)), np.intp, len(nodes))
        except TypeError:  # a None: the node is not this session's
            return None
        names = list(map(_NAME, nodes))
        self._last_rows = (nodes, list(nodes), rows, names)
        return rows, names

    def column(self, name: str) -> ResourceColumn:
        """Allocatable, used and pipelined amounts of one resource (Kubernetes name)."""
        nodes = self._current()
        col = self._columns.get(name)
        if col is None:
            allocatable = _amounts(nodes, "allocatable", name)
            used = _amounts(nodes, "used", name)
            pipelined = _amounts(nodes, "pipelined", name)
            col = self._columns[name] = ResourceColumn(
                allocatable, used, pipelined, _below_limit(allocatable, used, pipelined)
            )
        return col

    def _label(self, key: str) -> _LabelColumn:
        column = self._labels.get(key)
        if column is None:
            code_of: dict[str, int] = {}
            raw = [node.labels.get(key) for node in self._current()]
            codes = [
                -1 if value is None else code_of.setdefault(value, len(code_of)) for value in raw
            ]
            column = self._labels[key] = _LabelColumn(
                np.array(codes, dtype=np.int64), code_of, list(code_of)
            )
        return column

    def requirement_mask(self, req: NodeSelectorRequirement) -> BoolArray:
        """Which nodes satisfy one requirement, with ``requirement_matches``'s semantics
        (set operators by value codes; the others asked once per distinct label value)."""
        key = _requirement_key(req)
        mask = self._requirement_masks.get(key)
        if mask is not None:
            return mask
        label = self._label(req.key)
        op = req.operator
        if op in ("In", "NotIn"):
            wanted = [label.code_of[v] for v in req.values if v in label.code_of]
            mask = np.isin(label.codes, wanted) if wanted else np.zeros(len(label.codes), bool)
            if op == "NotIn":
                mask = ~mask
        elif op == "Exists":
            mask = label.codes >= 0
        elif op == "DoesNotExist":
            mask = label.codes < 0
        else:
            verdicts = [requirement_matches(req, {})]
            verdicts.extend(requirement_matches(req, {req.key: value}) for value in label.values)
            mask = np.array(verdicts, dtype=bool)[label.codes + 1]
        if len(self._requirement_masks) >= _CACHE_LIMIT:
            self._requirement_masks.clear()
        self._requirement_masks[key] = mask
        return mask

    def prefer_no_schedule_counts(self, task: TaskInfo) -> IntArray:
        """``intolerable_prefer_no_schedule`` for every node, computed only on the nodes
        that carry a ``PreferNoSchedule`` taint (usually few) and kept per toleration set."""
        nodes = self._current()
        if self._prefer_tainted is None:
            self._prefer_tainted = [
                row
                for row, node in enumerate(nodes)
                if any(t.effect == PREFER_NO_SCHEDULE for t in node.taints)
            ]
        key = tuple((t.key, t.operator, t.value, t.effect) for t in task.tolerations)
        counts = self._taint_counts.get(key)
        if counts is None:
            counts = np.zeros(len(nodes), dtype=np.int64)
            for row in self._prefer_tainted:
                counts[row] = intolerable_prefer_no_schedule(task, nodes[row])
            if len(self._taint_counts) >= _CACHE_LIMIT:
                self._taint_counts.clear()
            self._taint_counts[key] = counts
        return counts


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
        self._verbose = False
        self._table: NodeTable | None = None
        self._last: tuple[TaskInfo, PodRequests, tuple[PreferredTerm, ...]] | None = None

    def on_session_open(self, ssn: Session) -> None:
        global _unbuilt_logged
        if not _unbuilt_logged:
            _unbuilt_logged = True
            log.log(
                v(4),
                "nodeorder: %s, %s and %s are not evaluated by this scheduler",
                POD_AFFINITY_WEIGHT,
                IMAGE_LOCALITY_WEIGHT,
                POD_TOPOLOGY_SPREAD_WEIGHT,
            )
        self._verbose = log.isEnabledFor(v(4))
        self._table = NodeTable.of(ssn)
        ssn.add_hook(BATCH_NODE_ORDER, self.name, self.batch_node_score)

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
        return scores

    # --- vectorised path ----------------------------------------------------------------

    def batch_node_score(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        if not self._verbose and self._table is not None:
            scores = self.vector_node_scores(self._table, task, nodes)
            if scores is not None:
                return scores
        return self.scalar_node_scores(task, nodes)

    def vector_node_scores(
        self, table: NodeTable, task: TaskInfo, nodes: list[NodeInfo]
    ) -> dict[str, float] | None:
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
        return dict(zip(names, score.tolist(), strict=True))
