"""usagehistory's arguments, read once into a typed record.

Unlike Volcano's lenient accessors, every value here is checked and a bad one refuses the
configuration, naming the key: a half-life that is missing or zero would leave the plugin on
and doing nothing, and a bound or floor out of range would make the formula meaningless.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scheduler_core.api.duration import DurationError, parse_duration
from scheduler_core.framework.arguments import ArgumentError, Arguments

HALF_LIFE = "usage.halfLife"
MAX_ADJUSTMENT = "usage.maxAdjustment"
FLOOR = "usage.floor"
PERSIST_INTERVAL = "usage.persistInterval"

DEFAULT_MAX_ADJUSTMENT = 2.0
DEFAULT_FLOOR = 0.5
DEFAULT_PERSIST_INTERVAL = 300.0


class UsageSettingsError(ArgumentError):
    """The plugin's arguments cannot be used; the message says which and why."""


@dataclass(frozen=True, slots=True)
class UsageHistoryArgs:
    """The plugin's arguments, checked: ``half_life`` and ``persist_interval`` in seconds,
    ``max_adjustment`` >= 1, ``floor`` in [0, 1]."""

    half_life: float
    max_adjustment: float = DEFAULT_MAX_ADJUSTMENT
    floor: float = DEFAULT_FLOOR
    persist_interval: float = DEFAULT_PERSIST_INTERVAL

    @classmethod
    def parse(cls, arguments: Arguments) -> UsageHistoryArgs:
        """The record of ``arguments``; ``UsageSettingsError`` with the reason when they
        cannot be used. A missing or zero half-life is an error, not a default: the plugin
        would be on and do nothing."""
        raw = arguments.raw()
        half_life = _duration(raw.get(HALF_LIFE), HALF_LIFE)
        if half_life is None:
            raise UsageSettingsError(
                f"{HALF_LIFE} is missing: say how fast past usage fades, e.g. {HALF_LIFE}: "
                "168h (without it the plugin would be on and change nothing)"
            )
        if half_life <= 0:
            raise UsageSettingsError(
                f"{HALF_LIFE} is 0: past usage would fade at once and the plugin would be on "
                "and change nothing; set a positive half-life such as 168h, or take the "
                "plugin out"
            )
        max_adjustment = _number(raw.get(MAX_ADJUSTMENT), MAX_ADJUSTMENT, DEFAULT_MAX_ADJUSTMENT)
        if max_adjustment < 1:
            raise UsageSettingsError(
                f"{MAX_ADJUSTMENT} is {max_adjustment:g}: it bounds the factor a weight is "
                "multiplied or divided by and must be at least 1 (1: no effect)"
            )
        floor = _number(raw.get(FLOOR), FLOOR, DEFAULT_FLOOR)
        if not 0 <= floor <= 1:
            raise UsageSettingsError(
                f"{FLOOR} is {floor:g}: the fraction of its weighted share a queue always "
                "keeps must be between 0 and 1"
            )
        persist = _duration(raw.get(PERSIST_INTERVAL), PERSIST_INTERVAL)
        if persist is not None and persist <= 0:
            raise UsageSettingsError(f"{PERSIST_INTERVAL} must be a positive duration such as 5m")
        return cls(
            half_life=half_life,
            max_adjustment=max_adjustment,
            floor=floor,
            persist_interval=persist if persist is not None else DEFAULT_PERSIST_INTERVAL,
        )


def _duration(raw: object, key: str) -> float | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise UsageSettingsError(f"{key} must be a duration such as 168h, not {raw!r}")
    try:
        return parse_duration(str(raw))
    except DurationError as exc:
        raise UsageSettingsError(f"{key}: {exc}") from exc


def _number(raw: object, key: str, default: float) -> float:
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise UsageSettingsError(f"{key} must be a number, not {raw!r}")
    return float(raw)
