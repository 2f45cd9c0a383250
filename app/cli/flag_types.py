"""Argument types for the command-line flags: argparse turns their ``ArgumentTypeError`` into
``argument --flag: <message>`` and exit 2, so a bad value never reaches uvicorn or the engine."""

from __future__ import annotations

import argparse
import math


def integer(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None


def seconds(value: str) -> float:
    try:
        n = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not math.isfinite(n):
        raise argparse.ArgumentTypeError(f"{value!r} is not a finite number of seconds")
    return n


def positive_seconds(value: str) -> float:
    n = seconds(value)
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {value}")
    return n


def non_negative_seconds(value: str) -> float:
    n = seconds(value)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 seconds or more, not {value}")
    return n


def count(value: str) -> int:
    """0 (no limit) or more."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, not {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError("must be 0 (no limit) or more")
    return n


def port(value: str) -> int:
    n = integer(value)
    if not 1 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 1 and 65535, not {n}")
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
