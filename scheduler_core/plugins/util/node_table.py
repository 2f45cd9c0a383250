"""NodeTable: a session's nodes as numpy columns, for the vectorised node scores.

Scoring one pod on 5,000 nodes through per-node Python costs ~30 ms; with the nodes'
amounts in arrays it is a few dozen vector operations. nodeorder and binpack both score on
the same table.

Reading 5,000 nodes into arrays is itself ~15 ms of Python, and the extender opens a new
session after every cluster event. So a table does not start from nothing when an earlier
table covered the same nodes: it copies that table's arrays and re-reads only the rows whose
node changed since. A node's ``stamp`` (fresh from one process-wide counter whenever the node
is created or a task is added to or removed from it) says whether it did: an equal stamp is
the same object in the same state.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from operator import attrgetter, is_, methodcaller

import numpy as np
import numpy.typing as npt

from scheduler_core.api.node import NodeInfo, Taint
from scheduler_core.api.task import NodeSelectorRequirement, TaskInfo
from scheduler_core.framework.registry import FollowStep, UsageChange, follows_nothing
from scheduler_core.framework.session import EventHandler, Session
from scheduler_core.plugins.predicates import (
    PREFER_NO_SCHEDULE,
    requirement_matches,
    untolerated_taint,
)

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

#: How many re-read rows a table remembers at least (``changed_since``); twice its rows if
#: that is more. A keeper of scores further behind re-scores the whole table.
_CHANGES_KEPT = 256

#: ``Session.memos`` slot of the tables another table may start from: the last few that
#: read their nodes among the sessions of one owner. Two, so that the accounting session's
#: lineage survives a one-off session over copied nodes in between.
DONORS_SLOT = "node_table.donors"

#: ``Session.shared`` slot of the session's own table (nodeorder and binpack share it).
TABLE_SLOT = "node_table"


def _donors() -> deque[NodeTable]:
    return deque(maxlen=2)


_NAME = attrgetter("name")
_STAMP = attrgetter("stamp")
_LABELS = attrgetter("labels")
_TAINTS = attrgetter("taints")

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


def _requirement_key(req: NodeSelectorRequirement) -> RequirementKey:
    return (req.key, req.operator, req.values)


def _prefer_tainted(node: NodeInfo) -> bool:
    return any(t.effect == PREFER_NO_SCHEDULE for t in node.taints)


@dataclass(slots=True)
class ResourceColumn:
    """One resource over the session's nodes, row order fixed by the table."""

    allocatable: FloatArray
    used: FloatArray
    pipelined: FloatArray
    #: every value below ``EXACT_LIMIT`` (integer arithmetic on it is exact in int64)
    exact: bool

    def copy(self) -> ResourceColumn:
        return ResourceColumn(
            self.allocatable.copy(), self.used.copy(), self.pipelined.copy(), self.exact
        )

    def reread(self, name: str, node: NodeInfo, row: int) -> bool:
        """Read one row again; whether its three amounts are below ``EXACT_LIMIT`` (what
        ``_below_limit`` says of them, asked of three numbers without three arrays)."""
        allocatable = self.allocatable[row] = node.allocatable.get(name)
        used = self.used[row] = node.used.get(name)
        pipelined = self.pipelined[row] = node.pipelined.get(name)
        return (
            abs(allocatable) < EXACT_LIMIT
            and abs(used) < EXACT_LIMIT
            and abs(pipelined) < EXACT_LIMIT
        )

    def recheck(self) -> None:
        self.exact = _below_limit(self.allocatable, self.used, self.pipelined)


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

    Columns are built on first use (a cluster without GPU pods never reads GPUs) and kept
    for the session: its node set is fixed, and the session's own node changes (statements
    allocating, pipelining, evicting, discarding) reach the table through the session's
    allocate/deallocate events, which mark the node's row for re-reading. Nodes changed
    behind the session's back (the live cache) are seen at the next session, or once
    whoever keeps the session current names them (``nodes_changed``).

    A node the table does not hold (a simulation's clone, a node not in the session) makes
    ``rows`` answer ``None``: callers then score on the scalar path.
    """

    def __init__(
        self, nodes: Mapping[str, NodeInfo], donors: deque[NodeTable] | None = None
    ) -> None:
        self._source = nodes
        #: Tables this one may start from, and joins once it has read its nodes.
        self._donors = donors if donors is not None else _donors()
        self._released = False
        self._nodes: list[NodeInfo] | None = None
        self._names: list[str] = []
        self._stamps: IntArray = np.zeros(0, dtype=np.int64)
        self._ids: list[int] = []
        self._labels_of: list[dict[str, str]] = []
        self._taints_of: list[tuple[Taint, ...]] = []
        self._row_of_id: dict[int, int] = {}
        self._row_of_name: dict[str, int] = {}
        self._columns: dict[str, ResourceColumn] = {}
        self._labels: dict[str, _LabelColumn] = {}
        self._requirement_masks: dict[RequirementKey, BoolArray] = {}
        self._tainted: BoolArray | None = None
        self._prefer_tainted: list[int] | None = None
        self._taint_counts: dict[TolerationsKey, IntArray] = {}
        self._placed: dict[str, str] = {}  # task uid -> node, from allocate events
        self._dirty: set[str] = set()
        self._last_rows: tuple[Sequence[NodeInfo], list[NodeInfo], RowArray, list[str]] | None = (
            None
        )
        #: rows re-read since the table read its nodes, in order (``changed_since``); the
        #: first entry's mark is ``_changes_base``
        self._changes: list[int] = []
        self._changes_base = 0

    @classmethod
    def of(cls, ssn: Session) -> NodeTable:
        """The session's table, created (and subscribed to its events) on first request,
        starting from the tables of the owner's earlier sessions; gone with the session."""

        def build() -> NodeTable:
            table = cls(ssn.nodes, ssn.memos.slot(DONORS_SLOT, _donors))
            ssn.add_event_handler(
                EventHandler(allocate=table.on_allocate, deallocate=table.on_deallocate)
            )
            # A donor outlives its session: it keeps its arrays, never the session's nodes.
            weakref.finalize(ssn, table.release_nodes)
            return table

        return ssn.shared.slot(TABLE_SLOT, build)

    def release_nodes(self) -> None:
        """Let go of the session's nodes once the session is over: the arrays stay, for a
        later table to start from, but a donor must not keep a simulation's copied nodes
        (and their tasks) alive. Scoring through the table afterwards takes the scalar
        path (no node is found in it)."""
        self._released = True
        self._source = {}
        if self._nodes is not None:
            self._nodes = []
        self._last_rows = None
        self._placed.clear()
        self._dirty.clear()

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

    def nodes_changed(self, names: Iterable[str]) -> None:
        """The named nodes' amounts changed behind the session (the live cache, followed by
        a long-lived read-only session): their rows are read again before the next score."""
        self._dirty.update(names)

    def _current(self) -> list[NodeInfo]:
        nodes = self._nodes
        if nodes is None:
            nodes = self._nodes = list(self._source.values())
            self._read(nodes)
            self._dirty.clear()
            self._donors.append(self)
        elif self._dirty:
            for name in self._dirty:
                row = self._row_of_name.get(name)
                if row is not None:
                    self._reread_amounts(nodes[row], row)
            self._dirty.clear()
        return nodes

    def _read(self, nodes: list[NodeInfo]) -> None:
        """Index the nodes, starting from the donor table with the most unchanged rows (if
        it covers the same names in the same order)."""
        names = list(map(_NAME, nodes))
        stamps = np.fromiter(map(_STAMP, nodes), np.int64, len(nodes))
        donor: NodeTable | None = None
        best = 0
        for candidate in list(self._donors):  # a copy: another thread may append meanwhile
            if len(candidate._stamps) != len(stamps):
                continue
            same = int(np.count_nonzero(candidate._stamps == stamps))
            if same > best:
                donor, best = candidate, same
        if donor is not None and donor._names != names:
            donor = None
        self._names, self._stamps = names, stamps
        if donor is None:
            self._ids = list(map(id, nodes))
            self._row_of_id = {ident: row for row, ident in enumerate(self._ids)}
            self._row_of_name = {name: row for row, name in enumerate(names)}
            self._labels_of = list(map(_LABELS, nodes))
            self._taints_of = list(map(_TAINTS, nodes))
            return
        self._adopt(donor, nodes)

    def _adopt(self, donor: NodeTable, nodes: list[NodeInfo]) -> None:
        """Copy the donor's arrays, then re-read the rows whose node changed (another stamp:
        another object, or the same one with tasks added or removed since)."""
        changed = np.flatnonzero(donor._stamps != self._stamps).tolist()
        self._row_of_name = donor._row_of_name  # same names, same rows; never changed
        self._ids = list(donor._ids)
        self._labels_of = list(donor._labels_of)
        self._taints_of = list(donor._taints_of)
        self._columns = {name: col.copy() for name, col in donor._columns.items()}
        self._tainted = None if donor._tainted is None else donor._tainted.copy()
        labels_kept = True
        taints_kept = True
        replaced: list[int] = []
        for row in changed:
            node = nodes[row]
            for name, col in self._columns.items():
                col.reread(name, node, row)
            if id(node) != self._ids[row]:
                replaced.append(row)
            if node.labels is not self._labels_of[row]:
                labels_kept = labels_kept and node.labels == self._labels_of[row]
                self._labels_of[row] = node.labels
            if node.taints is not self._taints_of[row]:
                taints_kept = taints_kept and node.taints == self._taints_of[row]
                self._taints_of[row] = node.taints
            if self._tainted is not None:
                self._tainted[row] = _prefer_tainted(node)
        if replaced:
            # Every stale identity out before any new one goes in: a freed node's id may be
            # reused by the node that replaced another.
            self._row_of_id = dict(donor._row_of_id)
            for row in replaced:
                del self._row_of_id[self._ids[row]]
            for row in replaced:
                self._ids[row] = id(nodes[row])
                self._row_of_id[self._ids[row]] = row
        else:
            self._row_of_id = donor._row_of_id
        for col in self._columns.values():
            col.recheck()
        if labels_kept:
            self._labels = dict(donor._labels)
            self._requirement_masks = dict(donor._requirement_masks)
        if taints_kept:
            self._taint_counts = dict(donor._taint_counts)

    def _reread_amounts(self, node: NodeInfo, row: int) -> None:
        self._log_change(row)
        self._stamps[row] = node.stamp
        for name, col in self._columns.items():
            below = col.reread(name, node, row)
            col.exact = col.exact and below

    def _log_change(self, row: int) -> None:
        changes = self._changes
        if len(changes) >= max(_CHANGES_KEPT, 2 * len(self._names)):
            # Older marks cannot be answered any more: their keepers start again.
            self._changes_base += len(changes)
            changes.clear()
        changes.append(row)

    # --- what keeps scores per row ------------------------------------------------------

    def mark(self) -> int:
        """Where the table's changes stand now (the table brought up to date first): what
        ``changed_since`` takes, to name the rows re-read after this moment."""
        self._current()
        return self._changes_base + len(self._changes)

    def changed_since(self, mark: int) -> list[int] | None:
        """The rows re-read since ``mark`` (a row re-read twice is named twice), the table
        brought up to date first; ``None`` when the changes since then are no longer kept
        (the caller then starts again from the whole table)."""
        self._current()
        start = mark - self._changes_base
        if start < 0:
            return None
        return self._changes[start:]

    def all_rows(self) -> RowArray:
        """Every row, in order."""
        return np.arange(len(self._current()), dtype=np.intp)

    def row(self, row: int) -> TableRow:
        """One row read as a node: the amounts and labels the table holds for it, which
        are what its arrays give the scorers (the node itself may have moved on since, if
        the live cache changed it and nobody has named it yet)."""
        self._current()
        return TableRow(self, self._columns, row, self._labels_of[row], self._names[row])

    # --- what scorers read ---------------------------------------------------------------

    def rows(self, nodes: Sequence[NodeInfo]) -> tuple[RowArray, list[str]] | None:
        """The rows and names of ``nodes`` (one dict lookup each, by identity), or ``None``
        if one of them is not a node of this session.

        Remembered for the last list asked about: the session hands the same list to
        nodeorder and to binpack in a row. The list is re-checked element by element (by
        identity) before the answer is reused, in case its owner changed it in place.
        """
        if self._released:
            return None
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
        self._current()
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
            if self._tainted is None:
                self._tainted = np.fromiter(map(_prefer_tainted, nodes), bool, len(nodes))
            self._prefer_tainted = np.flatnonzero(self._tainted).tolist()
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


class _RowSide:
    """One side (allocatable, used or pipelined) of one table row, read per resource as a
    node's ``Resource`` is (``get``)."""

    __slots__ = ("_columns", "_row", "_side", "_table")

    def __init__(
        self, table: NodeTable, columns: Mapping[str, ResourceColumn], row: int, side: str
    ) -> None:
        self._table, self._columns, self._row, self._side = table, columns, row, side

    def get(self, name: str) -> float:
        col = self._columns.get(name)
        if col is None:  # a resource no scorer read before: its column is built now
            col = self._table.column(name)
        column: FloatArray = getattr(col, self._side)
        return float(column[self._row])


class TableRow:
    """A table row read as the node-by-node scorers read a node: ``allocatable``, ``used``
    and ``pipelined`` (each with ``get(resource)``), ``labels`` and ``name``. Read from the
    table's arrays, so a score worked out on it is the one the arrays give for that row."""

    __slots__ = ("allocatable", "labels", "name", "pipelined", "used")

    def __init__(
        self,
        table: NodeTable,
        columns: Mapping[str, ResourceColumn],
        row: int,
        labels: Mapping[str, str],
        name: str,
    ) -> None:
        self.allocatable = _RowSide(table, columns, row, "allocatable")
        self.used = _RowSide(table, columns, row, "used")
        self.pipelined = _RowSide(table, columns, row, "pipelined")
        self.labels = labels
        self.name = name


def follow_nodes(table: NodeTable | None, change: UsageChange) -> FollowStep:
    """How a scoring plugin follows a change of usage: the changed nodes' rows of its table
    are read again before the next score (the table is shared, so marking them twice, once
    for nodeorder and once for binpack, costs nothing more)."""
    if table is None or not change.nodes:
        return follows_nothing
    return partial(table.nodes_changed, tuple(change.nodes))
