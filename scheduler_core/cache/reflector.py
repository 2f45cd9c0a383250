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

The parts: the list pages (``list_pager.py``), what the sink has been told and the watch
events applied to it (``sink_feed.py``), the HTTP requests (``transport.py``), the phase and
failures readiness reports (``condition.py``), the protocol's vocabulary
(``watch_protocol.py``). This module runs the loop that ties them together.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import urllib3

from .condition import Condition, Phase
from .kinds import KindSpec
from .list_pager import ListOutcome, ListPager
from .sink_feed import EventSink, SinkFeed
from .transport import TRANSPORT_ERRORS, ApiTransport, brief
from .watch_protocol import (
    RESTART_CLOSED,
    RESTART_CONNECT,
    RESTART_DROPPED,
    RESTART_EXPIRED,
    RESTART_HTTP,
    RESTART_NOT_FOUND,
    RESTART_READ_TIMEOUT,
    RESTART_SHORT,
    STOPPED,
    ReflectorStats,
    status_from,
)

log = logging.getLogger(__name__)


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


class RetryDelays:
    """The wait before the next attempt: client-go's backoff, or a short one while nobody
    accepts the connection (an API server restarting)."""

    def __init__(self, o: ReflectorOptions, rng: random.Random) -> None:
        self._backoff = Backoff(
            o.backoff_initial,
            o.backoff_cap,
            o.backoff_factor,
            o.backoff_jitter,
            o.backoff_reset,
            rng,
        )
        unreachable_cap = min(o.backoff_cap, o.unreachable_backoff_cap)
        self._unreachable_backoff = Backoff(
            min(o.backoff_initial, unreachable_cap),
            unreachable_cap,
            o.backoff_factor,
            o.backoff_jitter,
            o.backoff_reset,
            rng,
        )

    def next_delay(self, unreachable: bool) -> float:
        """``unreachable``: the last failure was a connection nobody accepted."""
        backoff = self._unreachable_backoff if unreachable else self._backoff
        return backoff.next_delay()


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
        on_stall: Callable[[], None] | None = None,
    ) -> None:
        """``on_stall`` is called each time the watch is found stalled, once the reflector
        says so (``stale`` then answers why)."""
        self.spec = spec
        self._on_stall = on_stall
        self.namespace = namespace if spec.namespaced and namespace else None
        self.name = spec.plural if self.namespace is None else f"{spec.plural} in {namespace}"
        self.options = options or ReflectorOptions()
        self.stats = ReflectorStats()
        self._path = spec.list_path(self.namespace)
        self._transport = ApiTransport(
            api_client, self._path, self.options.connect_timeout, self.name
        )
        self._feed = SinkFeed(spec.kind, self.name, sink, self.stats)
        self._rng = rng or random.Random()
        self._retry = RetryDelays(self.options, self._rng)
        self._listed_once = False
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._condition = Condition(spec, self.name, self._path, self.options.failure_log_interval)
        self._pager = ListPager(
            self.name,
            self._get,
            self._feed,
            self._condition,
            self._stop,
            page_size=self.options.page_size,
            read_timeout=self.options.list_read_timeout,
            progress_log_interval=self.options.progress_log_interval,
        )
        self._stall_flag = False

    @property
    def _stalled(self) -> bool:
        """A watch stalled and the relist that follows has not been applied yet."""
        return self._stall_flag

    @_stalled.setter
    def _stalled(self, stalled: bool) -> None:
        self._stall_flag = stalled
        # Told after the flag is set: whoever hears of it reads the flag set.
        if stalled and self._on_stall is not None:
            self._on_stall()

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
        self._transport.cut()
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
        if self._stall_flag:
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
        return not self._stall_flag and heard is not None and heard > at

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion the next watch starts from (list, event or bookmark)."""
        return self._feed.rv

    @property
    def object_count(self) -> int:
        return len(self._feed.versions)

    def status(self) -> ReflectorStatus:
        return ReflectorStatus(
            kind=self.spec.kind,
            name=self.name,
            namespace=self.namespace,
            synced=self.has_synced(),
            phase=self._condition.phase,
            listed=self.stats.listed,
            objects=len(self._feed.versions),
            resource_version=self._feed.rv,
            reason=self._condition.reason,
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
            if reason == STOPPED:
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
        self._condition.phase = Phase.STOPPED

    def _wait_backoff(self) -> None:
        self._stop.wait(self._retry.next_delay(self._condition.unreachable))
        self._condition.unreachable = False

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
        if self._condition.phase not in (Phase.NOT_INSTALLED, Phase.FAILING):
            self._condition.phase = (
                Phase.LISTING
            )  # a failure state stays visible until a list succeeds
        outcome = ListOutcome.FAILED
        for paginate in (True, True, False):
            outcome = self._pager.run(paginate)
            if outcome is not ListOutcome.CONTINUE_EXPIRED:
                break
            log.info(
                "%s: list continue token expired; restarting the list%s",
                self.name,
                "" if paginate else " without pagination",
            )
        if outcome is not ListOutcome.OK:
            return False
        elapsed = time.monotonic() - started
        self.stats.sync_duration = elapsed
        self._listed_once = True
        self._condition.watching()
        self._stalled = False
        log.info(
            "%s: %s %d objects at resourceVersion %s in %.2fs",
            self.name,
            "relisted" if relist else "synced",
            self.stats.listed,
            self._feed.rv,
            elapsed,
        )
        self._synced.set()
        self._feed.synced()
        return True

    # ---------------------------------------------------------------- watch

    def _watch(self) -> str:
        """One watch request, streamed until it ends; returns why it ended."""
        o = self.options
        timeout_seconds = self._rng.randint(*o.watch_timeout_range())
        query = [
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", self._feed.rv),
            ("timeoutSeconds", str(timeout_seconds)),
            ("watch", "true"),
        ]
        started = time.monotonic()
        try:
            response = self._open(query, o.watch_read_timeout)
        except TRANSPORT_ERRORS as exc:
            if self._stop.is_set():
                return STOPPED
            self._condition.transport_failed("watch", exc)
            return RESTART_CONNECT
        received = 0
        try:
            if response.status != 200:
                api_status = status_from(response.status, response.data, response.reason or "")
                if api_status.expired:
                    self._feed.note_expired(api_status)
                    return RESTART_EXPIRED
                if response.status == 404:
                    return RESTART_NOT_FOUND
                self._condition.fail(f"watch failed: {api_status.text()}")
                return RESTART_HTTP
            self._condition.watching()
            ended, received = self._feed.follow(response)
            if ended is not None:
                return ended
        except urllib3.exceptions.ReadTimeoutError:
            if self._stop.is_set():
                return STOPPED
            log.warning(
                "%s: watch stalled (no event or bookmark for %.0fs); relisting",
                self.name,
                o.watch_read_timeout,
            )
            return RESTART_READ_TIMEOUT
        except TRANSPORT_ERRORS as exc:
            if self._stop.is_set():
                return STOPPED
            log.info("%s: watch connection dropped (%s); re-watching", self.name, brief(exc))
            return RESTART_DROPPED
        finally:
            self._transport.close(response)
        if self._stop.is_set():
            return STOPPED
        if received == 0 and time.monotonic() - started < 1.0:
            # client-go's "very short watch": a server closing at once must not be hammered.
            log.info("%s: watch closed immediately with no events", self.name)
            return RESTART_SHORT
        # The server ended the watch at its timeout: it was alive to the end.
        self.stats.last_event_at = time.monotonic()
        return RESTART_CLOSED

    # ---------------------------------------------------------------- HTTP

    def _open(self, query: list[tuple[str, str]], read_timeout: float) -> Any:
        return self._transport.open(query, read_timeout, self._stop)

    def _get(self, query: list[tuple[str, str]], read_timeout: float) -> tuple[int, str, bytes]:
        response = self._open(query, read_timeout)
        done = False
        try:
            body: bytes = response.data
            done = True
            return int(response.status), str(response.reason or ""), body
        finally:
            self._transport.close(response, reusable=done)
