"""A client-go grade list+watch reflector for one resource, on the official client's transport.

Why not ``kubernetes.watch`` / ``SharedInformer``: they build typed models (70 KB a pod), do not
back off, do not ask for bookmarks and do not paginate. This
reflector borrows only configuration, auth and the HTTP pool from ``kubernetes.client.ApiClient``
and does the protocol itself:

* a paginated list (``limit``/``continue``) applied page by page, so a 50,000-pod cluster never
  sits in memory twice; the reflector keeps ``key -> resourceVersion`` only, enough to turn a
  relist into a diff (absent keys deleted, new or changed versions upserted, the rest skipped);
* a watch from the list's resourceVersion with bookmarks, renewed with client-go's randomised
  ``timeoutSeconds`` (capped below the stall bound, so even a quiet resource is heard from:
  the API server sends a bookmark shortly before it ends a watch, then ends it);
* stall detection: a watch that delivered no event and no bookmark within the stall bound
  (``watch_read_timeout``) may have lost anything, even on a connection that looks alive; it
  is cut and the resource relisted, and until that relist is applied the reflector says it
  is stale (:meth:`Reflector.stale`), so that nothing decides on it;
* ``410 Gone`` (HTTP status or in-stream ERROR event) and "too old resource version" lead to a
  relist; every other failure to a re-watch from the last resourceVersion after a capped,
  jittered exponential backoff (client-go: 800 ms, x2, cap 30 s, jitter 1.0, reset after 2 min
  without failures).

Sink calls for one reflector all come from its own thread.
"""

from __future__ import annotations

import enum
import gc
import logging
import random
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import orjson
import urllib3
from kubernetes.client.exceptions import ApiException

from .kinds import KindSpec

log = logging.getLogger(__name__)


class EventSink(Protocol):
    """What the engine's cluster state implements to receive the informers' output.

    ``kind`` is a :class:`KindSpec` ``kind`` ("Pod", "Node", "PriorityClass",
    "PodDisruptionBudget", "Queue", "PodGroup"). Calls for one kind never overlap; calls for
    different kinds come from different threads, so the sink locks. ``delete`` may name a key
    the sink does not hold (an object whose upsert the sink refused): it must be a no-op then.
    """

    def upsert(self, kind: str, obj: dict[str, Any]) -> None:
        """Add or replace the object (decoded JSON) under its key."""

    def delete(self, kind: str, key: str) -> None:
        """Forget the object with key ``namespace/name`` (or ``name`` if cluster-scoped)."""

    def synced(self, kind: str) -> None:
        """The initial list (or a relist) of ``kind`` has been fully applied."""


# Event-type labels, the watch's own plus the two ways a list changes the cache.
EVENT_TYPES: Final = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR", "LISTED", "LIST_DELETED")

# Why a watch ended. A bounded set, because each is a metrics label value.
RESTART_CLOSED: Final = "closed"  # the server ended the stream at timeoutSeconds: renew at once
RESTART_EXPIRED: Final = "expired"  # 410 / too old resource version: relist
RESTART_NOT_FOUND: Final = "not_found"  # resource vanished (CRD removed): relist reports it
RESTART_DROPPED: Final = "dropped"  # connection broke mid-stream
RESTART_READ_TIMEOUT: Final = "read_timeout"  # nothing within the stall bound: a stall, relist
RESTART_CONNECT: Final = "connection_error"  # could not open the watch at all
RESTART_HTTP: Final = "http_error"  # the watch request got a non-200, non-410 answer
RESTART_ERROR_EVENT: Final = "error_event"  # in-stream ERROR other than 410
RESTART_SHORT: Final = "short_watch"  # closed at once with nothing in it: treat as a failure
RESTART_DECODE: Final = "decode_error"  # a line that is not a watch event
RESTART_REASONS: Final = (
    RESTART_CLOSED,
    RESTART_EXPIRED,
    RESTART_NOT_FOUND,
    RESTART_DROPPED,
    RESTART_READ_TIMEOUT,
    RESTART_CONNECT,
    RESTART_HTTP,
    RESTART_ERROR_EVENT,
    RESTART_SHORT,
    RESTART_DECODE,
)

