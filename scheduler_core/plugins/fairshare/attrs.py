"""The per-queue record that proportion and capacity both keep during a session.

Both plugins answer every queue question (order, overuse, allocatable, reclaim, enqueue) from
the same few vectors per queue: what it deserves, what it holds, what it asks for, what its
admitted jobs have reserved (``inqueue``) and what it holds beyond its jobs' minimum
(``elastic``). Keeping the record and its share arithmetic in one place means the two
plugins cannot drift apart where Volcano's do not.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from scheduler_core.api.resource import MIN_RESOURCE, Resource
from scheduler_core.logutil import v

#: The scalars of an allocation that holds none (read only).
_NO_SCALARS: Mapping[str, float] = MappingProxyType({})


@dataclass(slots=True, eq=False)
class QueueAttr:
    """One queue as the fair-share plugins see it during a session.

    ``ancestors`` lists the queue's ancestors root first and ``children`` its direct
    children's names; both stay empty outside capacity's hierarchical mode. ``weight`` is
    only meaningful to proportion.
    """

    name: str
    weight: int = 0
    share: float = 0.0
    deserved: Resource = field(default_factory=Resource.empty)
    allocated: Resource = field(default_factory=Resource.empty)
    request: Resource = field(default_factory=Resource.empty)
    inqueue: Resource = field(default_factory=Resource.empty)
    elastic: Resource = field(default_factory=Resource.empty)
    capability: Resource = field(default_factory=Resource.empty)
    real_capability: Resource = field(default_factory=Resource.empty)
    guarantee: Resource = field(default_factory=Resource.empty)
    ancestors: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)

    def is_leaf(self) -> bool:
        return not self.children

    def clone(self) -> QueueAttr:
        """A copy whose resources can be changed by a what-if without touching the session."""
        return QueueAttr(
            name=self.name,
            weight=self.weight,
            share=self.share,
            deserved=self.deserved.clone(),
            allocated=self.allocated.clone(),
            request=self.request.clone(),
            inqueue=self.inqueue.clone(),
            elastic=self.elastic.clone(),
            capability=self.capability.clone(),
            real_capability=self.real_capability.clone(),
            guarantee=self.guarantee.clone(),
            ancestors=list(self.ancestors),
            children=list(self.children),
        )


@dataclass(slots=True)
class FillStep:
    """One queue in one pass of proportion's deserved loop, exactly as the loop computed it:
    what it held before the pass, what the weighted share of the remainder raised it to
    (``offered``), which clamp changed which dimensions (``clamped``: "capability",
    "request", "guarantee" -> resource names) and the result. ``met`` says why the loop
    stopped giving to the queue after this pass ("request": it has all it asks for;
    "capability": a cap held it still), or is empty."""

    queue: str
    weight: int
    before: Resource
    offered: Resource
    deserved: Resource
    clamped: dict[str, list[str]]
    met: str


@dataclass(slots=True)
class FillRound:
    """One pass of the loop: what was left to hand out, over which total weight."""

    index: int
    remaining: Resource
    total_weight: int
    steps: list[FillStep] = field(default_factory=list)


@dataclass(slots=True)
class DerivationStep:
    """One step of capacity's deserved or real-capability computation for a queue."""

    label: str
    value: Resource
    changed: list[str]


def changed_dimensions(before: Resource, after: Resource) -> list[str]:
    """Resource names whose amount differs between the two (the derivations' "what bound
    it"), ignoring the pod-slot dimension."""
    names = dict.fromkeys([*before.resource_names(), *after.resource_names()])
    return [n for n in names if n != "pods" and before.get(n) != after.get(n)]


def start_derivation(
    derivation: dict[str, list[DerivationStep]], attr: QueueAttr, label: str, value: Resource
) -> list[DerivationStep]:
    """Begin the queue's derivation record afresh, its first step ``value`` as read."""
    steps = derivation[attr.name] = [DerivationStep(label, value.clone(), [])]
    return steps


