"""The per-queue attribute record that proportion and capacity both keep, and the job-derived
quantities they both add into it.

Both plugins answer every queue question (order, overuse, allocatable, reclaim, enqueue) from
the same few vectors per queue: what it deserves, what it holds, what it asks for, what its
admitted jobs have reserved (``inqueue``) and what it holds beyond its jobs' minimum
(``elastic``). Keeping the record and the arithmetic that fills it in one place means the
two plugins cannot drift apart where Volcano's do not. Volcano's helpers named here are
``GetInqueueResource``, ``CalculateAllocatedTaskNum`` and ``JobInfo.DeductSchGatedResources``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import INFINITY, MIN_RESOURCE, Resource, exceeded_part, share
from scheduler_core.api.task import TaskInfo
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.framework.session import QueueShare
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.plugins.queue_attr")

MAX_FLOAT = sys.float_info.max


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


class QueueCharging:
    """The half of proportion and capacity that moves a task's request in and out of its
    queue: the session's event handlers (allocate / evict) and the same on a preemptor's
    what-if copy (simulated add / remove). Each plugin says how to find a task's queue
    attribute, which ancestors also carry it, and how share is computed; Volcano recomputes
    share for the queue itself only, not for its ancestors.
    """

    name: ClassVar[str]
    log_label: ClassVar[str] = ""
    queue_opts: dict[str, QueueAttr]

    def _attr_of_task(self, task: TaskInfo, opts: Mapping[str, QueueAttr]) -> QueueAttr | None:
        raise NotImplementedError

    def _lineage(self, attr: QueueAttr, opts: Mapping[str, QueueAttr]) -> list[QueueAttr]:
        del attr, opts
        return []

    def _share(self, attr: QueueAttr) -> float:
        raise NotImplementedError

    def _charge(self, opts: Mapping[str, QueueAttr], task: TaskInfo, add: bool) -> None:
        attr = self._attr_of_task(task, opts)
        if attr is None:
            return
        for charged in (attr, *self._lineage(attr, opts)):
            if add:
                charged.allocated.add(task.resreq)
            else:
                charged.allocated.sub_without_assert(task.resreq)
        attr.share = self._share(attr)
        if opts is self.queue_opts:
            trace(
                log,
                v(4),
                "%s %s: task <%s/%s>, resreq <%s>, share <%s>",
                self.log_label,
                "AllocateFunc" if add else "DeallocateFunc",
                task.namespace,
                task.name,
                task.resreq,
                attr.share,
            )

    def _queue_share(self, queue: QueueInfo) -> QueueShare | None:
        """Copies, so a caller may do arithmetic on them without touching the plugin."""
        attr = self.queue_opts.get(queue.name)
        if attr is None:
            return None
        return QueueShare(allocated=attr.allocated.clone(), deserved=attr.deserved.clone())

    # session events
    def _on_allocate(self, task: TaskInfo) -> None:
        self._charge(self.queue_opts, task, add=True)

    def _on_deallocate(self, task: TaskInfo) -> None:
        self._charge(self.queue_opts, task, add=False)

    # what-if (topology-aware preemption, the extender's victim selection)
    def _cycle_state(self, task: TaskInfo) -> QueueAttrs:
        del task
        return QueueAttrs(source=self.queue_opts)

    def _state(self, state: Mapping[str, object]) -> QueueAttrs | None:
        attrs = state.get(self.name)
        return attrs if isinstance(attrs, QueueAttrs) else None

    def _simulate_add_task(
        self, state: Mapping[str, object], preemptor: TaskInfo, task: TaskInfo, node: object
    ) -> None:
        del preemptor, node
        attrs = self._state(state)
        if attrs is not None:
            self._charge(attrs, task, add=True)

    def _simulate_remove_task(
        self, state: Mapping[str, object], preemptor: TaskInfo, task: TaskInfo, node: object
    ) -> None:
        del preemptor, node
        attrs = self._state(state)
        if attrs is not None:
            self._charge(attrs, task, add=False)


# --- share -------------------------------------------------------------------------------


def proportion_share(attr: QueueAttr) -> float:
    """``max`` over the deserved dimensions (>= epsilon) of allocated / deserved; 0 with none.

    Written out per dimension rather than over ``resource_names()``: it runs for every queue
    on every allocate and evict event.
    """
    deserved, allocated = attr.deserved, attr.allocated
    result = 0.0
    if deserved.milli_cpu >= MIN_RESOURCE:
        result = share(allocated.milli_cpu, deserved.milli_cpu)
    if deserved.memory >= MIN_RESOURCE:
        result = max(result, share(allocated.memory, deserved.memory))
    if deserved.scalars:
        held = allocated.scalars or {}
        for name, quant in deserved.scalars.items():
            if quant >= MIN_RESOURCE:
                result = max(result, share(held.get(name, 0.0), quant))
    return result


def capacity_share(attr: QueueAttr) -> float:
    """As proportion's, except a queue with nothing deserved (best effort) is at 1, so it is
    served only after every queue with a deserved share has reached it."""
    if attr.deserved.is_empty():
        return 1.0
    return proportion_share(attr)


# --- queue spec ----------------------------------------------------------------------------


def total_guarantee(queues: Iterable[QueueInfo]) -> Resource:
    """What every queue together is guaranteed: nobody else may count on it."""
    total = Resource.empty()
    for queue in queues:
        if queue.guarantee is not None:
            total.add(queue.guarantee)
    return total


def spec_guarantee(queue: QueueInfo) -> Resource:
    return queue.guarantee.clone() if queue.guarantee is not None else Resource.empty()


def flat_capability(queue: QueueInfo) -> Resource | None:
    """``spec.capability`` with a missing (or non-positive) cpu or memory read as unlimited;
    ``None`` when the spec sets no capability at all."""
    if queue.capability is None:
        return None
    capability = queue.capability.clone()
    if capability.milli_cpu <= 0:
        capability.milli_cpu = MAX_FLOAT
    if capability.memory <= 0:
        capability.memory = MAX_FLOAT
    return capability


def flat_real_capability(
    total: Resource, guarantees: Resource, guarantee: Resource, capability: Resource | None
) -> Resource:
    """What the queue could ever get: the cluster minus every guarantee, plus its own
    guarantee, capped by its capability."""
    real = exceeded_part(total, guarantees).clone().add(guarantee)
    if capability is not None:
        real.min_dimension_resource(capability, INFINITY)
    return real


def hierarchy_enabled(conf: SchedulerConfiguration, plugin: str) -> bool:
    """``ssn.HierarchyEnabled``: the first option naming the plugin decides."""
    for tier in conf.tiers:
        for option in tier.plugins:
            if option.name == plugin:
                return option.enabled("enableHierarchy")
    return False


def format_resource_names(prefix: str, verb: str, names: list[str]) -> str:
    """``util.FormatResourceNames``: ``"prefix: verb a, verb b"``."""
    if not names:
        return prefix
    return f"{prefix}: " + ", ".join(f"{verb} {name}" for name in names)


# --- job contributions -----------------------------------------------------------------------
