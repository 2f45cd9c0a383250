"""nodeorder: kube-scheduler's node scores, weighted and summed as Volcano's plugin does.

Per node (``NodeOrderFn``): least-requested, most-requested and balanced-resource scores
(each 0..100) and the raw sum of matching preferred node-affinity term weights, each times
its weight. Across nodes (``BatchNodeOrderFn``): taint-toleration, normalised over the
candidate nodes (nodes with fewer untolerated ``PreferNoSchedule`` taints score higher).

Requests are read from the model, not from pod specs: a node's requested amount is the sum
of its tasks' requests (``used + pipelined``), and kube-scheduler's non-zero defaults for a
pod that requests no CPU or memory (100m, 200Mi) are applied to the incoming pod only.

Not built (no data in the model): inter-pod affinity, image locality, pod topology spread.

``extender_scores`` turns the session's summed node scores into the extender's 0..10 scale.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import NodeSelectorRequirement, TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.registry import Plugin, register_plugin
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v
from scheduler_core.plugins.predicates import PREFER_NO_SCHEDULE, term_matches, untolerated_taint

log = logging.getLogger("scheduler_core.plugins.nodeorder")

MAX_NODE_SCORE = 100
MAX_EXTENDER_PRIORITY = 10

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
        std = math.sqrt(sum((f - mean) ** 2 for f in capped) / len(capped))
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


# --- the plugin ---------------------------------------------------------------------------


@register_plugin
class NodeOrderPlugin(Plugin):
    name = "nodeorder"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.least_requested_weight = arguments.get_int(LEAST_REQUESTED_WEIGHT, 1)
        self.most_requested_weight = arguments.get_int(MOST_REQUESTED_WEIGHT, 0)
        self.balanced_resource_weight = arguments.get_int(BALANCED_RESOURCE_WEIGHT, 1)
        self.node_affinity_weight = arguments.get_int(NODE_AFFINITY_WEIGHT, 1)
        self.taint_toleration_weight = arguments.get_int(TAINT_TOLERATION_WEIGHT, 1)
        self._verbose = False
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
        ssn.node_order_fns[self.name] = self.node_score
        ssn.batch_node_order_fns[self.name] = self.batch_node_score

    def _pod(self, task: TaskInfo) -> tuple[PodRequests, tuple[PreferredTerm, ...]]:
        """The pod's requests and terms, remembered for the task being scored: the session
        scores one task on every node in a row."""
        cached = self._last
        if cached is None or cached[0] is not task:
            cached = self._last = (task, PodRequests.of(task), preferred_terms(task))
        return cached[1], cached[2]

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
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

    def batch_node_score(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        if self.taint_toleration_weight == 0:
            return {}
        raw = {node.name: intolerable_prefer_no_schedule(task, node) for node in nodes}
        weight = self.taint_toleration_weight
        return {name: float(s * weight) for name, s in normalize_reverse(raw).items()}


def extender_scores(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, int]:
    """The session's node scores on the extender's 0..10 scale (``MaxExtenderPriority``).

    Linear in the score, anchored at 0: the best node gets 10, a node scoring 0 (or less)
    gets 0, others ``floor(10 * score / best)``. Anchoring at 0 rather than at the worst
    node keeps the ratio between nodes, so a nearly-as-good node is not pushed to 0 when
    all candidates are close; when no node scores above 0 every node gets 0.
    """
    raw = ssn.node_scores(task, nodes)
    best = max(raw.values(), default=0.0)
    if best <= 0:
        return {name: 0 for name in raw}
    scaled: dict[str, int] = {}
    for name, score in raw.items():
        if score <= 0:
            scaled[name] = 0
        elif score >= best:
            scaled[name] = MAX_EXTENDER_PRIORITY
        else:
            scaled[name] = math.floor(MAX_EXTENDER_PRIORITY * score / best + 1e-9)
    return scaled
