"""binpack: prefer the node the pod fills best, so whole nodes stay free for big pods.

Volcano's formula: for every resource the pod requests that has a weight,
``(used + request) / allocatable * weight``; the sum is divided by the sum of those weights
and scaled by ``MaxNodeScore (100) * binpack.weight``. A node where any weighted resource
would overflow scores 0. Arguments: ``binpack.weight`` (1), ``binpack.cpu`` (1),
``binpack.memory`` (1), ``binpack.resources`` (comma-separated extra resource names) and
``binpack.resources.<name>`` (1); a negative resource weight is taken as 1.

The hook is a batch one, vectorised with numpy over the session's ``NodeTable`` (shared
with nodeorder). The formula is written once, on arrays (``binpacking_scores``): the batch
hook runs it on the table's rows, the per-node path (V(4) logging, nodes outside the table)
on arrays read from the nodes it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter

import numpy as np

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.hooks import BATCH_NODE_ORDER
from scheduler_core.framework.node_scores import NodeScoreArray
from scheduler_core.framework.registry import FollowStep, Plugin, UsageChange, register_plugin
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v
from scheduler_core.plugins.util.node_table import (
    EXACT_LIMIT,
    BoolArray,
    FloatArray,
    NodeTable,
    follow_nodes,
)
from scheduler_core.plugins.util.scored_nodes import GivenNodes, ScoredNodes, TableRows
from scheduler_core.plugins.util.short_lists import SHORT_LIST_NODES

log = logging.getLogger("scheduler_core.plugins.binpack")

MAX_NODE_SCORE = 100

_NAME = attrgetter("name")

BINPACK_WEIGHT = "binpack.weight"
BINPACK_CPU = "binpack.cpu"
BINPACK_MEMORY = "binpack.memory"
BINPACK_RESOURCES = "binpack.resources"
BINPACK_RESOURCES_PREFIX = BINPACK_RESOURCES + "."


@dataclass(slots=True)
class BinpackWeights:
    weight: int = 1
    cpu: int = 1
    memory: int = 1
    #: every scored resource by name, cpu and memory included
    resources: dict[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        extra = ", ".join(
            f"{name}[{w}]" for name, w in self.resources.items() if name not in ("cpu", "memory")
        )
        return (
            f"{BINPACK_WEIGHT}[{self.weight}], {BINPACK_CPU}[{self.cpu}], "
            f"{BINPACK_MEMORY}[{self.memory}], {extra or 'no extend resources.'}"
        )


def _non_negative(value: int) -> int:
    return 1 if value < 0 else value


def parse_weights(arguments: Arguments) -> BinpackWeights:
    weights = BinpackWeights(
        weight=arguments.get_int(BINPACK_WEIGHT, 1),
        cpu=_non_negative(arguments.get_int(BINPACK_CPU, 1)),
        memory=_non_negative(arguments.get_int(BINPACK_MEMORY, 1)),
    )
    for raw in arguments.get_str(BINPACK_RESOURCES, "").split(","):
        name = raw.strip()
        if name:
            weights.resources[name] = _non_negative(
                arguments.get_int(BINPACK_RESOURCES_PREFIX + name, 1)
            )
    weights.resources["cpu"] = weights.cpu
    weights.resources["memory"] = weights.memory
    return weights


def weighted_requests(task: TaskInfo, weights: BinpackWeights) -> list[tuple[str, float, int]]:
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
    nodes: ScoredNodes, weights: BinpackWeights, requests: Sequence[tuple[str, float, int]]
) -> FloatArray:
    """The binpack score of each node for a pod with ``requests`` (``weighted_requests``)."""
    return _binpacking(nodes, weights, requests)[0]


def _binpacking(
    nodes: ScoredNodes, weights: BinpackWeights, requests: Sequence[tuple[str, float, int]]
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


def _fits(value: int) -> bool:
    return abs(value) < EXACT_LIMIT


@register_plugin
class BinpackPlugin(Plugin):
    """Registered as a batch hook computed over the session's ``NodeTable``; the per-node
    path serves at V(4) (to log per node) and for nodes outside the table."""

    name = "binpack"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.weights = parse_weights(arguments)
        self._verbose = False
        self._table: NodeTable | None = None
        self._last: tuple[TaskInfo, list[tuple[str, float, int]]] | None = None

    def on_session_open(self, ssn: Session) -> None:
        log.log(v(4), "Enter binpack plugin ... %s", self.weights)
        if self.weights.weight == 0:
            log.info("binpack weight is zero, skip node order function")
            return
        self._verbose = log.isEnabledFor(v(4))
        self._table = NodeTable.of(ssn)
        ssn.add_hook(BATCH_NODE_ORDER, self.name, self.batch_node_score)

    def on_session_close(self, ssn: Session) -> None:
        if self._table is not None:
            self._table.release_nodes()  # its arrays stay for the next session's table
            self._table = None

    def can_follow(self, ssn: Session) -> bool:
        return True

    def follow(self, ssn: Session, change: UsageChange) -> FollowStep:
        return follow_nodes(self._table, change)

    def _requests(self, task: TaskInfo) -> list[tuple[str, float, int]]:
        cached = self._last
        if cached is None or cached[0] is not task:
            cached = self._last = (task, weighted_requests(task, self.weights))
        return cached[1]

    def per_node_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> list[float]:
        """Volcano's per-node ``NodeOrderFn`` for each of ``nodes``, read from the nodes
        themselves; at V(4) each node's score is logged, after the resource that first
        overflows it if one does."""
        requests = self._requests(task)
        scores, overflows = _binpacking(GivenNodes(nodes), self.weights, requests)
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
        log.log(
            v(4),
            "Binpack score for Task %s/%s on node %s is: %s",
            task.namespace,
            task.name,
            node.name,
            score,
        )

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
        if not (_fits(self.weights.weight) and _fits(weight_sum)):
            return None
        factor = self.weights.weight
        scores: dict[str, float] = {}
        for node in nodes:
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
            scores[node.name] = 0.0 if overflowed else score * MAX_NODE_SCORE * factor
        return scores

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
                            "Binpack score for Task %s/%s on node %s is: %s",
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
        """``scalar_node_scores`` on arrays, to the same float; ``None`` when a node is not
        in the table or a weight is too large to convert to float exactly."""
        found = table.rows(nodes)
        if found is None:
            return None
        rows, names = found
        requests = self._requests(task)
        weight_sum = sum(weight for _, _, weight in requests)
        if not (_fits(self.weights.weight) and _fits(weight_sum)):
            return None
        return NodeScoreArray(
            names, binpacking_scores(TableRows(table, rows), self.weights, requests)
        )
