"""Each queue as the engine sees it now: spec, usage, fair share and how it was derived."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.devices import device_class_resource
from scheduler_core.api.resource import Resource
from scheduler_core.api.types import TaskStatus, completed_status
from scheduler_core.framework.session import Session
from scheduler_core.insight.amounts import Amounts, amounts
from scheduler_core.insight.derivation import Derivation, queue_derivation
from scheduler_core.insight.described import described
from scheduler_core.plugins.proportion import ProportionPlugin
from scheduler_core.plugins.usagehistory import PLUGIN_NAME, UsageHistoryPlugin, format_span
from scheduler_core.report import queue_attrs


@dataclass(slots=True)
class QueueView:
    name: str
    parent: str | None
    children: list[str]
    state: str
    weight: int
    reclaimable: bool
    guarantee: Amounts | None
    capability: Amounts | None
    real_capability: Amounts | None
    request: Amounts | None
    allocated: Amounts | None = field(metadata=described("includes the assumed pods"))
    assumed: Amounts | None = field(metadata=described("filtered, not bound yet"))
    assumed_pods: int
    deserved: Amounts | None
    share: float
    overused: bool
    jobs: int
    pending_jobs: int
    #: The per-class detail of what the shares count under each class's quota name (see
    #: docs/dra.md).
    devices: dict[str, int] = field(
        default_factory=dict,
        metadata=described(
            "DRA devices its placed pods' allocated ResourceClaims hold, by "
            "deviceclass.resource.kubernetes.io/<device class> (the shares count them under "
            "each class's quota name)"
        ),
    )
    #: None: the usage history plugin is not on, or nothing measures usage here.
    history: UsageView | None = field(
        default=None,
        metadata=described("its usage over time and its effect (usagehistory plugin on)"),
    )
    derivation: Derivation | None = None


@dataclass(slots=True)
class UsageView:
    """A queue's decayed usage (amount-hours: core-hours, byte-hours, device-hours), its
    usage share and weight share among the queues competing now, the factor its weight was
    multiplied by, and its deserved share on the unadjusted weights. ``adjusted`` is False
    when nothing is contended or no usage is measured: deserved is then the weighted one."""

    half_life: str = field(metadata=described("how fast past usage fades (usage.halfLife)"))
    usage: Amounts = field(
        metadata=described("decayed usage in amount-hours (core-hours, byte-hours, device-hours)")
    )
    adjusted: bool = field(
        metadata=described(
            "whether its deserved share was moved for it (only where the queues ask for "
            "more than the cluster holds and usage was measured)"
        )
    )
    usage_share: float | None = field(
        default=None, metadata=described("its share of the competing usage")
    )
    weight_share: float | None = field(
        default=None, metadata=described("its share of the competing weights")
    )
    factor: float | None = field(
        default=None, metadata=described("what its weight was multiplied by")
    )
    weighted_deserved: Amounts | None = field(
        default=None, metadata=described("its deserved share on the unadjusted weights")
    )


def usage_views(ssn: Session) -> dict[str, UsageView]:
    """Every queue's ``UsageView`` in this session; empty without the plugin."""
    plugin = ssn.plugins.get(PLUGIN_NAME)
    if not isinstance(plugin, UsageHistoryPlugin) or plugin.reading is None:
        return {}
    fair = ssn.plugins.get("proportion")
    adjustments = fair.adjustments if isinstance(fair, ProportionPlugin) else {}
    weighted = fair.weighted if isinstance(fair, ProportionPlugin) else {}
    span = format_span(plugin.reading.half_life)
    out: dict[str, UsageView] = {}
    for name in ssn.queues:
        held = Resource.empty()
        for dimension, amount in plugin.reading.of(name).items():
            if dimension == "cpu":
                held.milli_cpu = amount / 3600.0
            elif dimension == "memory":
                held.memory = amount / 3600.0
            else:
                held.set_scalar(dimension, amount / 3600.0)
        adjustment = adjustments.get(name)
        view = UsageView(half_life=span, usage=amounts(held) or {}, adjusted=False)
        if adjustment is not None:
            view.adjusted = True
            view.usage_share = round(adjustment.usage, 6)
            view.weight_share = round(adjustment.weight_share, 6)
            view.factor = round(adjustment.factor, 6)
            view.weighted_deserved = amounts(weighted.get(name))
        out[name] = view
    return out


