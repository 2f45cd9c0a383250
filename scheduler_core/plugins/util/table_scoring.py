"""What nodeorder and binpack share as scoring plugins: the session's ``NodeTable`` and the
choice of path for each batch call.

Each of them scores a call three ways, to the same floats: node by node on Python numbers
for a short list (``short_node_scores``, cheaper below ``SHORT_LIST_NODES``), on the table's
arrays (``vector_node_scores``), and on arrays read from the nodes themselves
(``scalar_node_scores``: V(4) logging per node, nodes the table does not hold, weights or
amounts too large for the array path). Which path serves, and how the table is kept up with
the session, is the same for both, so it is written once here; the formulas stay with each
plugin.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Mapping
from typing import ClassVar

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.node_scores import NodeScoreArray
from scheduler_core.framework.registry import FollowStep, Plugin, UsageChange
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v
from scheduler_core.plugins.util.node_table import EXACT_LIMIT, NodeTable, follow_nodes
from scheduler_core.plugins.util.short_lists import SHORT_LIST_NODES


def fits_exactly(value: int) -> bool:
    """Whether a weight (or a weight times a score) is small enough for the array path to
    be exact in int64 and float64."""
    return abs(value) < EXACT_LIMIT


class TableScoredPlugin(Plugin):
    """A scoring plugin whose batch node-order hook runs over the session's ``NodeTable``.

    A subclass opens the table in ``on_session_open`` (``open_table``) when it scores at
    all, and gives its three paths; the table's rows follow a change of usage, and the
    table is released when the session closes (its arrays stay for the next session's).
    """

    #: the plugin's own logger: its verbosity picks the path, and its score lines go there
    score_log: ClassVar[logging.Logger]
    #: the V(4) line for one node's score: task namespace, task name, node, score
    score_line: ClassVar[str]

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self._verbose = False
        self._table: NodeTable | None = None

    def open_table(self, ssn: Session) -> None:
        """Score over ``ssn``'s table from now on; per node while V(4) is on."""
        self._verbose = self.score_log.isEnabledFor(v(4))
        self._table = NodeTable.of(ssn)

    def on_session_close(self, ssn: Session) -> None:
        if self._table is not None:
            self._table.release_nodes()  # its arrays stay for the next session's table
            self._table = None

    def can_follow(self, ssn: Session) -> bool:
        return True

    def follow(self, ssn: Session, change: UsageChange) -> FollowStep:
        return follow_nodes(self._table, change)

    @abstractmethod
    def short_node_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float] | None:
        """The scores on Python numbers, node by node; None where that path cannot give
        the array path's floats."""

    @abstractmethod
    def vector_node_scores(
        self, table: NodeTable, task: TaskInfo, nodes: list[NodeInfo]
    ) -> NodeScoreArray | None:
        """The scores on the table's arrays; None when a node is not in the table or the
        arrays cannot be exact."""

    @abstractmethod
    def scalar_node_scores(self, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, float]:
        """The scores on arrays read from ``nodes`` themselves: always an answer."""

    def batch_node_score(self, task: TaskInfo, nodes: list[NodeInfo]) -> Mapping[str, float]:
        """The batch hook: a short list in plain Python, else the table, else per node."""
        if len(nodes) <= SHORT_LIST_NODES and not self._verbose:
            short = self.short_node_scores(task, nodes)
            if short is not None:
                return short
        if self._table is not None:
            scores = self.vector_node_scores(self._table, task, nodes)
            if scores is not None:
                if self._verbose:  # logging only: the scores are the table's at any -v
                    for name, score in scores.items():
                        self.score_log.log(
                            v(4), self.score_line, task.namespace, task.name, name, score
                        )
                return scores
        return self.scalar_node_scores(task, nodes)
