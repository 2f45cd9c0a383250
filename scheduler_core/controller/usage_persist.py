"""The leader keeps each queue's decayed usage in the API server, so that a restarted
extender, a new leader or a ``helm upgrade`` takes it up where it was left.

Every replica measures usage itself from its own cache (``api/usage_history.py``): a standby
that has been running loses nothing when it takes over. What only the API server can carry is
the history of a process that was not running: so the leader writes, at most once per
``usage.persistInterval``, each queue's usage as of the API server's clock into the Queue's
annotation ``kube-queue-extender.io/usage-history`` (the Queue CRD's status schema is
Volcano's, with no room for it). A process that starts reads it once per queue, decayed over
the time since it was written. A restart therefore loses at most the accrual of one interval
(plus any time no replica ran at all), never more, and mints none.

A record that cannot be read (hand-edited, truncated) is refused by the cache: the queue
starts from zero, and the leader says so in a Warning event on the Queue.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Final
from urllib.parse import quote

from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.usage_history import (
    USAGE_HISTORY_ANNOTATION,
    UsageHistory,
    encode_record,
)

from .events import WARNING, ObjectRef
from .periodic import Periodic
from .rest import ApiError
from .runtime import Controller

log = logging.getLogger(__name__)

QUEUE_API: Final = "scheduling.volcano.sh/v1beta1"
#: The event reason of a refused record.
REFUSED_REASON: Final = "UsageHistoryRefused"


class UsagePersister:
    """See the module docstring. ``queues`` lists the cluster's queues, ``refusals`` hands
    over (and forgets) the queues whose persisted record the cache refused, with why;
    ``interval`` is the persist interval the configuration sets now (None: the plugin is off,
    nothing is written). ``tick`` is how often it looks; ``clock`` the monotonic clock."""

    def __init__(
        self,
        controller: Controller,
        history: UsageHistory,
        queues: Callable[[], Mapping[str, QueueInfo]],
        refusals: Callable[[], dict[str, str]],
        interval: Callable[[], float | None],
        *,
        tick: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._controller = controller
        self._rest = controller.rest
        self._recorder = controller.recorder
        self._history = history
        self._queues = queues
        self._refusals = refusals
        self._interval = interval
        self._clock = clock
        self._last: float | None = None
        self.writes = 0
        self._worker = Periodic("usage-persister", tick, self.tick, what="usage history write")

    def start(self) -> UsagePersister:
        self._worker.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._worker.stop(timeout)

    def tick(self) -> None:
        """On the leader: report refused records, then write every queue's usage when the
        persist interval has passed since the last write."""
        if not self._controller.is_leader():
            self._last = None  # a new term writes at once: the old leader's last is unknown
            return
        queues = self._queues()
        for name, reason in self._refusals().items():
            queue = queues.get(name)
            self._recorder.record(
                ObjectRef("Queue", name, api_version=QUEUE_API, uid=""),
                WARNING,
                REFUSED_REASON,
                f"queue {name}: {reason}; its usage history starts from zero"
                + ("" if queue is not None else " (queue since deleted)"),
                action="RestoreUsageHistory",
            )
        interval = self._interval()
        if interval is None:
            return
        now = self._clock()
        if self._last is not None and now - self._last < interval:
            return
        self._last = now
        for name, queue in queues.items():
            if not queue.implicit:
                self.persist(name)

    def persist(self, name: str) -> bool:
        """Write one queue's usage as of now; False when it has none or the write failed
        (the next interval tries again)."""
        record = self._history.export(name)
        if record is None:
            return False
        body = {"metadata": {"annotations": {USAGE_HISTORY_ANNOTATION: encode_record(record)}}}
        try:
            self._rest.merge_patch(f"/apis/{QUEUE_API}/queues/{quote(name)}", body, "queues")
        except ApiError as exc:
            if not exc.not_found:
                log.warning("usage history: cannot write queue %s: %s", name, exc)
            return False
        self.writes += 1
        return True
