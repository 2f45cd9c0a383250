"""Deserved shares on weights adjusted for past usage: the deserved loop run again with each
queue's weight times its adjustment's factor, each queue then kept at no less than its
adjustment's floor of the weighted result (and its guarantee, which the loop keeps)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scheduler_core.api.resource import Resource, res_max
from scheduler_core.framework.hooks import WeightAdjustment
from scheduler_core.plugins.fairshare.attrs import FillRound, QueueAttr, proportion_share
from scheduler_core.plugins.proportion.memo import Adjusted, ProportionMemo, deserved_shares

#: Adjusted weights are the weights times their factor times this, rounded.
ADJUSTED_WEIGHT_SCALE = 1000


def derive_adjusted(
    queue_opts: Mapping[str, QueueAttr],
    total: Resource,
    adjustments: Mapping[str, WeightAdjustment],
    memo: ProportionMemo,
    adjusted_memo: ProportionMemo,
) -> tuple[dict[str, Resource], Sequence[FillRound]]:
    """Replaces each queue's deserved share (``queue_opts`` holds the weighted loop's, run
    with ``memo``) by the one on adjusted weights; returns the weighted shares and the
    adjusted loop's record. The weights are left as they were."""
    weighted_fill = memo.last_fill
    last = adjusted_memo.adjusted
    if last is not None and last.weighted_fill is weighted_fill and last.adjustments is adjustments:
        # The same weighted loop and the same adjustments (the plugin hands the same object
        # back while its reading stands): the same result, without the work.
        for name, attr in queue_opts.items():
            attr.deserved = last.deserved[name].clone()
            attr.share = proportion_share(attr)
        return last.weighted, last.rounds
    weighted = {name: attr.deserved.clone() for name, attr in queue_opts.items()}
    weights = {name: attr.weight for name, attr in queue_opts.items()}
    for name, attr in queue_opts.items():
        adjustment = adjustments.get(name)
        factor = adjustment.factor if adjustment is not None else 1.0
        # Whole numbers, as the loop and its record take weights: a thousandth of the
        # weight is finer than any share a person reads.
        attr.weight = max(1, round(attr.weight * factor * ADJUSTED_WEIGHT_SCALE))
        attr.deserved = Resource.empty()
        attr.share = 0.0
    try:
        rounds = deserved_shares(queue_opts, total, adjusted_memo)
    finally:
        for name, attr in queue_opts.items():
            attr.weight = weights[name]
    for name, attr in queue_opts.items():
        adjustment = adjustments.get(name)
        if adjustment is not None and adjustment.floor > 0:
            floor = weighted[name].clone().multi(adjustment.floor)
            attr.deserved = res_max(attr.deserved, floor) or attr.deserved
        attr.share = proportion_share(attr)
    if weighted_fill is not None:
        adjusted_memo.adjusted = Adjusted(
            weighted_fill,
            adjustments,
            weighted,
            {name: attr.deserved.clone() for name, attr in queue_opts.items()},
            rounds,
        )
    return weighted, rounds
