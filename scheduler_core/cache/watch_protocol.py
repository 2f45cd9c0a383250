"""The list+watch protocol's vocabulary, shared by the reflector's parts: the event types
counted, why a watch ended, a ``kind: Status`` answer, and the counters a scrape reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import orjson

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

STOPPED: Final = "stopped"  # internal: stop() was called; not a restart


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
class ApiStatus:
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


def status_from(code: int, body: bytes | None, http_reason: str = "") -> ApiStatus:
    obj: Any = None
    if body:
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            obj = None
    if isinstance(obj, dict) and obj.get("kind") == "Status":
        return status_of_object(obj, code)
    return ApiStatus(code, http_reason, "")


def status_of_object(obj: dict[str, Any], default_code: int = 0) -> ApiStatus:
    code = obj.get("code")
    return ApiStatus(
        code if isinstance(code, int) else default_code,
        str(obj.get("reason") or ""),
        str(obj.get("message") or ""),
    )
