"""klog-style verbosity for stdlib logging, so engine code can log as Volcano does.

Volcano logs with `klog.V(3).Infof(...)`; here that is `log.log(v(3), ...)`. Verbosity n
maps to the stdlib level `INFO - n`, so `-v N` (logger level `v(N)`) shows every V(n) with
n <= N, and V(10) coincides with DEBUG. This module is stdlib-only on purpose: the engine
must not import the HTTP service, which owns the handlers and formats.
"""

from __future__ import annotations

import logging

MAX_VERBOSITY = 10


_LEVELS = tuple(logging.INFO - n for n in range(MAX_VERBOSITY + 1))


def v(n: int) -> int:
    """The stdlib logging level of klog verbosity `n` (clamped to 0..10). Every engine log
    call asks this first, hundreds of thousands of times a large session: a table lookup."""
    if 0 <= n <= MAX_VERBOSITY:
        return _LEVELS[n]
    return logging.INFO - max(0, min(MAX_VERBOSITY, n))


def verbosity_of(level: int) -> int:
    """The klog verbosity of a stdlib level at or below INFO (0 for INFO and above)."""
    return max(0, min(MAX_VERBOSITY, logging.INFO - level))


for _n in range(1, MAX_VERBOSITY):
    logging.addLevelName(v(_n), f"V{_n}")
