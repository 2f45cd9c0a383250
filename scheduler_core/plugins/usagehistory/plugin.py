"""usagehistory's plugin: fair share over time. A queue that used more than its weight share in the
recent past gets a smaller share of what is contended now, and one that used less a larger
one, within bounds.

Each queue's usage is the integral of what it held, decayed with a half-life
(``api/usage_history.py``, measured by the live cache). Where the queues in the session ask
for more than the cluster holds, proportion asks this plugin (hook ``adjustWeights``) how to
change their weights before its deserved loop:

    u_q  = max over dimensions d of U_q,d / sum_r U_r,d     (usage share, dominant dimension)
    w_q  = weight_q / sum_r weight_r                        (weight share)
    f_q  = clamp(1 - (u_q - w_q) / w_q, 1/M, M)             (M: usage.maxAdjustment)

(``f_q`` in hundredths, rounded before the clamp.)

The loop then runs on ``weight_q * f_q``, and proportion keeps every queue at no less than
``usage.floor`` times the deserved share the unchanged weights give it (and its guarantee,
which the loop already keeps). A queue whose usage share equals its weight share keeps its
weight; one that used nothing gets up to M times it; one that used twice its share or more
gets 1/M of it. More usage of one queue raises its usage share and lowers every other's, so
it never raises that queue's factor nor lowers another's: more past usage never raises a
queue's deserved share.

The plugin off, no usage measured, or no contention: no adjustment at all, and proportion
answers exactly as without it. A half-life of zero or none is refused with the configuration
(``args.py``), so the plugin can never be on and silently do nothing.

Capacity (hierarchical or not) does not ask for adjustments: its deserved shares come from
the queues' ``deserved`` specs, which an operator sets, not from weights.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from scheduler_core.api.usage_history import UsageReading
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.hooks import ADJUST_WEIGHTS, WeightAdjustment
from scheduler_core.framework.registry import (
    FollowStep,
    Plugin,
    UsageChange,
    follows_nothing,
)
from scheduler_core.framework.session import Session
from scheduler_core.plugins.usagehistory.args import UsageHistoryArgs

log = logging.getLogger("scheduler_core.plugins.usagehistory")

PLUGIN_NAME = "usagehistory"
#: Factors are kept to this many decimals (see ``adjust_weights``).
FACTOR_DECIMALS = 2
#: Fair-share plugins that ask for the adjustment: the plugin must open before them.
ASKED_BY = ("proportion",)


def configured_settings(conf: SchedulerConfiguration) -> UsageHistoryArgs | None:
    """The record of the plugin's arguments as ``conf`` turns it on (its first entry in a
    tier): the one read when the configuration was checked, else read now. None when the
    configuration does not use it. Raises ``UsageSettingsError`` on bad arguments."""
    for tier in conf.tiers:
        for option in tier.plugins:
            if option.name == PLUGIN_NAME:
                return Arguments(option.arguments, parsed=option.args).typed(UsageHistoryArgs)
    return None


def format_span(seconds: float) -> str:
    """A half-life the way people say it: ``7d``, ``36h``, ``90s``."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("m", 60.0)):
        if seconds >= size and (seconds / size).is_integer():
            return f"{int(seconds / size)}{unit}"
    return f"{seconds:g}s"


