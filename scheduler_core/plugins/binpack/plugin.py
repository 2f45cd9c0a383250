"""binpack: prefer the node the pod fills best, so whole nodes stay free for big pods.

Volcano's formula: for every resource the pod requests that has a weight,
``(used + request) / allocatable * weight``; the sum is divided by the sum of those weights
and scaled by ``MaxNodeScore (100) * binpack.weight``. A node where any weighted resource
would overflow scores 0. Arguments (``args.py``): ``binpack.weight`` (1), ``binpack.cpu``
(1), ``binpack.memory`` (1), ``binpack.resources`` (comma-separated extra resource names)
and ``binpack.resources.<name>`` (1); a negative resource weight is taken as 1.

The hook is a batch one, vectorised with numpy over the session's ``NodeTable`` (shared
with nodeorder, as is the choice of path: ``plugins/util/table_scoring.py``). The formula
is written once, on arrays (``binpacking_scores``): the batch hook runs it on the table's
rows, the per-node path (V(4) logging, nodes outside the table) on arrays read from the
nodes it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from functools import partial
from operator import attrgetter
from typing import ClassVar

import numpy as np

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.hooks import BATCH_NODE_ORDER
from scheduler_core.framework.node_scores import NodeScoreArray
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v
from scheduler_core.plugins.binpack.args import BinpackArgs
from scheduler_core.plugins.util.node_table import BoolArray, FloatArray, NodeTable, RowArray
from scheduler_core.plugins.util.scored_nodes import GivenNodes, ReadNode, ScoredNodes, TableRows
from scheduler_core.plugins.util.table_scoring import RowScorer, TableScoredPlugin, fits_exactly

log = logging.getLogger("scheduler_core.plugins.binpack")

MAX_NODE_SCORE = 100

_NAME = attrgetter("name")


def weighted_requests(task: TaskInfo, weights: BinpackArgs) -> list[tuple[str, float, int]]:
    """(resource, request, weight) for every resource the pod requests that has a weight."""
    requested = task.resreq
    out: list[tuple[str, float, int]] = []
    for name in requested.resource_names():
        request = requested.get(name)
        if request == 0:
            continue
        weight = weights.resources.get(name)
        if weight is not None:
            out.append((name, request, weight))
    return out


def binpacking_scores(
    nodes: ScoredNodes, weights: BinpackArgs, requests: Sequence[tuple[str, float, int]]
) -> FloatArray:
    """The binpack score of each node for a pod with ``requests`` (``weighted_requests``)."""
    return _binpacking(nodes, weights, requests)[0]


def _binpacking(
    nodes: ScoredNodes, weights: BinpackArgs, requests: Sequence[tuple[str, float, int]]
) -> tuple[FloatArray, list[BoolArray]]:
    """The scores, and per request the nodes where it overflows.

    Per resource, ``(request + used) * weight / allocatable``, or 0 where the resource is
    unweighted or the node has none of it; every weight is counted in the divisor all the
    same. A node where a weighted resource would overflow its allocatable scores 0.0.
    """
    score = np.zeros(nodes.count, dtype=np.float64)
    overflowed = np.zeros(nodes.count, dtype=bool)
    overflows: list[BoolArray] = []
    weight_sum = 0
    for name, request, weight in requests:
        amounts = nodes.amounts(name)
        allocatable = amounts.allocatable
        used_finally = request + amounts.used
        unscored = allocatable == 0 if weight != 0 else np.ones(nodes.count, dtype=bool)
        over = ~unscored & (used_finally > allocatable)
        overflows.append(over)
        overflowed |= over
        safe = np.where(unscored, 1.0, allocatable)
        score += np.where(unscored | over, 0.0, used_finally * weight / safe)
        weight_sum += weight
    if weight_sum > 0:
        score /= weight_sum
    result: FloatArray = score * MAX_NODE_SCORE * weights.weight
    result[overflowed] = 0.0
    return result, overflows


def _node_score(
    node: ReadNode, requests: Sequence[tuple[str, float, int]], weight_sum: int, factor: int
) -> float:
    """``binpacking_scores`` of one node on Python numbers, the same operations in the same
    order, so the same float."""
    score = 0.0
    overflowed = False
    for name, request, weight in requests:
        allocatable = node.allocatable.get(name)
        used_finally = request + node.used.get(name)
        if weight != 0 and allocatable != 0:
            if used_finally > allocatable:
                overflowed = True
            else:
                score += used_finally * weight / allocatable
    if weight_sum > 0:
        score /= weight_sum
    return 0.0 if overflowed else score * MAX_NODE_SCORE * factor


class BinpackPlugin(TableScoredPlugin[BinpackArgs]):
    """Registered as a batch hook computed over the session's ``NodeTable``; the per-node
    path serves at V(4) (to log per node) and for nodes outside the table."""

    name = "binpack"
    args_type: ClassVar[type[BinpackArgs]] = BinpackArgs
    score_log = log
    score_line = "Binpack score for Task %s/%s on node %s is: %s"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self._last: tuple[TaskInfo, list[tuple[str, float, int]]] | None = None

    def on_session_open(self, ssn: Session) -> None:
        log.log(v(4), "Enter binpack plugin ... %s", self.args)
        if self.args.weight == 0:
            log.info("binpack weight is zero, skip node order function")
            return
        self.open_table(ssn)
        ssn.add_hook(BATCH_NODE_ORDER, self.name, self.batch_node_score)

    def _requests(self, task: TaskInfo) -> list[tuple[str, float, int]]:
        cached = self._last
        if cached is None or cached[0] is not task:
            cached = self._last = (task, weighted_requests(task, self.args))
        return cached[1]

    def per_node_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> list[float]:
        """Volcano's per-node ``NodeOrderFn`` for each of ``nodes``, read from the nodes
        themselves; at V(4) each node's score is logged, after the resource that first
        overflows it if one does."""
        requests = self._requests(task)
        scores, overflows = _binpacking(GivenNodes(nodes), self.args, requests)
        totals: list[float] = scores.tolist()
        if self._verbose:
            for i, node in enumerate(nodes):
                self._log(task, node, requests, [over[i] for over in overflows], totals[i])
        return totals

    def _log(
        self,
        task: TaskInfo,
        node: NodeInfo,
        requests: list[tuple[str, float, int]],
        overflows: list[np.bool_],
        score: float,
    ) -> None:
        for (name, request, _), over in zip(requests, overflows, strict=True):
            if over:
                log.log(
                    v(4),
                    "task %s/%s cannot binpack node %s: resource: %s is not enough, need %f, "
                    "used %f, allocatable %f",
                    task.namespace,
                    task.name,
                    node.name,
                    name,
                    request,
                    node.used.get(name),
                    node.allocatable.get(name),
                )
                break
        log.log(v(4), self.score_line, task.namespace, task.name, node.name, score)

    def node_score(self, task: TaskInfo, node: NodeInfo) -> float:
        """Volcano's per-node ``NodeOrderFn`` for one node."""
        return self.per_node_scores(task, [node])[0]

    def scalar_node_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        """The batch hook's answer on the per-node path (a node listed twice counts once)."""
        return dict(zip(map(_NAME, nodes), self.per_node_scores(task, nodes), strict=True))

    def short_node_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float] | None:
        """``vector_node_scores`` node by node on Python numbers, the same operations in the
        same order, so the same floats; ``None`` when a weight is too large (as there)."""
        requests = self._requests(task)
        weight_sum = sum(weight for _, _, weight in requests)
        if not (fits_exactly(self.args.weight) and fits_exactly(weight_sum)):
            return None
        factor = self.args.weight
        return {node.name: _node_score(node, requests, weight_sum, factor) for node in nodes}

    # --- kept per pod shape (table_scoring.KeptScores) -----------------------------------

    def shape(self, task: TaskInfo) -> Hashable:
        """The weighted requests: all the score reads of a pod."""
        return tuple(self._requests(task))

    def rows_part(self, table: NodeTable, task: TaskInfo, rows: RowArray) -> FloatArray:
        return binpacking_scores(TableRows(table, rows), self.args, self._requests(task))

    def row_scorer(self, task: TaskInfo) -> RowScorer:
        requests = self._requests(task)
        weight_sum = sum(weight for _, _, weight in requests)
        return partial(
            _node_score, requests=requests, weight_sum=weight_sum, factor=self.args.weight
        )

    def vector_node_scores(
        self, table: NodeTable, task: TaskInfo, nodes: list[NodeInfo]
    ) -> NodeScoreArray | None:
        """``scalar_node_scores`` on arrays, to the same float; ``None`` when a node is not
        in the table or a weight is too large to convert to float exactly."""
        found = table.rows(nodes)
        if found is None:
            return None
        rows, names = found
        requests = self._requests(task)
        weight_sum = sum(weight for _, _, weight in requests)
        if not (fits_exactly(self.args.weight) and fits_exactly(weight_sum)):
            return None
        scores = self.kept_part(table, task, rows)
        return None if scores is None else NodeScoreArray(names, scores)
