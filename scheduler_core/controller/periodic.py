"""The background loops' one thread: call a pass every interval until stopped.

The reclaim loop, the status writer, the parked-pod requeuer and the configuration watcher all
need the same thing: a daemon thread, a stop that wakes it at once, and a pass that raises
logged and survived, because the verbs keep serving whatever one pass does.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Periodic:
    """Calls ``tick`` every ``interval`` seconds in a daemon thread named ``name`` until
    :meth:`stop`. A tick that raises is logged as "``what`` failed" and reported to
    ``on_error``; the next tick runs as usual."""

    def __init__(
        self,
        name: str,
        interval: float,
        tick: Callable[[], object],
        *,
        what: str,
        on_error: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        self.interval = interval
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
        while not self._stop.wait(self.interval):
            try:
                self._tick()
            except Exception:
                if self._on_error is not None:
                    self._on_error()
                log.exception("%s failed", self._what)
