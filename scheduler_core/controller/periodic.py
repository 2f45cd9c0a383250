"""The background loops' one thread: call a pass every interval until stopped.

The reclaim loop, the status writer, the parked-pod requeuer and the configuration watcher all
need the same thing: a daemon thread, a stop that wakes it at once, and a pass that raises
logged and survived, because the verbs keep serving whatever one pass does.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

#: The share of a core that the leader's passes over the whole cluster (the reclaim cycle, the
#: status write-back) may take on average: past it, the pause after a pass grows.
BACKGROUND_SHARE = 0.25


def pause_after(interval: float, took: float, max_share: float | None) -> float:
    """Seconds to wait after a tick that took ``took``: ``interval``, or longer when the tick
    was so long that waiting only ``interval`` would give the loop more than ``max_share`` of
    a core. The verbs share the process (and its interpreter lock) and the machine with
    kube-scheduler and the API server: a pass that costs a second, repeated every second
    while pods are bound, takes a core from them."""
    if max_share is None or took <= 0:
        return interval
    return max(interval, took * (1.0 / max_share - 1.0))


class Periodic:
    """Calls ``tick`` every ``interval`` seconds in a daemon thread named ``name`` until
    :meth:`stop`. A tick that raises is logged as "``what`` failed" and reported to
    ``on_error``; the next tick runs as usual. With ``max_share``, a long tick is followed
    by a longer pause, so the loop's ticks take at most that share of the time."""

    def __init__(
        self,
        name: str,
        interval: float,
        tick: Callable[[], object],
        *,
        what: str,
        on_error: Callable[[], None] | None = None,
        max_share: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_share is not None and not 0 < max_share <= 1:
            raise ValueError(f"max_share must be in (0, 1], not {max_share}")
        self.name = name
        self.interval = interval
        self.max_share = max_share
        self._clock = clock
        #: The pause before the next tick (``interval``, or longer after a long tick).
        self.pause = interval
        self._tick = tick
        self._what = what
        self._on_error = on_error
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.wait(self.pause):
            started = self._clock()
            try:
                self._tick()
            except Exception:
                if self._on_error is not None:
                    self._on_error()
                log.exception("%s failed", self._what)
            self.pause = pause_after(self.interval, self._clock() - started, self.max_share)
