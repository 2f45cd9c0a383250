"""A list of one resource applied to the sink page by page (``limit``/``continue``), so a
50,000-pod cluster never sits in memory twice, with the cyclic GC paused while pages are
decoded."""

from __future__ import annotations

import enum
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Final

import orjson

from .condition import Condition
from .sink_feed import SinkFeed
from .transport import TRANSPORT_ERRORS, brief
from .watch_protocol import status_from

log = logging.getLogger("scheduler_core.cache.reflector")

#: A GET: (query, read timeout) -> (HTTP status, reason phrase, body).
Get = Callable[[list[tuple[str, str]], float], tuple[int, str, bytes]]


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

    def locked(self) -> AbstractContextManager[object]:
        """The lock the count is changed under (a caller forking a child that pauses the
        collector too holds it across the fork, so the child never finds it taken)."""
        return self._lock


GC_PAUSE: Final = _GcPause()


class ListOutcome(enum.Enum):
    OK = "ok"
    CONTINUE_EXPIRED = "continue_expired"
    FAILED = "failed"
    STOPPED = "stopped"


class ListPager:
    def __init__(
        self,
        name: str,
        get: Get,
        feed: SinkFeed,
        condition: Condition,
        stop: threading.Event,
        *,
        page_size: int,
        read_timeout: float,
        progress_log_interval: float,
    ) -> None:
        self._name = name
        self._page_size = page_size
        self._read_timeout = read_timeout
        #: How often (seconds) a long list logs its progress; 0 logs every page.
        self._progress_log_interval = progress_log_interval
        self._get = get
        self._feed = feed
        self._stats = feed.stats
        self._condition = condition
        self._stop = stop

    def run(self, paginate: bool) -> ListOutcome:
        """One pass over the collection, page by page (or in one answer), every object
        applied to the sink as its page arrives and those no longer listed deleted."""
        seen: set[str] = set()
        self._stats.listed = 0
        continue_token = ""
        list_rv = ""
        pages = 0
        last_log = time.monotonic()
        while True:
            if self._stop.is_set():
                return ListOutcome.STOPPED
            query: list[tuple[str, str]] = []
            if paginate:
                query.append(("limit", str(self._page_size)))
            if continue_token:
                query.append(("continue", continue_token))
            try:
                status, http_reason, body = self._get(query, self._read_timeout)
            except TRANSPORT_ERRORS as exc:
                if self._stop.is_set():
                    return ListOutcome.STOPPED
                self._condition.transport_failed("list", exc)
                return ListOutcome.FAILED
            if status != 200:
                api_status = status_from(status, body, http_reason)
                if continue_token and api_status.expired:
                    return ListOutcome.CONTINUE_EXPIRED
                if status == 404:
                    self._condition.not_installed(api_status)
                else:
                    self._condition.fail(f"list failed: {api_status.text()}")
                return ListOutcome.FAILED
            with GC_PAUSE.paused():
                try:
                    page = orjson.loads(body)
                    del body
                    items = page.get("items") or ()
                    for obj in items:
                        self._feed.apply_listed(obj, seen)
                    meta = page.get("metadata") or {}
                except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError) as exc:
                    self._condition.fail(f"list failed: undecodable answer ({brief(exc)})")
                    return ListOutcome.FAILED
                del page, items
            pages += 1
            self._stats.last_event_at = time.monotonic()
            continue_token = str(meta.get("continue") or "")
            list_rv = str(meta.get("resourceVersion") or "")
            now = time.monotonic()
            if continue_token and now - last_log >= self._progress_log_interval:
                log.info(
                    "%s: listed %d objects so far (%d pages)", self._name, self._stats.listed, pages
                )
                last_log = now
            if not continue_token:
                break
        self._feed.reconcile_deletions(seen)
        self._feed.rv = list_rv
        return ListOutcome.OK
