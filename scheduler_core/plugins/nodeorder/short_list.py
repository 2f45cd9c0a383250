"""nodeorder's scores for a short list of nodes, node by node on Python numbers.

Below ``SHORT_LIST_NODES`` nodes a call of the array formulas (``scores.py``) costs more
than it saves. ``short_scores`` runs the same operations in the same order on Python
numbers, so it gives the array path's floats; where the array path takes a turn this one
does not follow, it declines and the arrays serve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.plugins.nodeorder.args import NodeOrderArgs
from scheduler_core.plugins.nodeorder.scores import MAX_NODE_SCORE, PodRequests, PreferredTerm
from scheduler_core.plugins.util.node_table import EXACT_LIMIT, intolerable_prefer_no_schedule
from scheduler_core.plugins.util.scored_nodes import ReadNode, node_matches_term
from scheduler_core.plugins.util.table_scoring import fits_exactly


def _short_balanced(pod: PodRequests, node: ReadNode) -> int:
    """``balanced_resource_scores`` of one node: ``balanced_scores``' operations in its
    order on Python floats, which round as float64 does (``math.sqrt`` is correctly rounded,
    as ``np.sqrt`` is); the resources the node lacks add 0.0 there, which changes no sum."""
    capped: list[float] = []
    for name, request in pod.balanced:
        allocatable = node.allocatable.get(name)
        if allocatable != 0:
            requested = (node.used.get(name) + node.pipelined.get(name)) + request
            capped.append(min(requested / allocatable, 1.0))
    counted = len(capped)
    if counted == 2:
        std = abs((capped[0] - capped[1]) / 2)
    elif counted > 2:  # a pod balancing GPUs too: the population standard deviation
        total = 0.0
        for c in capped:
            total = total + c
        mean = total / counted
        squares = 0.0
        for c in capped:
            squares = squares + (c - mean) * (c - mean)
        std = math.sqrt(squares / counted)
    else:
        std = 0.0
    return int((1 - std) * MAX_NODE_SCORE)


@dataclass(frozen=True, slots=True)
class NodePart:
    """How one pod is scored node by node on Python numbers, every score but the ones
    normalised over the candidates (taint toleration, inter-pod affinity, topology spread):
    decided once per pod (``node_part``), then asked per node (``score``)."""

    args: NodeOrderArgs
    pod: PodRequests
    #: the preferred terms that can score (a weight and a requirement each)
    terms: tuple[PreferredTerm, ...]
    #: whether balanced allocation scores this pod (it requests cpu, memory or a GPU)
    balanced: bool

    def score(self, node: ReadNode) -> float | None:
        """The node's sum, each score times its weight in the array path's order; ``None``
        when an amount is too large for int64 (the array path declines too)."""
        args, pod = self.args, self.pod
        lw, mw = args.least_requested_weight, args.most_requested_weight
        bw, aw = args.balanced_resource_weight, args.node_affinity_weight
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
            score += (_short_balanced(pod, node) if self.balanced else 0) * bw
        if self.terms:
            score += sum(w for w, reqs in self.terms if node_matches_term(reqs, node)) * aw
        return score


def node_part(
    args: NodeOrderArgs, pod: PodRequests, terms: tuple[PreferredTerm, ...]
) -> NodePart | None:
    """``NodePart`` for a pod, or ``None`` where the array path takes a turn the node by
    node one does not follow (a weight too large for int64)."""
    lw, mw = args.least_requested_weight, args.most_requested_weight
    bw, aw = args.balanced_resource_weight, args.node_affinity_weight
    tw = args.taint_toleration_weight
    term_total = sum(abs(weight) for weight, _ in terms)
    if not all(fits_exactly(w * MAX_NODE_SCORE) for w in (lw, mw, bw, tw)) or not fits_exactly(
        term_total * aw
    ):
        return None
    balanced = bw != 0 and not pod.best_effort
    scoring = tuple((w, reqs) for w, reqs in terms if w != 0 and reqs) if aw != 0 else ()
    return NodePart(args, pod, scoring, balanced)


def short_scores(
    args: NodeOrderArgs,
    pod: PodRequests,
    terms: tuple[PreferredTerm, ...],
    task: TaskInfo,
    nodes: list[NodeInfo],
) -> dict[str, float] | None:
    """Every score but the pod-level ones (inter-pod affinity, topology spread), summed per
    node; ``None`` where the array path takes a turn this one does not follow (a weight or
    an amount too large for int64)."""
    part = node_part(args, pod, terms)
    if part is None:
        return None
    tw = args.taint_toleration_weight
    raw = (
        [intolerable_prefer_no_schedule(task, n) if n.taints else 0 for n in nodes]
        if tw != 0
        else []
    )
    top = max(raw) if raw else 0
    scores: dict[str, float] = {}
    for i, node in enumerate(nodes):
        score = part.score(node)
        if score is None:
            return None
        if tw != 0:
            normalized = (
                MAX_NODE_SCORE if top == 0 else (MAX_NODE_SCORE - MAX_NODE_SCORE * raw[i] // top)
            )
            score += normalized * tw
        scores[node.name] = score
    return scores
