"""Volcano's ``api.Resource``: the vector every queue, job, task and node decision uses.

The semantics follow Volcano's ``pkg/scheduler/api/resource_info.go`` and
``pkg/scheduler/api/helpers/helpers.go`` to the letter, quirks included, because fair
share, overuse, reclaim and preemption verdicts must match what Volcano would decide on
the same cluster. Notable quirks kept on purpose (each pinned by a test):

* one epsilon, ``MIN_RESOURCE = 0.1``, for every dimension;
* ``Infinity`` is encoded as ``-1`` in ``diff``; any scalar equal to ``-1`` is read as it;
* ``sub`` leaves scalars alone when the left side has no scalar map at all;
* ``less_equal`` with ``INFINITY`` is False when the right side has a scalar the left
  lacks, while the ``*_with_resources_name`` variants skip that check;
* the ``*_with_dimension`` comparisons use no epsilon and never look at ``pods``;
* ``is_empty`` ignores ``pods`` (every task requests ``pods: 1``);
* ``diff`` reports equal values as ``decreased[k] = 0``.

Scalar maps may be ``None`` (Go's nil map) and that differs from ``{}`` for ``sub`` and
``min_dimension_resource``, so the code never creates a map it does not need.
Scalars are stored in milli units (``nvidia.com/gpu: 1`` -> 1000) except ``pods``.
"""

from __future__ import annotations

import enum
import functools
import logging
import operator
import re
import sys
from collections.abc import Callable, Mapping
from types import MappingProxyType

from scheduler_core.api.quantity import milli_value, parse_amount, value

__all__ = [
    "IGNORED_SCALARS",
    "INFINITY",
    "MIN_RESOURCE",
    "ZERO",
    "DimensionDefault",
    "Resource",
    "ResourceError",
    "exceeded_part",
    "intersection",
    "intersection_with_ignored_scalar_resources",
    "is_scalar_resource_name",
    "res_max",
    "res_min",
    "share",
]

_log = logging.getLogger(__name__)

MIN_RESOURCE: float = 0.1
"""The single epsilon: below it a dimension counts as zero, within it values are equal."""


class DimensionDefault(enum.IntEnum):
    """How a scalar present on one side only is read on the other side."""

    ZERO = 0
    INFINITY = -1


ZERO = DimensionDefault.ZERO
INFINITY = DimensionDefault.INFINITY

IGNORED_SCALARS: frozenset[str] = frozenset({"pods"})
"""Scalars every task requests, hence useless for telling requests apart."""

_PODS = "pods"
_INFINITY_MARK = -1.0
_MAX_FLOAT = sys.float_info.max
_MAX_INT = 2**63 - 1
_NO_SCALARS: Mapping[str, float] = MappingProxyType({})


class ResourceError(ValueError):
    """Raised where Volcano asserts (panics), e.g. subtracting a larger resource."""


# --- k8s IsScalarResourceName -------------------------------------------------------

_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_REQUESTS_PREFIX = "requests."