def record_step(steps: list[DerivationStep], label: str, value: Resource, before: Resource) -> None:
    steps.append(DerivationStep(label, value.clone(), changed_dimensions(before, value)))


class QueueAttrs(dict[str, QueueAttr]):
    """Queue name -> attributes; the plugins' entry in a preemptor's cycle state.

    Copy-on-read over ``source`` (the plugin's session attributes): an entry is cloned the
    first time it is read, so a simulation pays for the queues it touches (the preemptor's
    and its victims'), not for all of them; the preempt verb simulates on up to 100 nodes
    per request against 200 queues. ``clone`` copies what has been read and shares the rest
    of the source, so copies never share resources either. The source must not change while
    a copy is in use: simulations run between session changes, never across them.
    """

    def __init__(
        self,
        entries: Mapping[str, QueueAttr] | None = None,
        *,
        source: Mapping[str, QueueAttr] | None = None,
    ) -> None:
        super().__init__(entries or {})
        self._source: Mapping[str, QueueAttr] = source if source is not None else {}

    def __missing__(self, name: str) -> QueueAttr:
        attr = self._source[name].clone()
        self[name] = attr
        return attr

    def get(self, name: str, default: QueueAttr | None = None) -> QueueAttr | None:  # type: ignore[override]
        if dict.__contains__(self, name) or name in self._source:
            return self[name]
        return default

    def __contains__(self, name: object) -> bool:
        return dict.__contains__(self, name) or name in self._source

    def clone(self) -> QueueAttrs:
        return QueueAttrs(
            {name: attr.clone() for name, attr in dict.items(self)}, source=self._source
        )


def trace(logger: logging.Logger, level: int, msg: str, *args: object) -> None:
    """Log with Resource arguments rendered now, and only when the level is on.

    The plugins change their resources in place; a handler that formats a record later (a
    queue handler, pytest's capture) would otherwise print the value the resource has by
    then, and formatting unconditionally would cost the hot paths.
    """
    if logger.isEnabledFor(level):
        logger.log(level, msg, *(repr(a) if isinstance(a, Resource) else a for a in args))


def trace_attributes(logger: logging.Logger, attr: QueueAttr, plugin: str) -> None:
    """Volcano's V(4) line with a queue's whole record as ``plugin`` derived it."""
    trace(
        logger,
        v(4),
        "The attributes of queue <%s> in %s: deserved <%s>, realCapability <%s>, "
        "allocate <%s>, request <%s>, elastic <%s>, share <%0.2f>",
        attr.name,
        plugin,
        attr.deserved,
        attr.real_capability,
        attr.allocated,
        attr.request,
        attr.elastic,
        attr.share,
    )


def proportion_share(attr: QueueAttr) -> float:
    """``max`` over the deserved dimensions (>= epsilon) of allocated / deserved; 0 with none.

    Written out per dimension rather than over ``resource_names()``, without a call a
    dimension: it runs for every queue on every allocate and evict event, and after every
    bind the session follows. A deserved amount counted is at least the epsilon, so
    ``share`` is the plain quotient there, and ``if value > result`` keeps what ``max``
    keeps.
    """
    deserved, allocated = attr.deserved, attr.allocated
    result = 0.0
    if deserved.milli_cpu >= MIN_RESOURCE:
        result = allocated.milli_cpu / deserved.milli_cpu
    if deserved.memory >= MIN_RESOURCE:
        value = allocated.memory / deserved.memory
        if value > result:
            result = value
    if deserved.scalars:
        held = allocated.scalars or _NO_SCALARS
        for name, quant in deserved.scalars.items():
            if quant >= MIN_RESOURCE:
                value = held.get(name, 0.0) / quant
                if value > result:
                    result = value
    return result


def capacity_share(attr: QueueAttr) -> float:
    """As proportion's, except a queue with nothing deserved (best effort) is at 1, so it is
    served only after every queue with a deserved share has reached it."""
    if attr.deserved.is_empty():
        return 1.0
    return proportion_share(attr)