def queue_views(acct: QueueAccounting, *, with_derivation: bool = False) -> list[QueueView]:
    """Every queue that is defined or holds work, sorted by name (an implicit queue such as
    ``default`` only when a job uses it)."""
    ssn = acct.session()
    attrs = queue_attrs(ssn)
    assumed = _assumed_by_queue(acct)
    devices = devices_by_queue(ssn)
    history = usage_views(ssn)
    jobs_by_queue: dict[str, list[int]] = {}
    for job in ssn.jobs.values():
        counts = jobs_by_queue.setdefault(job.queue, [0, 0])
        counts[0] += 1
        # Waiting as the pending page has it: a pod filter has let through (assumed) has its
        # place, so a job whose only pending pods are assumed is not counted here either.
        if any(t.key not in acct.assumed for t in job.tasks_with(TaskStatus.PENDING)):
            counts[1] += 1
    children: dict[str, list[str]] = {}
    for name, queue in ssn.queues.items():
        if queue.parent and queue.parent != name:
            children.setdefault(queue.parent, []).append(name)
    views = []
    for name, queue in sorted(ssn.queues.items()):
        if queue.implicit and name not in jobs_by_queue and name not in children:
            continue
        attr = attrs.get(name)
        held, count = assumed.get(name, (Resource.empty(), 0))
        njobs, npending = jobs_by_queue.get(name, [0, 0])
        views.append(
            QueueView(
                name=name,
                parent=queue.parent or None,
                children=sorted(children.get(name, [])),
                state=str(queue.state),
                weight=queue.weight,
                reclaimable=queue.reclaimable(),
                guarantee=amounts(queue.guarantee or Resource.empty()),
                capability=amounts(queue.capability),
                real_capability=amounts(attr.real_capability) if attr is not None else None,
                request=amounts(attr.request if attr is not None else Resource.empty()),
                allocated=amounts(attr.allocated if attr is not None else Resource.empty()),
                assumed=amounts(held),
                assumed_pods=count,
                deserved=amounts(attr.deserved if attr is not None else Resource.empty()),
                share=round(float(attr.share), 6) if attr is not None else 0.0,
                overused=ssn.overused(queue) if attr is not None else False,
                jobs=njobs,
                pending_jobs=npending,
                derivation=queue_derivation(ssn, name) if with_derivation else None,
                devices=devices.get(name, {}),
                history=history.get(name),
            )
        )
    return views


def devices_by_queue(ssn: Session) -> dict[str, dict[str, int]]:
    """Per queue, the devices its placed pods' allocated ResourceClaims hold, by device
    class resource name; a claim several of a queue's pods share counts once."""
    storage = ssn.snapshot.storage
    out: dict[str, dict[str, int]] = {}
    if not storage.resource_claims:
        return out
    seen: set[tuple[str, str]] = set()
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if not task.resource_claims or not task.node_name or completed_status(task.status):
                continue
            for ref in task.resource_claims:
                key = f"{task.namespace}/{ref.claim}"
                claim = storage.resource_claims.get(key) if ref.claim else None
                if claim is None or not claim.allocated or (job.queue, key) in seen:
                    continue
                seen.add((job.queue, key))
                held = out.setdefault(job.queue, {})
                for device_class, count in claim.devices.items():
                    name = device_class_resource(device_class)
                    held[name] = held.get(name, 0) + count
    return out


def queue_view(acct: QueueAccounting, name: str) -> QueueView | None:
    ssn = acct.session()
    if name not in ssn.queues:
        return None
    for view in queue_views(acct, with_derivation=False):
        if view.name == name:
            view.derivation = queue_derivation(ssn, name)
            return view
    return None


def _assumed_by_queue(acct: QueueAccounting) -> dict[str, tuple[Resource, int]]:
    """What filter has let through and kube-scheduler has not bound yet, per queue: already
    counted in ``allocated``, shown apart so a person can tell the two."""
    out: dict[str, tuple[Resource, int]] = {}
    for assumption in acct.assumed.values():
        held, count = out.get(assumption.queue, (Resource.empty(), 0))
        held.add(assumption.task.resreq)
        out[assumption.queue] = (held, count + 1)
    return out


def held_with_children(views: list[QueueView]) -> dict[str, Amounts]:
    """Per queue that has children, what it and every queue below it hold (allocated, the
    assumed pods included): a parent queue's own jobs are often none, and a person reading
    the tree asks what the whole branch uses. The fair-share plugins may ignore the
    hierarchy (proportion does), so this is a sum for reading, not a figure they decide by.
    A cycle in the parents (which the API does not forbid) is walked once."""
    by_name = {v.name: v for v in views}

    def total(name: str, seen: frozenset[str]) -> Amounts:
        view = by_name[name]
        held: Amounts = dict(view.allocated or {})
        for child in view.children:
            if child in by_name and child not in seen:
                for dim, value in total(child, seen | {child}).items():
                    mine = held.get(dim, 0.0)
                    held[dim] = None if mine is None or value is None else round(mine + value, 6)
        return held

    return {
        view.name: total(view.name, frozenset({view.name}))
        for view in views
        if any(child in by_name for child in view.children)
    }