def _is_extended_resource_name(name: str) -> bool:
    """k8s ``IsExtendedResourceName``: a valid ``domain/name`` outside kubernetes.io."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith(_REQUESTS_PREFIX):
        return False
    # IsQualifiedName("requests." + name): at most one "/", DNS-1123 prefix, short name.
    parts = (_REQUESTS_PREFIX + name).split("/")
    if len(parts) != 2:
        return False
    prefix, short = parts
    if len(prefix) > 253 or _DNS1123_SUBDOMAIN.fullmatch(prefix) is None:
        return False
    return 0 < len(short) <= 63 and _QUALIFIED_NAME.fullmatch(short) is not None


@functools.lru_cache(maxsize=1024)
def is_scalar_resource_name(name: str) -> bool:
    """k8s ``IsScalarResourceName``: extended, ``hugepages-*``, ``*kubernetes.io/*``,
    ``attachable-volumes-*``; the names Volcano keeps as scalar dimensions."""
    return (
        _is_extended_resource_name(name)
        or name.startswith("hugepages-")
        or "kubernetes.io/" in name
        or name.startswith("attachable-volumes-")
    )


# --- Resource ---------------------------------------------------------------------


def _le(left: float, right: float) -> bool:
    """Volcano's ``lessEqualFunc``: ``<`` or within the epsilon."""
    return left < right or abs(left - right) < MIN_RESOURCE


#: A resource's scalars (None for none) and a comparison of two amounts, for the helpers below.
_Scalars = Mapping[str, float] | None
_Holds = Callable[[float, float], bool]


def _every_scalar(left: _Scalars, right: _Scalars, dv: DimensionDefault, holds: _Holds) -> bool:
    """Whether `holds` on every scalar of `left` against `right`, Volcano's way for the
    whole-vector comparisons (``Less``, ``LessEqual``): with ``INFINITY`` a scalar only in
    `right` fails (missing on the left means infinite) and one only in `left` is skipped;
    with ``ZERO`` a scalar missing on the right counts as zero. Plain loops: this is on the
    hot path of every fit."""
    mine = left or _NO_SCALARS
    theirs = right or _NO_SCALARS
    if dv == INFINITY:
        for name in theirs:
            if name not in mine:
                return False
        for name, quant in mine.items():
            if name in theirs and not holds(quant, theirs[name]):
                return False
        return True
    for name, quant in mine.items():
        other = theirs.get(name, 0.0)
        if not holds(quant, other):
            return False
    return True


def _some_scalar(left: _Scalars, right: _Scalars, dv: DimensionDefault, holds: _Holds) -> bool:
    """Whether `holds` on some scalar of `left` against `right`, Volcano's way for the
    partial comparisons (``LessPartly``, ``LessEqualPartly``): with ``ZERO`` a scalar only in
    `right` counts as holding (zero on the left); with ``INFINITY`` one only in `left` does."""
    mine = left or _NO_SCALARS
    theirs = right or _NO_SCALARS
    if dv == INFINITY:
        return any(name not in theirs or holds(q, theirs[name]) for name, q in mine.items())
    return any(name not in mine for name in theirs) or any(
        holds(quant, theirs.get(name, 0.0)) for name, quant in mine.items()
    )


def _sorted_names(names: list[str]) -> list[str]:
    """Go reports failing scalars in map order; sort them so output is reproducible."""
    if len(names) > 1:
        names.sort()
    return names


class Resource:
    """Milli-CPU, memory bytes, scalar resources (milli, ``pods`` whole) and max pods.

    All operations named after Volcano mutate ``self`` in place where Volcano does
    (``add``, ``sub``, ``multi``, ``min_dimension_resource``) and return ``self`` so calls
    chain like the Go code. The constructor takes ownership of ``scalars``.
    """

    __slots__ = ("max_task_num", "memory", "milli_cpu", "scalars")

    milli_cpu: float
    memory: float
    scalars: dict[str, float] | None
    max_task_num: int

    def __init__(
        self,
        milli_cpu: float = 0.0,
        memory: float = 0.0,
        scalars: dict[str, float] | None = None,
        max_task_num: int = 0,
    ) -> None:
        self.milli_cpu = float(milli_cpu)
        self.memory = float(memory)
        self.scalars = scalars
        self.max_task_num = max_task_num

    # --- construction ---------------------------------------------------------------

    @classmethod
    def empty(cls) -> Resource:
        """``EmptyResource()``: all zero, no scalar map."""
        return cls()

    @classmethod
    def infinite(cls) -> Resource:
        """``InfiniteResource()``: MaxFloat64 cpu/memory, MaxInt pods, no scalar map."""
        return cls(_MAX_FLOAT, _MAX_FLOAT, None, _MAX_INT)

    @classmethod
    def from_resource_list(cls, rl: Mapping[str, object] | None, where: str = "") -> Resource:
        """``NewResource(v1.ResourceList)``.

        Every value is validated, even of names Volcano drops, so a typo in a manifest
        fails loudly; a negative amount is refused too (``parse_amount``); the error names
        ``where`` followed by ``.<resource name>``.
        """
        res = cls()
        if not rl:
            return res
        for name, raw in rl.items():
            q = parse_amount(raw, f"{where}.{name}" if where else name)
            if name == "cpu":
                res.milli_cpu += float(milli_value(q))
            elif name == "memory":
                res.memory += float(value(q))
            elif name == _PODS:
                pods = value(q)
                res.max_task_num += pods
                res.add_scalar(_PODS, float(pods))
            elif name == "ephemeral-storage":
                res.add_scalar(name, float(milli_value(q)))
            elif name.startswith("count/"):
                continue
            elif is_scalar_resource_name(name):
                res.add_scalar(name, float(milli_value(q)))
        return res

    def clone(self) -> Resource:
        """Deep copy (the scalar map is copied, ``None`` stays ``None``)."""
        clone = Resource.__new__(Resource)
        clone.milli_cpu = self.milli_cpu
        clone.memory = self.memory
        clone.scalars = None if self.scalars is None else dict(self.scalars)
        clone.max_task_num = self.max_task_num
        return clone

    def added_to_zero(self) -> Resource:
        """``Resource.empty().add(self)`` in one call: a copy of the amounts, without the
        pod count (``add`` leaves it) and without an empty scalar map (``add`` creates none).
        The accounting session copies sums this way after every bind and assumption."""
        scalars = self.scalars
        return Resource(self.milli_cpu, self.memory, dict(scalars) if scalars else None)

    # --- arithmetic -----------------------------------------------------------------

    def add(self, rr: Resource) -> Resource:
        """Element-wise add; scalar keys only in ``rr`` are created."""
        self.milli_cpu += rr.milli_cpu
        self.memory += rr.memory
        if rr.scalars:
            mine = self.scalars
            if mine is None:
                mine = self.scalars = {}
            for name, quant in rr.scalars.items():
                mine[name] = mine.get(name, 0.0) + quant
        return self

    def sub(self, rr: Resource) -> Resource:
        """Subtract, refusing (Volcano asserts) unless ``rr <= self`` with ``ZERO``."""
        if not rr.less_equal(self, ZERO):
            raise ResourceError(
                f"resource is not sufficient to do operation: <{self!r}> sub <{rr!r}>"
            )
        return self._sub(rr)

    def sub_without_assert(self, rr: Resource) -> Resource:
        """Subtract even into negatives; Volcano only logs the shortfall."""
        if rr.milli_cpu <= self.milli_cpu and rr.memory <= self.memory:
            # Plainly no shortfall, the common case, told without ``less_equal``'s calls:
            # every amount at most what is here (a scalar missing here is zero).
            theirs = rr.scalars
            if not theirs:
                return self._sub(rr)
            mine = self.scalars or _NO_SCALARS
            for name, quant in theirs.items():
                if quant > mine.get(name, 0.0):
                    break
            else:
                return self._sub(rr)
        if not rr.less_equal(self, ZERO):
            _, names = rr.less_equal_with_resources_name(self, ZERO)
            _log.error(
                "resources %s are not sufficient to do operation: <%r> sub <%r>",
                names,
                self,
                rr,
            )
        return self._sub(rr)

    def _sub(self, rr: Resource) -> Resource:
        self.milli_cpu -= rr.milli_cpu
        self.memory -= rr.memory
        mine = self.scalars
        if mine is None or not rr.scalars:
            # Volcano quirk: a nil left scalar map means rr's scalars are not subtracted.
            return self
        for name, quant in rr.scalars.items():
            mine[name] = mine.get(name, 0.0) - quant
        return self

    def multi(self, ratio: float) -> Resource:
        """Scale every dimension, scalars included (``max_task_num`` untouched)."""
        self.milli_cpu *= ratio
        self.memory *= ratio
        if self.scalars:
            for name, quant in self.scalars.items():
                self.scalars[name] = quant * ratio
        return self

    def add_scalar(self, name: str, q: float) -> None:
        """Add to one scalar, creating it (and the map) if missing."""
        mine = self.scalars
        if mine is None:
            self.scalars = {name: 0.0 + q}
        else:
            mine[name] = mine.get(name, 0.0) + q

    def set_scalar(self, name: str, q: float) -> None:
        """Set one scalar, creating the map if missing."""
        if self.scalars is None:
            self.scalars = {name: q}
        else:
            self.scalars[name] = q

    def min_dimension_resource(self, rr: Resource, dv: DimensionDefault) -> Resource:
        """Cap ``self`` by ``rr`` per dimension, IN PLACE; returns ``self``.

        Scalars of ``self`` missing in ``rr`` are kept with ``INFINITY`` and zeroed with
        ``ZERO``; scalars only in ``rr`` are never added.
        """
        if rr.milli_cpu < self.milli_cpu:
            self.milli_cpu = rr.milli_cpu
        if rr.memory < self.memory:
            self.memory = rr.memory
        mine = self.scalars
        if mine is None:
            return self
        theirs = rr.scalars
        if theirs is None:
            if dv != INFINITY:
                for name in mine:
                    mine[name] = 0.0
            return self
        for name, quant in mine.items():
            other = theirs.get(name)
            if other is not None:
                mine[name] = min(quant, other)
            elif dv != INFINITY:
                mine[name] = 0.0
        return self

    # --- accessors ------------------------------------------------------------------

    def get(self, name: str) -> float:
        """One dimension by Kubernetes name; 0 when absent."""
        if name == "cpu":
            return self.milli_cpu
        if name == "memory":
            return self.memory
        if self.scalars is None:
            return 0.0
        return self.scalars.get(name, 0.0)

    def is_empty(self) -> bool:
        """Nothing requested: every dimension but ``pods`` is below the epsilon."""
        if not (self.milli_cpu < MIN_RESOURCE and self.memory < MIN_RESOURCE):
            return False
        if self.scalars:
            for name, quant in self.scalars.items():
                if quant >= MIN_RESOURCE and name not in IGNORED_SCALARS:
                    return False
        return True

    def is_zero(self, name: str) -> bool:
        """One dimension below the epsilon; an unknown scalar is an error (Volcano asserts)."""
        if name == "cpu":
            return self.milli_cpu < MIN_RESOURCE
        if name == "memory":
            return self.memory < MIN_RESOURCE
        if self.scalars is None:
            return True
        quant = self.scalars.get(name)
        if quant is None:
            raise ResourceError(f"unknown resource {name}")
        return quant < MIN_RESOURCE

    def resource_names(self) -> list[str]:
        """Dimensions actually present (>= epsilon): cpu, memory, then sorted scalars."""
        names: list[str] = []
        if self.milli_cpu >= MIN_RESOURCE:
            names.append("cpu")
        if self.memory >= MIN_RESOURCE:
            names.append("memory")
        if self.scalars:
            names.extend(sorted(k for k, v in self.scalars.items() if v >= MIN_RESOURCE))
        return names

    # --- whole-vector comparisons ---------------------------------------------------

    def less(self, rr: Resource, dv: DimensionDefault) -> bool:
        """Strictly less on every dimension (``INFINITY``: scalars missing in rr skipped)."""
        if not (self.milli_cpu < rr.milli_cpu and self.memory < rr.memory):
            return False
        return _every_scalar(self.scalars, rr.scalars, dv, operator.lt)

    def less_equal(self, rr: Resource, dv: DimensionDefault) -> bool:
        """``LessEqual``: every dimension ``<=`` within the epsilon.

        With ``INFINITY`` a scalar present in ``rr`` but missing here makes it False
        (missing means infinite on the left); with ``ZERO`` scalars only in ``rr`` are
        not looked at.
        """
        if not (_le(self.milli_cpu, rr.milli_cpu) and _le(self.memory, rr.memory)):
            return False
        return _every_scalar(self.scalars, rr.scalars, dv, _le)

    def less_equal_with_resources_name(
        self, rr: Resource, dv: DimensionDefault
    ) -> tuple[bool, list[str]]:
        """``LessEqual`` plus the failing names, WITHOUT the infinity key-presence check."""
        failed: list[str] = []
        if not _le(self.milli_cpu, rr.milli_cpu):
            failed.append("cpu")
        if not _le(self.memory, rr.memory):
            failed.append("memory")
        if self.scalars:
            theirs = rr.scalars or _NO_SCALARS
            infinity = dv == INFINITY
            bad: list[str] = []
            for name, quant in self.scalars.items():
                other = theirs.get(name)
                if other is None:
                    if infinity:
                        continue
                    other = 0.0
                if not _le(quant, other):
                    bad.append(name)
            failed.extend(_sorted_names(bad))
        return not failed, failed

    def less_partly(self, rr: Resource, dv: DimensionDefault) -> bool:
        """Some dimension strictly less (``ZERO``: a scalar only in rr counts as less)."""
        if self.milli_cpu < rr.milli_cpu or self.memory < rr.memory:
            return True
        return _some_scalar(self.scalars, rr.scalars, dv, operator.lt)

    def less_equal_partly(self, rr: Resource, dv: DimensionDefault) -> bool:
        """Some dimension ``<=`` within the epsilon (same shape as ``less_partly``)."""
        if _le(self.milli_cpu, rr.milli_cpu) or _le(self.memory, rr.memory):
            return True
        return _some_scalar(self.scalars, rr.scalars, dv, _le)

    def equal(self, rr: Resource, dv: DimensionDefault) -> bool:
        """Equal within the epsilon on cpu, memory and this side's scalars.

        Scalars only in ``rr`` are not examined and ``dv`` is unused, as in Volcano.
        """
        del dv
        if not _eq(self.milli_cpu, rr.milli_cpu) or not _eq(self.memory, rr.memory):
            return False
        if self.scalars:
            theirs = rr.scalars or _NO_SCALARS
            for name, quant in self.scalars.items():
                if not _eq(quant, theirs.get(name, 0.0)):
                    return False
        return True

    def greater_partly(self, rr: Resource, dv: DimensionDefault) -> tuple[bool, list[str]]:
        """``!LessEqualWithResourcesName`` with the exceeding names."""
        ok, names = self.less_equal_with_resources_name(rr, dv)
        return not ok, names

    # --- comparisons restricted to requested dimensions -----------------------------

    def less_equal_with_dimension_and_resources_name(
        self, rr: Resource | None, req: Resource | None
    ) -> tuple[bool, list[str]]:
        """``self <= rr`` on the dimensions ``req`` asks for (> 0), NO epsilon, no ``pods``.

        ``rr is None`` fails on every present dimension; ``req is None`` falls back to
        ``less_equal_with_resources_name(rr, ZERO)``. With no scalar map on ``self``
        scalars are not checked at all.
        """
        if rr is None:
            return False, self.resource_names()
        if req is None:
            return self.less_equal_with_resources_name(rr, ZERO)
        failed: list[str] = []
        if req.milli_cpu > 0 and self.milli_cpu > rr.milli_cpu:
            failed.append("cpu")
        if req.memory > 0 and self.memory > rr.memory:
            failed.append("memory")
        mine = self.scalars
        if mine is not None and req.scalars:
            theirs = rr.scalars or _NO_SCALARS
            bad: list[str] = []
            for name, quant in req.scalars.items():
                if (
                    quant > 0
                    and name not in IGNORED_SCALARS
                    and mine.get(name, 0.0) > theirs.get(name, 0.0)
                ):
                    bad.append(name)
            if bad:  # (asked on every filter call's queue votes: no call when none)
                failed.extend(_sorted_names(bad))
        return not failed, failed

    def less_equal_partly_with_dimension(
        self, rr: Resource, req: Resource | None
    ) -> tuple[bool, list[str]]:
        """Names of requested dimensions (> 0, not ``pods``) where ``self <= rr`` (epsilon)."""
        if req is None:
            return False, []
        found: list[str] = []
        if req.milli_cpu > 0 and _le(self.milli_cpu, rr.milli_cpu):
            found.append("cpu")
        if req.memory > 0 and _le(self.memory, rr.memory):
            found.append("memory")
        if req.scalars:
            good: list[str] = []
            for name, quant in req.scalars.items():
                if quant > 0 and name not in IGNORED_SCALARS and _le(self.get(name), rr.get(name)):
                    good.append(name)
            found.extend(_sorted_names(good))
        return bool(found), found

    def less_equal_partly_with_dimension_zero_filtered(
        self, rr: Resource, req: Resource | None
    ) -> tuple[bool, list[str]]:
        """As ``less_equal_partly_with_dimension`` but ignoring requested dimensions that
        are below the epsilon on both sides (neither in use nor deserved)."""
        if req is None:
            return False, []
        found: list[str] = []
        cpu, other_cpu = self.milli_cpu, rr.milli_cpu
        if (
            req.milli_cpu > 0
            and not (cpu < MIN_RESOURCE and other_cpu < MIN_RESOURCE)
            and _le(cpu, other_cpu)
        ):
            found.append("cpu")
        mem, other_mem = self.memory, rr.memory
        if (
            req.memory > 0
            and not (mem < MIN_RESOURCE and other_mem < MIN_RESOURCE)
            and _le(mem, other_mem)
        ):
            found.append("memory")
        if req.scalars:
            good: list[str] = []
            for name, quant in req.scalars.items():
                if quant <= 0 or name in IGNORED_SCALARS:
                    continue
                left, right = self.get(name), rr.get(name)
                if not (left < MIN_RESOURCE and right < MIN_RESOURCE) and _le(left, right):
                    good.append(name)
            found.extend(_sorted_names(good))
        return bool(found), found

    def greater_partly_with_dimension(
        self, rr: Resource | None, req: Resource | None
    ) -> tuple[bool, list[str]]:
        """Names of requested dimensions (> 0, not ``pods``) where ``self > rr`` (strict)."""
        if req is None:
            return False, []
        return self._greater_on(rr, req, relevant_only=False)

    def greater_partly_with_relevant_dimensions(
        self, rr: Resource | None, req: Resource | None
    ) -> tuple[bool, list[str]]:
        """As ``greater_partly_with_dimension`` but only on dimensions ``rr`` has:
        cpu/memory ``>= epsilon`` in ``rr``, scalars whose key is present in ``rr``."""
        if req is None:
            return False, []
        return self._greater_on(rr, req, relevant_only=True)

    def _greater_on(
        self, rr: Resource | None, req: Resource, *, relevant_only: bool
    ) -> tuple[bool, list[str]]:
        other = rr if rr is not None else _EMPTY
        exceeded: list[str] = []
        if (
            req.milli_cpu > 0
            and (not relevant_only or other.milli_cpu >= MIN_RESOURCE)
            and self.milli_cpu > other.milli_cpu
        ):
            exceeded.append("cpu")
        if (
            req.memory > 0
            and (not relevant_only or other.memory >= MIN_RESOURCE)
            and self.memory > other.memory
        ):
            exceeded.append("memory")
        if req.scalars:
            theirs = other.scalars or _NO_SCALARS
            bad: list[str] = []
            for name, quant in req.scalars.items():
                if quant <= 0 or name in IGNORED_SCALARS:
                    continue
                if relevant_only and name not in theirs:
                    continue
                if self.get(name) > theirs.get(name, 0.0):
                    bad.append(name)
            exceeded.extend(_sorted_names(bad))
        return bool(exceeded), exceeded

    # --- diff -----------------------------------------------------------------------

    def diff(self, rr: Resource, dv: DimensionDefault) -> tuple[Resource, Resource]:
        """``(increased, decreased)`` of ``self`` relative to ``rr``.

        A scalar missing on one side is read as ``float(dv)`` (0, or -1 for infinity).
        A side at -1 yields -1 in ``increased`` (left) or ``decreased`` (right); equal
        values yield ``decreased[k] = 0``. Both result scalar maps always exist.
        """
        increased = Resource()
        decreased = Resource()
        if self.milli_cpu > rr.milli_cpu:
            increased.milli_cpu = self.milli_cpu - rr.milli_cpu
        else:
            decreased.milli_cpu = rr.milli_cpu - self.milli_cpu
        if self.memory > rr.memory:
            increased.memory = self.memory - rr.memory
        else:
            decreased.memory = rr.memory - self.memory
        inc: dict[str, float] = {}
        dec: dict[str, float] = {}
        increased.scalars = inc
        decreased.scalars = dec
        default = float(dv)
        mine = self.scalars or _NO_SCALARS
        theirs = rr.scalars or _NO_SCALARS
        for name, left in mine.items():
            _diff_one(name, left, theirs.get(name, default), inc, dec)
        for name, right in theirs.items():
            if name not in mine:
                _diff_one(name, default, right, inc, dec)
        return increased, decreased

    # --- equality and output --------------------------------------------------------

    def semantic_equal(self, other: Resource) -> bool:
        """``equality.Semantic.DeepEqual``: exact ``==`` on every field; a ``None`` map
        equals ``{}``, but a key holding 0 differs from a missing key."""
        if (
            self.milli_cpu != other.milli_cpu
            or self.memory != other.memory
            or self.max_task_num != other.max_task_num
        ):
            return False
        mine = self.scalars or _NO_SCALARS
        theirs = other.scalars or _NO_SCALARS
        if len(mine) != len(theirs):
            return False
        for name, quant in mine.items():
            if name not in theirs or quant != theirs[name]:
                return False
        return True

    def to_quantities(self) -> dict[str, float]:
        """Kubernetes units for output: cores, bytes, scalar units (``pods`` as stored)."""
        out: dict[str, float] = {"cpu": self.milli_cpu / 1000.0, "memory": self.memory}
        if self.scalars:
            for name in sorted(self.scalars):
                quant = self.scalars[name]
                out[name] = quant if name in IGNORED_SCALARS else quant / 1000.0
        return out

    def __repr__(self) -> str:
        """Volcano's ``String()``: ``cpu 1000.00, memory 1024.00, <scalar> <v>...``."""
        text = f"cpu {self.milli_cpu:.2f}, memory {self.memory:.2f}"
        if self.scalars:
            for name in sorted(self.scalars):
                text += f", {name} {self.scalars[name]:.2f}"
        return text


def _eq(left: float, right: float) -> bool:
    """Volcano's ``equalFunc``: exact or within the epsilon (exact handles MaxFloat64)."""
    return left == right or abs(left - right) < MIN_RESOURCE


def _diff_one(
    name: str, left: float, right: float, inc: dict[str, float], dec: dict[str, float]
) -> None:
    if left == _INFINITY_MARK:
        inc[name] = left
    elif right == _INFINITY_MARK:
        dec[name] = right
    elif left > right:
        inc[name] = left - right
    else:
        dec[name] = right - left


_EMPTY = Resource()
"""Read-only stand-in for a ``None`` right-hand side; never handed out or mutated."""


# --- module helpers (Volcano's api and api/helpers functions) ----------------------


def exceeded_part(left: Resource | None, right: Resource | None) -> Resource:
    """``ExceededPart``: ``max(0, left - right)`` per dimension.

    ``right is None`` returns ``left`` itself (not a copy), as Volcano does; when both
    are ``None`` an empty Resource is returned instead of Go's nil.
    """
    if right is None:
        return left if left is not None else Resource()
    if left is None:
        return Resource()
    # ``left.diff(right, ZERO)[0]``, without making the decreased side it drops: this is
    # read for every job whose usage is derived (its elastic part), on every pod event.
    out = Resource()
    if left.milli_cpu > right.milli_cpu:
        out.milli_cpu = left.milli_cpu - right.milli_cpu
    if left.memory > right.memory:
        out.memory = left.memory - right.memory
    increased: dict[str, float] = {}
    out.scalars = increased
    mine = left.scalars or _NO_SCALARS
    theirs = right.scalars or _NO_SCALARS
    for name, held in mine.items():
        bound = theirs.get(name, 0.0)
        if held == _INFINITY_MARK:
            increased[name] = held
        elif bound != _INFINITY_MARK and held > bound:
            increased[name] = held - bound
    for name, bound in theirs.items():
        if name not in mine and bound != _INFINITY_MARK and bound < 0.0:
            increased[name] = 0.0 - bound
    return out


def res_max(l: Resource | None, r: Resource | None) -> Resource | None:
    """``helpers.Max``: per-dimension max; negative scalars are dropped.

    ``None`` only when both inputs are ``None``; a single ``None`` counts as empty.
    The result has no scalar map when neither input has one.
    """
    if l is None and r is None:
        return None
    left = l if l is not None else _EMPTY
    right = r if r is not None else _EMPTY
    res = Resource(max(left.milli_cpu, right.milli_cpu), max(left.memory, right.memory))
    if left.scalars is None and right.scalars is None:
        return res
    scalars: dict[str, float] = {}
    if left.scalars:
        for name, quant in left.scalars.items():
            if quant >= 0:
                scalars[name] = quant
    if right.scalars:
        for name, quant in right.scalars.items():
            if quant >= 0:
                scalars[name] = max(quant, scalars.get(name, 0.0))
    res.scalars = scalars
    return res


def res_min(l: Resource, r: Resource) -> Resource:
    """``helpers.Min``: per-dimension min; scalars only when both sides have a map
    (keys of ``l``, a key missing in ``r`` reads as 0)."""
    res = Resource(min(l.milli_cpu, r.milli_cpu), min(l.memory, r.memory))
    if l.scalars is None or r.scalars is None:
        return res
    theirs = r.scalars
    res.scalars = {name: min(quant, theirs.get(name, 0.0)) for name, quant in l.scalars.items()}
    return res


def share(l: float, r: float) -> float:
    """``helpers.Share``: ``l / r``; with ``r == 0`` it is 0 for ``l == 0`` else 1."""
    if r == 0:
        return 0.0 if l == 0 else 1.0
    return l / r


def intersection(r1: Resource, r2: Resource) -> list[str]:
    """Dimensions present (>= epsilon) in both, in ``r2.resource_names()`` order."""
    names1 = set(r1.resource_names())
    return [name for name in r2.resource_names() if name in names1]


def intersection_with_ignored_scalar_resources(r1: Resource, r2: Resource) -> list[str]:
    """``intersection`` without ``pods``, which every task shares."""
    return [name for name in intersection(r1, r2) if name not in IGNORED_SCALARS]
