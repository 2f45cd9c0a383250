"""ScoredNodes: what the node-order formulas read, one array element per scored node.

nodeorder's and binpack's formulas are each written once, on arrays. The batch hooks run
them on rows of the session's ``NodeTable`` (built once, kept current); the per-node paths
(V(4) logging node by node, nodes that are not the session's, amounts too large for int64)
run the same code on arrays read straight from the nodes they are given. Both sources answer
the same two questions, so a formula cannot tell which one it is reading.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import NodeSelectorRequirement
from scheduler_core.plugins.predicates import term_matches
from scheduler_core.plugins.util.node_table import BoolArray, FloatArray, NodeTable, RowArray


@dataclass(frozen=True, slots=True)
class Amounts:
    """One resource on the scored nodes, element ``i`` for the ``i``-th node."""

    allocatable: FloatArray
    #: what the node's bound (and binding) tasks request
    used: FloatArray
    #: what the tasks pipelined onto the node request
    pipelined: FloatArray


class ScoredNodes(Protocol):
    """The nodes one scoring call is about, in the order asked (repeats allowed)."""

    @property
    def count(self) -> int: ...

    def amounts(self, name: str) -> Amounts:
        """The resource ``name`` (Kubernetes name: ``cpu`` in millicores, ``memory`` in
        bytes, an extended resource in its units) on each node."""
        ...

    def term_mask(self, requirements: Sequence[NodeSelectorRequirement]) -> BoolArray:
        """Which nodes satisfy every requirement of a node-selector term (an empty term
        matches no node, as in Kubernetes)."""
        ...


class ReadAmounts(Protocol):
    """One side of a node's amounts (allocatable, used, pipelined), per resource."""

    def get(self, name: str) -> float: ...


class ReadNode(Protocol):
    """What the node-by-node scorers read of one node: a ``NodeInfo``, or a table row read
    as one (``NodeTable.row``), so a row re-scored alone gets what the arrays give it."""

    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def allocatable(self) -> ReadAmounts: ...

    @property
    def used(self) -> ReadAmounts: ...

    @property
    def pipelined(self) -> ReadAmounts: ...


def node_matches_term(requirements: Sequence[NodeSelectorRequirement], node: ReadNode) -> bool:
    """One element of ``term_mask``, for the scorers that go node by node."""
    return term_matches(requirements, node.labels)


@dataclass(frozen=True, slots=True)
class TableRows:
    """Rows of the session's ``NodeTable``: the batch hooks' source (columns kept current
    by the table, requirement masks shared by every pod)."""

    table: NodeTable
    rows: RowArray

    @property
    def count(self) -> int:
        return len(self.rows)

    def amounts(self, name: str) -> Amounts:
        col = self.table.column(name)
        rows = self.rows
        return Amounts(col.allocatable[rows], col.used[rows], col.pipelined[rows])

    def term_mask(self, requirements: Sequence[NodeSelectorRequirement]) -> BoolArray:
        if not requirements:
            return np.zeros(len(self.rows), dtype=bool)
        matched = self.table.requirement_mask(requirements[0])
        for req in requirements[1:]:
            matched = matched & self.table.requirement_mask(req)
        mask: BoolArray = matched[self.rows]
        return mask


@dataclass(frozen=True, slots=True)
class GivenNodes:
    """Nodes read as they are, whatever session (if any) they belong to: the per-node
    paths' source. A resource is read once per instance."""

    nodes: Sequence[NodeInfo]
    _read: dict[str, Amounts] = field(default_factory=dict, compare=False, repr=False)

    @property
    def count(self) -> int:
        return len(self.nodes)

    def amounts(self, name: str) -> Amounts:
        found = self._read.get(name)
        if found is None:
            nodes, count = self.nodes, len(self.nodes)
            found = self._read[name] = Amounts(
                np.fromiter((n.allocatable.get(name) for n in nodes), np.float64, count),
                np.fromiter((n.used.get(name) for n in nodes), np.float64, count),
                np.fromiter((n.pipelined.get(name) for n in nodes), np.float64, count),
            )
        return found

    def term_mask(self, requirements: Sequence[NodeSelectorRequirement]) -> BoolArray:
        nodes = self.nodes
        return np.fromiter(
            (term_matches(requirements, n.labels) for n in nodes), np.bool_, len(nodes)
        )
