"""Durations written the way Kubernetes users write them (Go's ``time.ParseDuration``).

Minimum runtimes come from annotations and configuration arguments, where people write
``"10m"``, ``"1h30m"`` or ``"90s"``; a bare number is taken as seconds.
"""

from __future__ import annotations

import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


class DurationError(ValueError):
    """Not a duration; the message quotes the text."""


def parse_duration(text: str) -> float:
    """Seconds in ``text`` ("10m", "1h30m", "2.5s", "0", "600"); negative is an error."""
    raw = text.strip()
    if not raw:
        raise DurationError("empty duration")
    try:
        seconds = float(raw)
    except ValueError:
        pass
    else:
        if seconds < 0 or seconds != seconds:
            raise DurationError(f"duration {text!r} must not be negative")
        return seconds
    if raw.startswith("-"):
        raise DurationError(f"duration {text!r} must not be negative")
    body = raw[1:] if raw.startswith("+") else raw
    total = 0.0
    pos = 0
    for match in _PART.finditer(body):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(body) or pos == 0:
        raise DurationError(f"{text!r} is not a duration (use e.g. 90s, 10m, 1h30m)")
    return total
