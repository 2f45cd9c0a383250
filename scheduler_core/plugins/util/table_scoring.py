"""What nodeorder and binpack share as scoring plugins: the session's ``NodeTable`` and the
choice of path for each batch call.

Each of them scores a call three ways, to the same floats: node by node on Python numbers
for a short list (``short_node_scores``, cheaper below ``SHORT_LIST_NODES``), on the table's
arrays (``vector_node_scores``), and on arrays read from the nodes themselves
(``scalar_node_scores``: V(4) logging per node, nodes the table does not hold, weights or
amounts too large for the array path). Which path serves, and how the table is kept up with
the session, is the same for both, so it is written once here; the formulas stay with each
plugin.

On the table, a pod's per-node scores (every score that does not depend on which nodes are
offered together) are kept per pod shape over every row (``KeptScores``): the pods of a job
ask alike, call after call, and between two calls only the rows the table re-read since
(a pod bound, a task ended) can score differently. Those are scored again one by one on
Python numbers, from the table's own amounts, with the same operations as the arrays, so a
kept score is the float the arrays would give now.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.node_scores import NodeScoreArray
from scheduler_core.framework.registry import ArgsT, FollowStep, Plugin, UsageChange
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v
from scheduler_core.plugins.util.node_table import (
    EXACT_LIMIT,
    FloatArray,
    NodeTable,
    RowArray,
    follow_nodes,
)
from scheduler_core.plugins.util.scored_nodes import ReadNode
from scheduler_core.plugins.util.short_lists import SHORT_LIST_NODES


def fits_exactly(value: int) -> bool:
    """Whether a weight (or a weight times a score) is small enough for the array path to
    be exact in int64 and float64."""
    return abs(value) < EXACT_LIMIT


#: Pod shapes a plugin keeps scores for; past this many it starts again (a session that
#: lives long must not grow without bound).
KEPT_SHAPES = 64

#: One row's per-node score on Python numbers, or ``None`` where the arrays' path declines.
RowScorer = Callable[[ReadNode], float | None]


@dataclass(slots=True)
class KeptScores:
    """One pod shape's per-node scores on every row of the table, current at ``mark``
    (``NodeTable.mark``). Changed in place by the scoring calls, which their callers
    serialize as they serialize every use of a session (prioritize scores the accounting
    session under the cache's lock)."""

    scores: FloatArray
    mark: int


def _score_again(table: NodeTable, scorer: RowScorer, kept: KeptScores, changed: list[int]) -> bool:
    """Score ``changed`` rows again into ``kept`` and move its mark past them; False,
    having changed nothing, where a row cannot be scored on Python numbers (an amount too
    large for int64)."""
    fresh: dict[int, float] = {}
    for row in changed:
        if row not in fresh:
            score = scorer(table.row(row))
            if score is None:
                return False
            fresh[row] = score
    for row, score in fresh.items():
        kept.scores[row] = score
    kept.mark += len(changed)
    return True


class TableScoredPlugin(Plugin[ArgsT]):
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
        self._kept: dict[Hashable, KeptScores] = {}

    def open_table(self, ssn: Session) -> None:
        """Score over ``ssn``'s table from now on; per node while V(4) is on."""
        self._verbose = self.score_log.isEnabledFor(v(4))
        self._table = NodeTable.of(ssn)
        self._kept = {}

    def on_session_close(self, ssn: Session) -> None:
        if self._table is not None:
            self._table.release_nodes()  # its arrays stay for the next session's table
            self._table = None
        self._kept = {}

    def can_follow(self, ssn: Session) -> bool:
        return True

    def follow(self, ssn: Session, change: UsageChange) -> FollowStep:
        return follow_nodes(self._table, change)

    @abstractmethod
    def shape(self, task: TaskInfo) -> Hashable:
        """Everything of ``task`` the per-node scores read: two pods of one shape score
        alike on every node."""

    @abstractmethod
    def rows_part(self, table: NodeTable, task: TaskInfo, rows: RowArray) -> FloatArray | None:
        """The per-node scores on ``rows`` of the table's arrays (the part of the score
        that does not depend on which nodes are offered together); ``None`` where the
        arrays cannot be exact."""

    @abstractmethod
    def row_scorer(self, task: TaskInfo) -> RowScorer | None:
        """``rows_part`` for one row at a time, on Python numbers, to the same float;
        ``None`` where that path cannot give the arrays' floats for this pod."""

    def kept_part(self, table: NodeTable, task: TaskInfo, rows: RowArray) -> FloatArray | None:
        """``rows_part`` on ``rows``, from the scores kept for ``task``'s shape: the rows
        the table re-read since are scored again first, one by one, or the whole table
        when more changed than a short list holds. A pod no row can be scored again for
        one by one is not kept: its kept scores could never be brought up to date, and
        each call would score the whole table. A new array, the caller's to change."""
        scorer = self.row_scorer(task)
        if scorer is None:
            return self.rows_part(table, task, rows)
        shape = self.shape(task)
        kept = self._kept.get(shape)
        changed = None if kept is None else table.changed_since(kept.mark)
        if kept is not None and changed is not None and len(changed) <= SHORT_LIST_NODES:
            if changed and not _score_again(table, scorer, kept, changed):
                del self._kept[shape]
                return self.rows_part(table, task, rows)
            return kept.scores[rows]
        mark = table.mark()  # before reading: a row re-read meanwhile is scored again later
        scores = self.rows_part(table, task, table.all_rows())
        if scores is None:  # a row too large for the arrays: perhaps not an offered one
            self._kept.pop(shape, None)
            return self.rows_part(table, task, rows)
        if len(self._kept) >= KEPT_SHAPES:
            self._kept.clear()
        self._kept[shape] = KeptScores(scores, mark)
        return scores[rows]

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