_STOPPED: Final = "stopped"  # internal: stop() was called; not a restart

# urllib3 is what the kubernetes client's REST layer uses underneath; failures surface as its
# exceptions (the client only wraps SSL errors), as OSError, or as the client's ApiException.
_TRANSPORT_ERRORS: Final = (urllib3.exceptions.HTTPError, OSError, ApiException)


@dataclass(frozen=True, slots=True)
class ReflectorOptions:
    """Tunables; defaults are client-go's. Tests shrink the times so they run fast."""

    page_size: int = 500
    backoff_initial: float = 0.8
    backoff_cap: float = 30.0
    backoff_factor: float = 2.0
    backoff_jitter: float = 1.0
    backoff_reset: float = 120.0
    # Retries while nothing accepts the connection (the API server restarting) back off to
    # this cap only: a refused connection costs the server nothing, and the cache should
    # catch up within seconds of it coming back rather than after a 30 s wait.
    unreachable_backoff_cap: float = 1.0
    # timeoutSeconds of each watch is drawn from [min, 2*min], as client-go does, so that many
    # clients restarted together do not renew their watches in lockstep.
    min_watch_timeout: float = 300.0
    # The stall bound: a watch that delivered no event and no bookmark for this long is taken
    # as stalled (cut, relisted, and the cache stale meanwhile). Each watch asks the server to
    # end it within two thirds of this (``watch_timeout_range``), and the server sends a
    # bookmark shortly before it does, so a healthy watch is heard from well within it.
    watch_read_timeout: float = 90.0
    list_read_timeout: float = 60.0
    connect_timeout: float = 10.0
    # How often (seconds) the initial list logs its progress; 0 logs every page.
    progress_log_interval: float = 2.0
    # How long a failure state is logged at WARNING before repeats are demoted to DEBUG.
    failure_log_interval: float = 60.0

    def watch_timeout_range(self) -> tuple[int, int]:
        """The bounds of a watch's ``timeoutSeconds`` (drawn at random between them)."""
        low = max(1, round(min(self.min_watch_timeout, self.watch_read_timeout / 3)))
        return low, 2 * low


class Backoff:
    """Capped exponential backoff with jitter that forgets after a quiet period (client-go)."""

    def __init__(
        self,
        initial: float,
        cap: float,
        factor: float,
        jitter: float,
        reset_after: float,
        rng: random.Random | None = None,
    ) -> None:
        self._initial = initial
        self._cap = cap
        self._factor = factor
        self._jitter = jitter
        self._reset_after = reset_after
        self._rng = rng or random.Random()
        self._current = initial
        self._last_step: float | None = None

    def next_delay(self) -> float:
        """The wait before the next attempt; each call lengthens the following one."""
        now = time.monotonic()
        if self._last_step is not None and now - self._last_step > self._reset_after:
            self._current = self._initial
        self._last_step = now
        base = self._current
        self._current = min(self._cap, base * self._factor)
        return base + base * self._jitter * self._rng.random()


