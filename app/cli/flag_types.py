"""Argument types for the command-line flags: argparse turns their ``ArgumentTypeError`` into
``argument --flag: <message>`` and exit 2, so a bad value never reaches uvicorn or the engine."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TypeVar

N = TypeVar("N", int, float)


def integer(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None


def real(value: str, what: str = "a number") -> float:
    """Any float, infinities and NaN included: the caller's check says which it takes."""
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not {what}") from None


def checked(
    parse: Callable[[str], N], accept: Callable[[N], bool], message: str
) -> Callable[[str], N]:
    """A flag's type: ``parse``'s value when ``accept`` takes it, else ``message`` (with
    ``{value}``, the flag's text, and ``{n}``, the parsed value, filled in)."""

    def flag(value: str) -> N:
        n = parse(value)
        if not accept(n):
            raise argparse.ArgumentTypeError(message.format(value=value, n=n))
        return n

    return flag


def seconds(value: str) -> float:
    n = real(value, "a number of seconds")
    if not math.isfinite(n):
        raise argparse.ArgumentTypeError(f"{value!r} is not a finite number of seconds")
    return n


positive_seconds = checked(seconds, lambda n: n > 0, "must be more than 0 seconds, not {value}")
non_negative_seconds = checked(seconds, lambda n: n >= 0, "must be 0 seconds or more, not {value}")
positive_rate = checked(
    real, lambda n: math.isfinite(n) and n > 0, "must be a positive rate, not {value}"
)
port = checked(integer, lambda n: 1 <= n <= 65535, "port must be between 1 and 65535, not {n}")


def count(value: str) -> int:
    """0 (no limit) or more."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError("must be 0 (no limit) or more")
    return n


def host_port(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT`` or ``:PORT``: the one reading of a listener's address.
    An empty host is every interface ("0.0.0.0"), as Go's ``net.Listen`` and
    controller-runtime's ``--metrics-bind-address`` read it."""
    host, sep, number = value.rpartition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"{value!r} is not HOST:PORT (e.g. 0.0.0.0:9090)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host or "0.0.0.0", port(number)
