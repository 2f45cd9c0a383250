"""nodeorder: kube-scheduler's node scores, weighted and summed as Volcano's plugin does.

Per node (Volcano's ``NodeOrderFn``): least-requested, most-requested and balanced-resource
scores (each 0..100) and the raw sum of matching preferred node-affinity term weights, each
times its weight. Across nodes (``BatchNodeOrderFn``): taint-toleration, normalised over the
candidate nodes (nodes with fewer untolerated ``PreferNoSchedule`` taints score higher). The
formulas are in ``scores.py``, the weights in ``args.py``.

Both are registered as one batch hook computed with numpy over the session's
``NodeTable`` (5,000 nodes in Python cost ~30 ms a pod, over the extender's latency budget):
the batch hook runs the formulas on the table's rows and sums the weighted scores as float64
arrays. The per-node path runs the same formulas on arrays read from the nodes it is given
and sums each node's scores as Python numbers: it serves at V(4) (to log per node), for
nodes the table does not hold, and when a score times its weight might not be exact in
int64. A short list of nodes is scored on Python numbers (``short_list.py``); which path
serves a call is ``plugins/util/table_scoring.py``'s, shared with binpack.

Across nodes too: inter-pod affinity (``podaffinity.weight``, ``plugins/util/pod_affinity_
score.py``) and topology spread (``podtopologyspread.weight``, ``plugins/util/spread_score.
py``), each 0..100 normalised over the candidates, added to either path's sums; a pod with
no such terms (and, for affinity, a session where no placed pod has any) costs nothing.

Not built (no data in the model): image locality.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Hashable
from typing import ClassVar

import numpy as np

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import NodeSelectorRequirement, TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.hooks import BATCH_NODE_ORDER
from scheduler_core.framework.node_scores import NodeScoreArray
from scheduler_core.framework.session import EventHandler, Session
from scheduler_core.logutil import v
from scheduler_core.plugins.nodeorder.args import IMAGE_LOCALITY_WEIGHT, NodeOrderArgs
from scheduler_core.plugins.nodeorder.scores import (
    MAX_NODE_SCORE,
    PodRequests,
    PreferredTerm,
    WholeArray,
    balanced_resource_scores,
    cpu_memory_requests,
    least_requested_scores,
    mean_resource_scores,
    most_requested_scores,
    node_affinity_scores,
    normalize_reverse_scores,
    preferred_terms,
    whole_values,
)
from scheduler_core.plugins.nodeorder.short_list import node_part, short_scores
from scheduler_core.plugins.util.node_table import (
    FloatArray,
    NodeTable,
    RowArray,
    intolerable_prefer_no_schedule,
)
from scheduler_core.plugins.util.pod_affinity_score import (
    normalized_scores,
    scores_others,
    topology_scores,
)
from scheduler_core.plugins.util.scored_nodes import GivenNodes, ScoredNodes, TableRows
from scheduler_core.plugins.util.spread_score import soft_constraints, spread_scores
from scheduler_core.plugins.util.table_scoring import RowScorer, TableScoredPlugin, fits_exactly

log = logging.getLogger("scheduler_core.plugins.nodeorder")

#: A task, its requests, its preferred terms and the shape they make (``shape``).
_PodRead = tuple[TaskInfo, PodRequests, tuple[PreferredTerm, ...], Hashable]


def _requirement(req: NodeSelectorRequirement) -> tuple[str, str, tuple[str, ...]]:
    return (req.key, req.operator, req.values)


class NodeOrderPlugin(TableScoredPlugin[NodeOrderArgs]):
    """All of nodeorder as one batch hook: the per-node scores and the taint-toleration
    normalisation summed per node, vectorised over the session's ``NodeTable``."""

    name = "nodeorder"
    args_type: ClassVar[type[NodeOrderArgs]] = NodeOrderArgs
    score_log = log
    score_line = "Total Score for task %s/%s on node %s is: %f"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self._ssn: Session | None = None
        #: the session's nodes holding pods with terms that score other pods, while
        #: placements stand
        self._affinity_nodes: list[NodeInfo] | None = None
        #: task uid -> its weight per topology pair, while placements stand
        self._pairs: dict[str, Counter[tuple[str, str]]] = {}
        self._epoch = 0
        self._last: _PodRead | None = None

    def on_session_open(self, ssn: Session) -> None:
        if ssn.memos.first_time("nodeorder.unbuilt"):
            unbuilt = IMAGE_LOCALITY_WEIGHT
            log.log(v(4), "nodeorder: %s is not evaluated by this scheduler", unbuilt)
        self.open_table(ssn)
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
        if self.args.pod_affinity_weight == 0 or ssn is None:
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
        if self.args.pod_topology_spread_weight == 0 or ssn is None or not task.spread_constraints:
            return None
        if not soft_constraints(task):
            return None
        return spread_scores(task, nodes, ssn.nodes.values())

    def _pod_level_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float] | None:
        """InterPodAffinity and PodTopologySpread, weighted and summed per node."""
        total: dict[str, float] | None = None
        for scores, weight in (
            (self.pod_affinity_scores(task, nodes), self.args.pod_affinity_weight),
            (self.pod_topology_spread_scores(task, nodes), self.args.pod_topology_spread_weight),
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
        super().on_session_close(ssn)

    def _pod(self, task: TaskInfo) -> tuple[PodRequests, tuple[PreferredTerm, ...]]:
        """The pod's requests and terms, remembered for the task being scored: the session
        scores one task on every node in a row."""
        cached = self._read(task)
        return cached[1], cached[2]

    def _read(self, task: TaskInfo) -> _PodRead:
        cached = self._last
        if cached is None or cached[0] is not task:
            pod, terms = PodRequests.of(task), preferred_terms(task)
            shape = (pod, tuple((w, tuple(map(_requirement, reqs))) for w, reqs in terms))
            cached = self._last = (task, pod, terms, shape)
        return cached

    # --- kept per pod shape (table_scoring.KeptScores) -----------------------------------

    def shape(self, task: TaskInfo) -> Hashable:
        """The requests and the preferred terms: all the per-node scores read of a pod."""
        return self._read(task)[3]

    def rows_part(self, table: NodeTable, task: TaskInfo, rows: RowArray) -> FloatArray | None:
        """Every per-node score times its weight, summed in Volcano's order on float64."""
        pod, terms = self._pod(task)
        weighted = self._weighted(pod, terms, TableRows(table, rows))
        if any(scores.dtype != np.int64 for scores, _ in weighted):
            return None  # an amount beyond EXACT_LIMIT
        score = np.zeros(len(rows), dtype=np.float64)
        for scores, weight in weighted:
            score += scores * weight
        return score

    def row_scorer(self, task: TaskInfo) -> RowScorer | None:
        pod, terms = self._pod(task)
        part = node_part(self.args, pod, terms)
        return None if part is None else part.score

    def _weighted(
        self, pod: PodRequests, terms: tuple[PreferredTerm, ...], nodes: ScoredNodes
    ) -> list[tuple[WholeArray, int]]:
        """Volcano's per-node scores (every score but taint toleration) on ``nodes``, each
        beside its weight, in Volcano's order; the zero-weighted ones are not computed."""
        weighted: list[tuple[WholeArray, int]] = []
        if self.args.least_requested_weight != 0 or self.args.most_requested_weight != 0:
            pairs = cpu_memory_requests(pod, nodes)
            if self.args.least_requested_weight != 0:
                least = mean_resource_scores(pairs, least_requested_scores)
                weighted.append((least, self.args.least_requested_weight))
            if self.args.most_requested_weight != 0:
                most = mean_resource_scores(pairs, most_requested_scores)
                weighted.append((most, self.args.most_requested_weight))
        if self.args.balanced_resource_weight != 0:
            balanced = balanced_resource_scores(pod, nodes)
            weighted.append((balanced, self.args.balanced_resource_weight))
        if self.args.node_affinity_weight != 0 and terms:
            weighted.append((node_affinity_scores(terms, nodes), self.args.node_affinity_weight))
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
                log.log(v(4), self.score_line, task.namespace, task.name, node.name, score)
            totals.append(score)
        return totals

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """Volcano's per-node ``NodeOrderFn`` for one node."""
        return self.per_node_scores(task, [node])[0]

    def taint_toleration_score(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        """Volcano's ``BatchNodeOrderFn``: taint toleration, normalised over ``nodes``."""
        if self.args.taint_toleration_weight == 0:
            return {}
        raw = {node.name: intolerable_prefer_no_schedule(task, node) for node in nodes}
        normalized = normalize_reverse_scores(whole_values(list(raw.values()))).tolist()
        weight = self.args.taint_toleration_weight
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
        does not follow (``short_scores``)."""
        pod, terms = self._pod(task)
        scores = short_scores(self.args, pod, terms, task, nodes)
        if scores is None:
            return None
        extra = self._pod_level_scores(task, nodes)
        if extra is not None:
            for name in scores:
                scores[name] += extra[name]
        return scores

    # --- vectorised path ----------------------------------------------------------------

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
            self.args.least_requested_weight,
            self.args.most_requested_weight,
            self.args.balanced_resource_weight,
            self.args.taint_toleration_weight,
        )
        term_total = sum(abs(weight) for weight, _ in terms)
        if not all(fits_exactly(w * MAX_NODE_SCORE) for w in weights) or not fits_exactly(
            term_total * self.args.node_affinity_weight
        ):
            return None
        if self.args.balanced_resource_weight != 0 and not all(
            table.column(name).exact for name, _ in pod.balanced
        ):
            return None
        score = self.kept_part(table, task, rows)
        if score is None:
            return None
        if self.args.taint_toleration_weight != 0:
            raw = table.prefer_no_schedule_counts(task)[rows]
            score += normalize_reverse_scores(raw) * self.args.taint_toleration_weight
        extra = self._pod_level_scores(task, nodes)
        if extra is not None:
            score += np.fromiter((extra[n] for n in names), np.float64, len(names))
        return NodeScoreArray(names, score)