class _GcPause:
    """Counts the threads decoding big lists; the cyclic GC is off while any of them is.

    Decoding 10k pods takes 4x longer with the GC on: every dict allocated
    counts toward a collection that finds no cycles. Several reflectors list at once at startup,
    so the switch is reference counted rather than toggled.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._restore = False

    @contextmanager
    def paused(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                self._restore = gc.isenabled()
                gc.disable()
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0 and self._restore:
                    gc.enable()


GC_PAUSE: Final = _GcPause()


class Phase(enum.Enum):
    """Where a reflector is; readiness explains a non-synced informer with it."""

    STARTING = "starting"
    LISTING = "listing"
    WATCHING = "watching"
    NOT_INSTALLED = "not_installed"
    FAILING = "failing"
    STOPPED = "stopped"


@dataclass(slots=True)
class ReflectorStats:
    """Counters read by the metrics collector at scrape time.

    Written by the reflector thread only. Every key is created up front, so a scrape copying
    the dicts never races with an insertion.
    """

    events: dict[str, int] = field(default_factory=lambda: dict.fromkeys(EVENT_TYPES, 0))
    watch_restarts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(RESTART_REASONS, 0)
    )
    relists: int = 0
    stalls: int = 0  # watches cut because nothing arrived within the stall bound
    sink_errors: int = 0
    listed: int = 0  # objects seen by the current (or last) list pass
    #: time.monotonic() of the last event, bookmark or list page, or of a watch the server
    #: ended on time (it was alive and had delivered what it had)
    last_event_at: float | None = None
    sync_duration: float | None = None  # seconds the last complete list took


@dataclass(frozen=True, slots=True)
class ReflectorStatus:
    """A snapshot of one reflector for readiness and debugging."""

    kind: str
    name: str
    namespace: str | None
    synced: bool
    phase: Phase
    listed: int
    objects: int
    resource_version: str
    reason: str

    def describe(self) -> str:
        """Why this reflector is not synced yet, for a person reading /readyz."""
        if self.phase is Phase.NOT_INSTALLED:
            return self.reason
        if self.reason:
            return f"{self.listed} listed; {self.reason}"
        return f"{self.listed} listed"


@dataclass(frozen=True, slots=True)
class _ApiStatus:
    """The parts of a ``kind: Status`` answer the reflector acts on."""

    code: int
    reason: str
    message: str

    @property
    def expired(self) -> bool:
        return (
            self.code == 410
            or self.reason in ("Expired", "Gone")
            or "too old resource version" in self.message.lower()
        )

    def text(self) -> str:
        detail = f" {self.reason}" if self.reason else ""
        message = f": {self.message}" if self.message else ""
        return f"HTTP {self.code}{detail}{message}"


def _status_from(code: int, body: bytes | None, http_reason: str = "") -> _ApiStatus:
    obj: Any = None
    if body:
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            obj = None
    if isinstance(obj, dict) and obj.get("kind") == "Status":
        return _status_of_object(obj, code)
    return _ApiStatus(code, http_reason, "")


def _status_of_object(obj: dict[str, Any], default_code: int = 0) -> _ApiStatus:
    code = obj.get("code")
    return _ApiStatus(
        code if isinstance(code, int) else default_code,
        str(obj.get("reason") or ""),
        str(obj.get("message") or ""),
    )


class _ListOutcome(enum.Enum):
    OK = "ok"
    CONTINUE_EXPIRED = "continue_expired"
    FAILED = "failed"
    STOPPED = "stopped"


class Reflector:
    """Keeps a sink in step with one resource (optionally one namespace) of the API server."""

    def __init__(
        self,
        spec: KindSpec,
        api_client: Any,
        sink: EventSink,
        *,
        namespace: str | None = None,
        options: ReflectorOptions | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.spec = spec
        self.namespace = namespace if spec.namespaced and namespace else None
        self.name = spec.plural if self.namespace is None else f"{spec.plural} in {namespace}"
        self.options = options or ReflectorOptions()
        self.stats = ReflectorStats()
        self._api = api_client
        self._sink = sink
        self._path = spec.list_path(self.namespace)
        self._rng = rng or random.Random()
        o = self.options
        self._backoff = Backoff(
            o.backoff_initial,
            o.backoff_cap,
            o.backoff_factor,
            o.backoff_jitter,
            o.backoff_reset,
            self._rng,
        )
        unreachable_cap = min(o.backoff_cap, o.unreachable_backoff_cap)
        self._unreachable_backoff = Backoff(
            min(o.backoff_initial, unreachable_cap),
            unreachable_cap,
            o.backoff_factor,
            o.backoff_jitter,
            o.backoff_reset,
            self._rng,
        )
        self._unreachable = False  # the last failure was a connection nobody accepted
        # The only per-object memory: enough to diff a relist against what the sink holds.
        self._versions: dict[str, str] = {}
        self._rv = ""
        self._listed_once = False
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._response_lock = threading.Lock()
        self._response: Any = None  # the urllib3 response being read, so stop() can cut it
        self._phase = Phase.STARTING
        self._reason = ""
        self._logged_reason = ""
        self._logged_at = 0.0
        #: A watch stalled and the relist that follows has not been applied yet.
        self._stalled = False

    # ---------------------------------------------------------------- public surface

    def start(self) -> None:
        """Start the list+watch loop in a daemon thread (once)."""
        if self._thread is not None:
            raise RuntimeError(f"reflector {self.name} already started")
        self._thread = threading.Thread(
            target=self._run, name=f"reflector-{self.name}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop, cutting an in-flight watch, and wait up to ``timeout`` for it."""
        self._stop.set()
        with self._response_lock:
            response = self._response
        if response is not None:
            _shutdown(response)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def has_synced(self) -> bool:
        """True once the first complete list has been applied to the sink (stays true)."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    def stale(self, now: float | None = None) -> str:
        """Why the cache of this resource may be behind ("" when it is not): a watch stalled
        and the relist is not done, or nothing (event, bookmark, list page) arrived within
        the stall bound. Before the first sync the answer is "" (``has_synced`` says that)."""
        if not self.has_synced():
            return ""
        if self._stalled:
            return "its watch stalled; relisting"
        heard = self.stats.last_event_at
        now = time.monotonic() if now is None else now
        if heard is not None and now - heard > self.options.watch_read_timeout:
            return f"no event or bookmark for {now - heard:.0f}s"
        return ""

    def heard_since(self, at: float) -> bool:
        """Whether the cache has caught up with the API server after monotonic time ``at``:
        something arrived since, and no stall is pending."""
        heard = self.stats.last_event_at
        return not self._stalled and heard is not None and heard > at

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion the next watch starts from (list, event or bookmark)."""
        return self._rv

    @property
    def object_count(self) -> int:
        return len(self._versions)

    def status(self) -> ReflectorStatus:
        return ReflectorStatus(
            kind=self.spec.kind,
            name=self.name,
            namespace=self.namespace,
            synced=self.has_synced(),
            phase=self._phase,
            listed=self.stats.listed,
            objects=len(self._versions),
            resource_version=self._rv,
            reason=self._reason,
        )

    # ---------------------------------------------------------------- main loop

    def _run(self) -> None:
        need_list = True
        previous = ""
        while not self._stop.is_set():
            try:
                if need_list:
                    if not self._list():
                        self._wait_backoff()
                        continue
                    need_list = False
                reason = self._watch()
            except Exception:  # a bug here must not silently end the informer
                log.exception("%s: unexpected error; relisting after backoff", self.name)
                need_list = True
                self.stats.relists += int(self._listed_once)
                self._wait_backoff()
                continue
            if reason == _STOPPED:
                break
            self.stats.watch_restarts[reason] += 1
            if reason == RESTART_READ_TIMEOUT:
                self._stalled = True
                self.stats.stalls += 1
            if reason in (RESTART_EXPIRED, RESTART_NOT_FOUND, RESTART_READ_TIMEOUT):
                need_list = True
                self.stats.relists += 1
            # An expired watch is the server answering: relist at once (a restarted API
            # server expires every old resourceVersion), unless the last watch expired too.
            relist_now = reason in (RESTART_EXPIRED, RESTART_READ_TIMEOUT) and previous != reason
            if reason != RESTART_CLOSED and not relist_now:
                self._wait_backoff()
            previous = reason
        self._phase = Phase.STOPPED

    def _wait_backoff(self) -> None:
        backoff = self._unreachable_backoff if self._unreachable else self._backoff
        self._unreachable = False
        self._stop.wait(backoff.next_delay())

    # ---------------------------------------------------------------- list

    def _list(self) -> bool:
        """List the whole collection and reconcile the sink; False on failure (caller backs off).

        An expired continue token (the list took longer than etcd's compaction window) restarts
        the paginated list once; a second expiry falls back to one unpaginated list, which
        cannot expire. client-go's pager falls back at the first expiry; trying pages again
        first spares a big cluster one huge response when the expiry was a fluke.
        """
        started = time.monotonic()
        relist = self._listed_once
        if self._phase not in (Phase.NOT_INSTALLED, Phase.FAILING):
            self._phase = Phase.LISTING  # a failure state stays visible until a list succeeds
        outcome = _ListOutcome.FAILED
        for paginate in (True, True, False):
            outcome = self._list_pass(paginate)
            if outcome is not _ListOutcome.CONTINUE_EXPIRED:
                break
            log.info(
                "%s: list continue token expired; restarting the list%s",
                self.name,
                "" if paginate else " without pagination",
            )
        if outcome is not _ListOutcome.OK:
            return False
        elapsed = time.monotonic() - started
        self.stats.sync_duration = elapsed
        self._listed_once = True
        self._phase = Phase.WATCHING
        self._reason = ""
        self._stalled = False
        log.info(
            "%s: %s %d objects at resourceVersion %s in %.2fs",
            self.name,
            "relisted" if relist else "synced",
            self.stats.listed,
            self._rv,
            elapsed,
        )
        self._synced.set()
        try:
            self._sink.synced(self.spec.kind)
        except Exception:
            self.stats.sink_errors += 1
            log.exception("%s: sink.synced failed", self.name)
        return True

    def _list_pass(self, paginate: bool) -> _ListOutcome:
        seen: set[str] = set()
        self.stats.listed = 0
        continue_token = ""
        list_rv = ""
        pages = 0
        last_log = time.monotonic()
        while True:
            if self._stop.is_set():
                return _ListOutcome.STOPPED
            query: list[tuple[str, str]] = []
            if paginate:
                query.append(("limit", str(self.options.page_size)))
            if continue_token:
                query.append(("continue", continue_token))
            try:
                status, http_reason, body = self._get(query, self.options.list_read_timeout)
            except _TRANSPORT_ERRORS as exc:
                if self._stop.is_set():
                    return _ListOutcome.STOPPED
                self._unreachable = _refused(exc)
                self._fail(f"list failed: {_brief(exc)}")
                return _ListOutcome.FAILED
            if status != 200:
                api_status = _status_from(status, body, http_reason)
                if continue_token and api_status.expired:
                    return _ListOutcome.CONTINUE_EXPIRED
                if status == 404:
                    self._not_installed(api_status)
                else:
                    self._fail(f"list failed: {api_status.text()}")
                return _ListOutcome.FAILED
            with GC_PAUSE.paused():
                try:
                    page = orjson.loads(body)
                    del body
                    items = page.get("items") or ()
                    for obj in items:
                        self._apply_listed(obj, seen)
                    meta = page.get("metadata") or {}
                except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError) as exc:
                    self._fail(f"list failed: undecodable answer ({_brief(exc)})")
                    return _ListOutcome.FAILED
                del page, items
            pages += 1
            self.stats.last_event_at = time.monotonic()
            continue_token = str(meta.get("continue") or "")
            list_rv = str(meta.get("resourceVersion") or "")
            now = time.monotonic()
            if continue_token and now - last_log >= self.options.progress_log_interval:
                log.info(
                    "%s: listed %d objects so far (%d pages)", self.name, self.stats.listed, pages
                )
                last_log = now
            if not continue_token:
                break
        self._reconcile_deletions(seen)
        self._rv = list_rv
        return _ListOutcome.OK

    def _apply_listed(self, obj: dict[str, Any], seen: set[str]) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace")
        key = f"{namespace}/{meta['name']}" if namespace else meta["name"]
        rv = meta.get("resourceVersion", "")
        seen.add(key)
        self.stats.listed += 1
        if self._versions.get(key) == rv:
            return
        try:
            self._sink.upsert(self.spec.kind, obj)
        except Exception:
            self._sink_failed("upsert", key)
            return
        self._versions[key] = rv
        self.stats.events["LISTED"] += 1

    def _reconcile_deletions(self, seen: set[str]) -> None:
        gone = [key for key in self._versions if key not in seen]
        for key in gone:
            del self._versions[key]
            try:
                self._sink.delete(self.spec.kind, key)
            except Exception:
                self._sink_failed("delete", key)
                continue
            self.stats.events["LIST_DELETED"] += 1

    # ---------------------------------------------------------------- watch

    def _watch(self) -> str:
        """One watch request, streamed until it ends; returns why it ended."""
        o = self.options
        timeout_seconds = self._rng.randint(*o.watch_timeout_range())
        query = [
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", self._rv),
            ("timeoutSeconds", str(timeout_seconds)),
            ("watch", "true"),
        ]
        started = time.monotonic()
        try:
            response = self._open(query, o.watch_read_timeout)
        except _TRANSPORT_ERRORS as exc:
            if self._stop.is_set():
                return _STOPPED
            self._unreachable = _refused(exc)
            self._fail(f"watch failed: {_brief(exc)}")
            return RESTART_CONNECT
        received = 0
        try:
            if response.status != 200:
                api_status = _status_from(response.status, response.data, response.reason or "")
                if api_status.expired:
                    self._note_expired(api_status)
                    return RESTART_EXPIRED
                if response.status == 404:
                    return RESTART_NOT_FOUND
                self._fail(f"watch failed: {api_status.text()}")
                return RESTART_HTTP
            self._phase = Phase.WATCHING
            self._reason = ""
            pending = b""
            for chunk in response.stream(65536, decode_content=True):
                if pending:
                    chunk = pending + chunk
                lines = chunk.split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if line:
                        received += 1
                        ended = self._handle_event(line)
                        if ended is not None:
                            return ended
            if pending.strip():
                received += 1
                ended = self._handle_event(pending)
                if ended is not None:
                    return ended
        except urllib3.exceptions.ReadTimeoutError:
            if self._stop.is_set():
                return _STOPPED
            log.warning(
                "%s: watch stalled (no event or bookmark for %.0fs); relisting",
                self.name,
                o.watch_read_timeout,
            )
            return RESTART_READ_TIMEOUT
        except _TRANSPORT_ERRORS as exc:
            if self._stop.is_set():
                return _STOPPED
            log.info("%s: watch connection dropped (%s); re-watching", self.name, _brief(exc))
            return RESTART_DROPPED
        finally:
            self._close(response)
        if self._stop.is_set():
            return _STOPPED
        if received == 0 and time.monotonic() - started < 1.0:
            # client-go's "very short watch": a server closing at once must not be hammered.
            log.info("%s: watch closed immediately with no events", self.name)
            return RESTART_SHORT
        # The server ended the watch at its timeout: it was alive to the end.
        self.stats.last_event_at = time.monotonic()
        return RESTART_CLOSED

    def _handle_event(self, line: bytes) -> str | None:
        """Apply one watch event; a non-None answer ends the watch with that reason."""
        try:
            event = orjson.loads(line)
            etype = event["type"]
            obj = event["object"]
            meta = obj.get("metadata") or {}
            rv = meta.get("resourceVersion") or ""
            if etype == "ADDED" or etype == "MODIFIED":
                namespace = meta.get("namespace")
                key = f"{namespace}/{meta['name']}" if namespace else meta["name"]
                if self._versions.get(key) != rv:
                    try:
                        self._sink.upsert(self.spec.kind, obj)
                    except Exception:
                        self._sink_failed("upsert", key)
                    else:
                        self._versions[key] = rv
            elif etype == "DELETED":
                namespace = meta.get("namespace")
                key = f"{namespace}/{meta['name']}" if namespace else meta["name"]
                self._versions.pop(key, None)
                try:
                    self._sink.delete(self.spec.kind, key)
                except Exception:
                    self._sink_failed("delete", key)
            elif etype == "BOOKMARK":
                pass
            elif etype == "ERROR":
                self.stats.events["ERROR"] += 1
                self.stats.last_event_at = time.monotonic()
                api_status = _status_of_object(obj)
                if api_status.expired:
                    self._note_expired(api_status)
                    return RESTART_EXPIRED
                log.warning("%s: watch error event: %s", self.name, api_status.text())
                return RESTART_ERROR_EVENT
            else:
                log.warning("%s: ignoring watch event of unknown type %r", self.name, etype)
                return None
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            log.warning("%s: undecodable watch event (%s); re-watching", self.name, _brief(exc))
            return RESTART_DECODE
        if rv:
            self._rv = rv
        self.stats.events[etype] += 1
        self.stats.last_event_at = time.monotonic()
        return None

    def _note_expired(self, api_status: _ApiStatus) -> None:
        log.info(
            "%s: watch from resourceVersion %s expired (%s); relisting",
            self.name,
            self._rv,
            api_status.text(),
        )

    # ---------------------------------------------------------------- HTTP

    def _open(self, query: list[tuple[str, str]], read_timeout: float) -> Any:
        """Send a GET through the client (its host, auth, TLS and pool); answer unread.

        ``param_serialize`` with the ``BearerToken`` setting is what the generated API classes
        do, so tokens from exec plugins and refreshed service-account tokens apply here too.
        """
        method, url, headers, _body, _post = self._api.param_serialize(
            "GET",
            self._path,
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        rest = self._api.call_api(
            method,
            url,
            header_params=headers,
            _request_timeout=(self.options.connect_timeout, read_timeout),
        )
        response = rest.response
        with self._response_lock:
            self._response = response
        if self._stop.is_set():
            _shutdown(response)
        return response

    def _get(self, query: list[tuple[str, str]], read_timeout: float) -> tuple[int, str, bytes]:
        response = self._open(query, read_timeout)
        done = False
        try:
            body: bytes = response.data
            done = True
            return int(response.status), str(response.reason or ""), body
        finally:
            self._close(response, reusable=done)

    def _close(self, response: Any, reusable: bool = False) -> None:
        """Give the connection back; one not read to its end is closed first.

        A watch connection is never reused: it may hold unread bytes, and it lives for minutes
        anyway. A fully read list page goes back to the pool for the next page.
        """
        with self._response_lock:
            if self._response is response:
                self._response = None
        try:
            if not reusable:
                response.close()
            response.release_conn()
        except Exception:  # closing a broken connection may fail again; nothing to do
            log.debug("%s: closing the connection failed", self.name, exc_info=True)

    # ---------------------------------------------------------------- failures

    def _not_installed(self, api_status: _ApiStatus) -> None:
        self._phase = Phase.NOT_INSTALLED
        if self.spec.custom:
            reason = f"CRD {self.spec.crd_name} not installed"
        else:
            reason = f"resource {self.spec.resource}/{self.spec.version} not found"
        self._reason = reason
        self._log_failure(f"{reason} ({api_status.text()} on GET {self._path}); retrying")

    def _fail(self, reason: str) -> None:
        self._phase = Phase.FAILING
        self._reason = reason
        self._log_failure(f"{reason}; retrying with backoff")

    def _log_failure(self, message: str) -> None:
        """WARNING when the failure is new, then at most once per interval (no log floods)."""
        now = time.monotonic()
        if (
            message != self._logged_reason
            or now - self._logged_at >= self.options.failure_log_interval
        ):
            log.warning("%s: %s", self.name, message)
            self._logged_reason = message
            self._logged_at = now
        else:
            log.debug("%s: %s", self.name, message)

    def _sink_failed(self, operation: str, key: str) -> None:
        # The version is not recorded, so the next relist offers the object again.
        self.stats.sink_errors += 1
        log.exception("%s: sink.%s(%s) failed", self.name, operation, key)


def _shutdown(response: Any) -> None:
    """Interrupt a blocking read on ``response`` from another thread."""
    try:
        response.shutdown()
    except Exception:
        log.debug("shutting down a response failed", exc_info=True)


def _refused(exc: BaseException) -> bool:
    """A connection nobody accepted (refused, or not established in time), as opposed to a
    server that answered or broke off: only these are retried on the short backoff."""
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
        exc = exc.reason
    return isinstance(exc, urllib3.exceptions.ConnectTimeoutError | ConnectionRefusedError)


def _brief(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."
