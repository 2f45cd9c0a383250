"""The deserved loop: Volcano's water-filling of the cluster over the queues' weights, with
its per-pass record for the explain API."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from scheduler_core.api.resource import (
    INFINITY,
    ZERO,
    Resource,
    _diff_one,
    exceeded_part,
    res_max,
)
from scheduler_core.logutil import v
from scheduler_core.plugins.fairshare.attrs import (
    FillRound,
    FillStep,
    QueueAttr,
    changed_dimensions,
    proportion_share,
    trace,
    trace_attributes,
)

log = logging.getLogger("scheduler_core.plugins.proportion")

#: A guard, not a semantic: the loop converges in a handful of passes in practice (each pass
#: meets a queue or hands out part of what remains); it only stops a pathological float
#: sequence from holding a session forever.
MAX_DESERVED_PASSES = 10_000


def water_fill(
    queue_opts: Mapping[str, QueueAttr],
    total: Resource,
    rounds: list[FillRound] | None = None,
    *,
    quiet: bool = False,
) -> Resource:
    """Volcano's deserved loop; fills ``attr.deserved``/``attr.share`` in place and returns
    what is left of ``total``. With ``rounds``, each pass is appended to it as it happens
    (the explain API shows a queue's deserved derivation from this record, so it can never
    disagree with the loop).

    Per pass, every queue not yet met gets ``remaining * weight / total weight`` added, then
    is capped by its real capability (missing scalars unlimited) and its request (scalars it
    does not request become 0), then raised to its guarantee. A queue is met when its request
    fits its deserved, or when its deserved did not move (a cap holds it). The loop ends when
    no unmet weight is left, nothing remains, or a pass changed nothing. ``remaining`` and the
    total weight are fixed within a pass, so the result does not depend on queue order.
    """
    verbose = not quiet and log.isEnabledFor(v(4))
    if rounds is None and not verbose:
        remaining = _fill_quietly(queue_opts, total)
    else:
        remaining = _fill_recorded(queue_opts, total, rounds, verbose)
    # Share depends only on deserved and allocated, which the loop no longer changes for a
    # met queue, so computing it once here equals Volcano's update on every pass.
    for attr in queue_opts.values():
        attr.share = proportion_share(attr)
    return remaining


def _fill_recorded(
    queue_opts: Mapping[str, QueueAttr],
    total: Resource,
    rounds: list[FillRound] | None,
    verbose: bool,
) -> Resource:
    """The loop written as Volcano's, step by step: what the explain API records and the V(4)
    lines trace. ``_fill_quietly`` must give exactly what this gives."""
    remaining = total.clone()
    meet: set[str] = set()
    for _ in range(MAX_DESERVED_PASSES):
        total_weight = sum(a.weight for a in queue_opts.values() if a.name not in meet)
        if total_weight == 0:
            if verbose:
                trace(log, v(4), "Exiting when total weight is 0")
            break
        old_remaining = remaining.clone()
        record = None
        if rounds is not None:
            record = FillRound(len(rounds) + 1, remaining.clone(), total_weight)
            rounds.append(record)
        increased = Resource.empty()
        decreased = Resource.empty()
        for attr in queue_opts.values():
            if verbose:
                trace(
                    log,
                    v(4),
                    "Considering Queue <%s>: weight <%d>, total weight <%d>.",
                    attr.name,
                    attr.weight,
                    total_weight,
                )
            if attr.name in meet:
                continue
            old_deserved = attr.deserved.clone()
            attr.deserved.add(remaining.clone().multi(float(attr.weight) / float(total_weight)))
            offered = attr.deserved.clone() if record is not None else attr.deserved
            attr.deserved.min_dimension_resource(attr.real_capability, INFINITY)
            capped = attr.deserved.clone() if record is not None else attr.deserved
            attr.deserved.min_dimension_resource(attr.request, ZERO)
            requested = attr.deserved.clone() if record is not None else attr.deserved
            attr.deserved = res_max(attr.deserved, attr.guarantee) or Resource.empty()
            if attr.request.less_equal(attr.deserved, ZERO):
                meet.add(attr.name)
                met = "queue <%s> is meet"
            elif attr.deserved.semantic_equal(old_deserved):
                meet.add(attr.name)
                met = "queue <%s> is meet cause of the capability"
            else:
                met = ""
            if verbose:
                _trace_pass(attr, met)
            if record is not None:
                record.steps.append(_fill_step(attr, old_deserved, offered, capped, requested, met))
            inc, dec = attr.deserved.diff(old_deserved, ZERO)
            increased.add(inc)
            decreased.add(dec)
        remaining = exceeded_part(remaining.clone().add(decreased), increased)
        if verbose:
            trace(log, v(4), "Remaining resource is <%s>", remaining)
        if remaining.is_empty() or remaining.semantic_equal(old_remaining):
            if verbose:
                trace(
                    log,
                    v(4),
                    "Exiting when remaining is empty or no queue has more resource request: <%s>",
                    remaining,
                )
            break
    else:
        _stopped(remaining)
    return remaining


def _stopped(remaining: Resource) -> None:
    trace(
        log,
        logging.ERROR,
        "Deserved loop stopped after %d passes; remaining <%s>",
        MAX_DESERVED_PASSES,
        remaining,
    )


def _fill_quietly(queue_opts: Mapping[str, QueueAttr], total: Resource) -> Resource:
    """``_fill_recorded`` without a record or a trace, with the same floating-point
    operations in the same order and the same scalar maps (keys, their order, a missing map
    against an empty one), but few of its intermediate objects: a new pod's request sets
    the loop off over every queue (~180 queues x 6 passes at the reference scale), and each
    queue's step there made a dozen resources. Equal to it by construction, step for step
    (commented below), and by a property test over random queues."""
    remaining = total.clone()
    meet: set[str] = set()
    attrs = list(queue_opts.values())
    for _ in range(MAX_DESERVED_PASSES):
        total_weight = sum(a.weight for a in attrs if a.name not in meet)
        if total_weight == 0:
            break
        old_remaining = remaining.clone()
        # ``increased`` and ``decreased`` start as ``Resource.empty()`` (no scalar map).
        increased = Resource.empty()
        decreased = Resource.empty()
        #: ``remaining * weight / total weight``, the same for every queue of one weight.
        offers: dict[int, Resource] = {}
        for attr in attrs:
            if attr.name in meet:
                continue
            before = attr.deserved  # (replaced below, never changed: no copy needed)
            offer = offers.get(attr.weight)
            if offer is None:
                ratio = float(attr.weight) / float(total_weight)
                offer = offers[attr.weight] = remaining.clone().multi(ratio)
            deserved = before.clone().add(offer)
            deserved.min_dimension_resource(attr.real_capability, INFINITY)
            deserved.min_dimension_resource(attr.request, ZERO)
            deserved = res_max(deserved, attr.guarantee) or Resource.empty()
            attr.deserved = deserved
            if attr.request.less_equal(deserved, ZERO) or deserved.semantic_equal(before):
                meet.add(attr.name)
            _add_diff(deserved, before, increased, decreased)
        remaining = exceeded_part(remaining.clone().add(decreased), increased)
        if remaining.is_empty() or remaining.semantic_equal(old_remaining):
            break
    else:
        _stopped(remaining)
    return remaining


def _add_diff(after: Resource, before: Resource, increased: Resource, decreased: Resource) -> None:
    """``inc, dec = after.diff(before, ZERO)`` then ``increased.add(inc)`` and
    ``decreased.add(dec)``, without making ``inc`` and ``dec``: a dimension that rose adds to
    ``increased`` only, one that fell or stayed to ``decreased`` only (``add`` of the 0 the
    other side holds changes no amount, but a scalar key is created where ``diff`` puts
    one, in the order it puts them: keys decide later ``semantic_equal`` tests)."""
    if after.milli_cpu > before.milli_cpu:
        increased.milli_cpu += after.milli_cpu - before.milli_cpu
    else:
        decreased.milli_cpu += before.milli_cpu - after.milli_cpu
    if after.memory > before.memory:
        increased.memory += after.memory - before.memory
    else:
        decreased.memory += before.memory - after.memory
    mine = after.scalars
    theirs = before.scalars
    if not mine and not theirs:
        return
    inc: dict[str, float] = {}
    dec: dict[str, float] = {}
    mine = mine or {}
    theirs = theirs or {}
    for name, left in mine.items():
        _diff_one(name, left, theirs.get(name, 0.0), inc, dec)
    for name, right in theirs.items():
        if name not in mine:
            _diff_one(name, 0.0, right, inc, dec)
    if inc:
        _add_scalars(increased, inc)
    if dec:
        _add_scalars(decreased, dec)


def _add_scalars(into: Resource, scalars: dict[str, float]) -> None:
    """The scalar half of ``into.add(Resource(scalars=scalars))``."""
    held = into.scalars
    if held is None:
        held = into.scalars = {}
    for name, quant in scalars.items():
        held[name] = held.get(name, 0.0) + quant


def _fill_step(
    attr: QueueAttr,
    before: Resource,
    offered: Resource,
    capped: Resource,
    requested: Resource,
    met: str,
) -> FillStep:
    clamps = {
        "capability": changed_dimensions(offered, capped),
        "request": changed_dimensions(capped, requested),
        "guarantee": changed_dimensions(requested, attr.deserved),
    }
    return FillStep(
        queue=attr.name,
        weight=attr.weight,
        before=before,
        offered=offered,
        deserved=attr.deserved.clone(),
        clamped={k: dims for k, dims in clamps.items() if dims},
        met="" if not met else "capability" if met.endswith("capability") else "request",
    )


def _trace_pass(attr: QueueAttr, met: str) -> None:
    """Volcano's V(4) lines for one queue in one pass (share as of this pass)."""
    attr.share = proportion_share(attr)
    trace(log, v(4), "Format queue <%s> deserved resource to <%s>", attr.name, attr.deserved)
    if met:
        trace(log, v(4), met, attr.name)
    trace_attributes(log, attr, "proportion")
