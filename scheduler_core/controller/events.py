"""``events.k8s.io/v1`` Events, deduplicated the way client-go's recorder does it.

The same reason on the same object (and action) seen again within ten minutes is not a new
Event: it becomes a ``series`` (count and last observed time) on the first one, patched in
place; the note is the first one's (the API server keeps an Event's note immutable), as
client-go's key leaves the note out. One object gets at most one write per reason every
:data:`MIN_WRITE_INTERVAL` seconds: repeats in between only grow the count the next write
carries, so a pod kube-scheduler retries every second costs one write per half minute.

Recording never blocks and never raises: ``record`` only updates an in-memory entry and queues
its key; one worker thread writes, at a bounded rate (a token bucket over every write). Most
events are the leader's (its decisions: evictions, status); ``leader_only=False`` is for what
any replica must tell, such as the refusals of the verb it answered itself.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter

from .rest import ApiError, RestClient

log = logging.getLogger(__name__)

REPORTING_CONTROLLER: Final = "kube-queue-extender"
NORMAL: Final = "Normal"
WARNING: Final = "Warning"

#: client-go's aggregation window: the same event within it is a series, not a new Event.
SERIES_WINDOW: Final = 600.0
#: At most one write of one series this often: later repeats wait and are summed.
MIN_WRITE_INTERVAL: Final = 30.0
#: The API server rejects a note longer than 1 KiB.
MAX_NOTE: Final = 1024


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """The ``regarding`` object of an Event."""

    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    api_version: str = "v1"

    def to_wire(self) -> dict[str, str]:
        ref = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            ref["namespace"] = self.namespace
        if self.uid:
            ref["uid"] = self.uid
        return ref

    @staticmethod
    def of(
        obj: dict[str, Any], kind: str | None = None, api_version: str | None = None
    ) -> ObjectRef:
        """The reference of a decoded API object (its own kind and apiVersion unless given)."""
        meta = obj.get("metadata") or {}
        return ObjectRef(
            kind=kind or str(obj.get("kind") or ""),
            name=str(meta.get("name") or ""),
            namespace=str(meta.get("namespace") or ""),
            uid=str(meta.get("uid") or ""),
            api_version=api_version or str(obj.get("apiVersion") or "v1"),
        )


class TokenBucket:
    """``qps`` writes a second on average, ``burst`` at once (client-go's flowcontrol)."""

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("a rate limit needs qps > 0 and burst >= 1")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._at = clock()

    def delay(self) -> float:
        """Takes a token if one is there (0.0), else says how long until one is."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.qps)
        self._at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self.qps


@dataclass(slots=True)
class _Entry:
    regarding: ObjectRef
    type: str
    reason: str
    action: str
    note: str
    first_seen: float  # time.monotonic()
    count: int = 1
    last_observed: datetime = field(default_factory=lambda: datetime.now(UTC))
    name: str = ""  # the Event object's name once created
    namespace: str = ""
    written: int = 0  # the count the API server holds
    queued: bool = False
    leader_only: bool = True
    written_at: float | None = None  # clock() of the last successful write


#: client-go's aggregation key, less the fields every Event of ours shares: the object, the
#: reason and the action (not the note).
_Key = tuple[ObjectRef, str, str]


def _micro_time(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class EventRecorder:
    """Writes Events in the background; see the module docstring."""

    def __init__(
        self,
        rest: RestClient,
        identity: str,
        is_leader: Callable[[], bool],
        *,
        registry: CollectorRegistry | None = None,
        qps: float = 5.0,
        burst: int = 25,
        queue_size: int = 1000,
        cache_size: int = 4096,
        bucket: TokenBucket | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rest = rest
        self.identity = identity
        self._is_leader = is_leader
        self._bucket = bucket or TokenBucket(qps, burst, clock)
        self._clock = clock
        self._queue: queue.Queue[_Key] = queue.Queue(maxsize=queue_size)
        #: (due on ``clock``, tie-breaker, key): repeats waiting out the minimum interval.
        self._deferred: list[tuple[float, int, _Key]] = []
        self._sequence = itertools.count()
        self._cache: OrderedDict[_Key, _Entry] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._idle = threading.Condition()
        self._busy = 0
        self.events = Counter(
            "queue_extender_events",
            "Events recorded, by result: created, series (a repeat patched into a series), "
            "coalesced (a repeat folded into a pending write), deferred (a repeat waiting "
            "out the minimum interval), dropped (queue full), not_leader (this replica "
            "does not write), failed.",
            ["result"],
            registry=registry,
        )

    # ------------------------------------------------------------------ callers' side

    def record(
        self,
        regarding: ObjectRef,
        event_type: str,
        reason: str,
        note: str,
        action: str = "Scheduling",
        *,
        leader_only: bool = True,
    ) -> None:
        """Queues an Event; returns at once and never raises. ``leader_only=False``: written
        whether or not this replica leads (what the replica answering a verb must tell)."""
        if leader_only and not self._is_leader():
            self.events.labels("not_leader").inc()
            return
        note = note if len(note) <= MAX_NOTE else note[: MAX_NOTE - 3] + "..."
        key: _Key = (regarding, reason, action)
        now = self._clock()
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None and now - entry.first_seen < SERIES_WINDOW:
                entry.count += 1
                entry.last_observed = datetime.now(UTC)
                entry.leader_only = entry.leader_only and leader_only
                self._cache.move_to_end(key)
                if entry.queued:
                    self.events.labels("coalesced").inc()
                    return
            else:
                entry = _Entry(
                    regarding,
                    event_type,
                    reason,
                    action,
                    note,
                    first_seen=now,
                    leader_only=leader_only,
                )
                self._cache[key] = entry
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            entry.queued = True
            due = None if entry.written_at is None else entry.written_at + MIN_WRITE_INTERVAL
            if due is not None and due > now:
                heapq.heappush(self._deferred, (due, next(self._sequence), key))
                self.events.labels("deferred").inc()
                with self._idle:
                    self._busy += 1
                return
        try:
            self._queue.put_nowait(key)
        except queue.Full:
            with self._lock:
                entry.queued = False
            self.events.labels("dropped").inc()
            log.warning("event queue full; dropped %s %s on %s", reason, note, regarding.name)
            return
        with self._idle:
            self._busy += 1

    # ------------------------------------------------------------------ the worker

    def start(self) -> EventRecorder:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def flush(self, timeout: float = 10.0) -> bool:
        """Waits until every queued event has been written or given up (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._busy:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._idle.wait(remaining)
        return True

    def _due(self) -> _Key | None:
        """The deferred repeat whose minimum interval is over, if any."""
        with self._lock:
            if self._deferred and self._deferred[0][0] <= self._clock():
                return heapq.heappop(self._deferred)[2]
        return None

    def _run(self) -> None:
        while not self._stop.is_set():
            key = self._due()
            if key is None:
                try:
                    key = self._queue.get(timeout=0.2 if self._deferred else 0.5)
                except queue.Empty:
                    continue
            try:
                self._wait_for_token()
                if not self._stop.is_set():
                    self._write(key)
            except Exception:  # the worker must survive anything one event does
                log.exception("writing an event failed")
                self.events.labels("failed").inc()
            finally:
                with self._idle:
                    self._busy -= 1
                    self._idle.notify_all()

    def _wait_for_token(self) -> None:
        while not self._stop.is_set():
            delay = self._bucket.delay()
            if delay <= 0:
                return
            self._stop.wait(delay)

    def _write(self, key: _Key) -> None:
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                return
            entry.queued = False
            count, observed, name = entry.count, entry.last_observed, entry.name
        if entry.leader_only and not self._is_leader():
            self.events.labels("not_leader").inc()
            return
        try:
            if name:
                try:
                    self._patch_series(entry, count, observed)
                    self.events.labels("series").inc()
                    with self._lock:
                        entry.written, entry.written_at = count, self._clock()
                    return
                except ApiError as exc:
                    if not exc.not_found:
                        raise
                    # The Event expired (the API server keeps them an hour): start a new one.
            self._create(entry, count, observed)
            self.events.labels("created").inc()
        except ApiError as exc:
            self.events.labels("failed").inc()
            log.warning(
                "could not write event %s on %s %s/%s: %s",
                entry.reason,
                entry.regarding.kind,
                entry.regarding.namespace,
                entry.regarding.name,
                exc,
            )

    def _create(self, entry: _Entry, count: int, observed: datetime) -> None:
        ref = entry.regarding
        namespace = ref.namespace or "default"  # cluster-scoped objects: client-go's choice
        now = datetime.now(UTC)
        name = f"{ref.name}.{int(now.timestamp() * 1e9):x}"
        body: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": _micro_time(now),
            "reportingController": REPORTING_CONTROLLER,
            "reportingInstance": self.identity,
            "action": entry.action,
            "reason": entry.reason,
            "note": entry.note,
            "type": entry.type,
            "regarding": ref.to_wire(),
        }
        if count > 1:
            body["series"] = {"count": count, "lastObservedTime": _micro_time(observed)}
        self._rest.post(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", body, "events")
        with self._lock:
            entry.name, entry.namespace, entry.written = name, namespace, count
            entry.written_at = self._clock()

    def _patch_series(self, entry: _Entry, count: int, observed: datetime) -> None:
        body = {"series": {"count": count, "lastObservedTime": _micro_time(observed)}}
        self._rest.merge_patch(
            f"/apis/events.k8s.io/v1/namespaces/{entry.namespace}/events/{entry.name}",
            body,
            "events",
        )