def adjust_weights(
    weights: Mapping[str, int],
    usage: Mapping[str, Mapping[str, float]],
    settings: UsageHistoryArgs,
) -> dict[str, WeightAdjustment]:
    """The formula of the module docstring for the queues of ``weights`` (name -> weight)
    given their decayed ``usage`` (name -> dimension -> amount x seconds): an adjustment for
    every queue of positive weight, or none at all when there is no usage to weigh (or the
    bound is 1, which allows no move)."""
    total_weight = sum(w for w in weights.values() if w > 0)
    if total_weight <= 0 or settings.max_adjustment <= 1:
        return {}
    totals: dict[str, float] = {}
    for name in weights:
        for dimension, amount in usage.get(name, {}).items():
            if amount > 0:
                totals[dimension] = totals.get(dimension, 0.0) + amount
    if not totals:
        return {}
    low, high = 1.0 / settings.max_adjustment, settings.max_adjustment
    reason = f"its usage over the last {format_span(settings.half_life)} (half-life)"
    out: dict[str, WeightAdjustment] = {}
    for name, weight in weights.items():
        if weight <= 0:
            continue
        held = usage.get(name, {})
        used = max(
            (held.get(dimension, 0.0) / total for dimension, total in totals.items()),
            default=0.0,
        )
        weight_share = weight / total_weight
        # In hundredths: usage moves a little with every reading, and a factor that moved in
        # its fifth digit would make proportion run its loop again for no visible change.
        # Rounded before the bound is applied, so the bound holds exactly; both steps are
        # monotone, so the factor still never rises with more usage.
        raw = 1.0 - (used - weight_share) / weight_share
        factor = min(high, max(low, round(raw, FACTOR_DECIMALS)))
        out[name] = WeightAdjustment(factor, settings.floor, used, weight_share, reason)
    return out


#: The plugin's slot in ``Session.memos``.
MEMO_SLOT = "usagehistory"


@dataclass(slots=True)
class AdjustmentMemo:
    """The last adjustments worked out, with the reading, settings and weights they were
    worked out from; replaced whole, so threads may share it."""

    last: (
        tuple[
            UsageReading,
            UsageHistoryArgs,
            tuple[tuple[str, int], ...],
            Mapping[str, WeightAdjustment],
        ]
        | None
    ) = None


class UsageHistoryPlugin(Plugin[UsageHistoryArgs]):
    """Fills ``adjustWeights`` from the usage the live cache measures (see the module
    docstring). Keeps nothing per session that a change of usage makes stale: the reading
    it answers from is the history's at the session's opening."""

    name = PLUGIN_NAME
    args_type: ClassVar[type[UsageHistoryArgs]] = UsageHistoryArgs

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.reading: UsageReading | None = None
        self._memo = AdjustmentMemo()

    @classmethod
    def conf_problems(cls, arguments: Arguments, conf: SchedulerConfiguration) -> list[str]:
        """A place in the tiers after a plugin that asks for the adjustment (it would ask
        before this plugin opened, and get none). Bad arguments are refused by
        ``UsageHistoryArgs.parse`` as the configuration is checked."""
        del arguments
        problems: list[str] = []
        seen: list[str] = []
        for tier in conf.tiers:
            for option in tier.plugins:
                if option.name == PLUGIN_NAME:
                    late = [name for name in seen if name in ASKED_BY]
                    if late:
                        problems.append(
                            f"it must be listed before {', '.join(late)}, which reads its "
                            "adjustment as it opens"
                        )
                    return problems
                seen.append(option.name)
        return problems

    def on_session_open(self, ssn: Session) -> None:
        history = ssn.snapshot.usage_history
        if history is None:
            if ssn.memos.first_time("usagehistory.unmeasured"):
                log.info(
                    "usagehistory: this cluster's usage is not measured over time (no live "
                    "cache): shares are the weighted ones"
                )
            return
        history.configure(self.args.half_life)
        self.reading = history.reading()
        self._memo = ssn.memos.slot(MEMO_SLOT, AdjustmentMemo)
        ssn.add_hook(ADJUST_WEIGHTS, self.name, self._adjust)

    def _adjust(self, weights: Mapping[str, int]) -> Mapping[str, WeightAdjustment]:
        """The adjustments for these weights on this session's reading: the last session's
        when both are the same (a reading stands for its refresh interval, and sessions
        open many times within it)."""
        reading = self.reading
        if reading is None:
            return {}
        asked = tuple(weights.items())
        last = self._memo.last
        if (
            last is not None
            and last[0] is reading
            and (last[1], last[2])
            == (
                self.args,
                asked,
            )
        ):
            return last[3]
        adjustments = adjust_weights(weights, reading.usage, self.args)
        self._memo.last = (reading, self.args, asked, adjustments)
        return adjustments

    def can_follow(self, ssn: Session) -> bool:
        return True

    def follow(self, ssn: Session, change: UsageChange) -> FollowStep | None:
        return follows_nothing
