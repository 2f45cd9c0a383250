"""What a reflector has told its sink: each object's resourceVersion and the version the
next watch starts from. Listed objects and watch events go to the sink through here, so a
relist turns into a diff (absent keys deleted, new or changed versions upserted, the rest
skipped) and a watch event the sink already has is not sent twice."""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

import orjson

from .transport import brief
from .watch_protocol import (
    RESTART_DECODE,
    RESTART_ERROR_EVENT,
    RESTART_EXPIRED,
    ApiStatus,
    ReflectorStats,
    status_of_object,
)

log = logging.getLogger("scheduler_core.cache.reflector")


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


class SinkFeed:
    def __init__(self, kind: str, name: str, sink: EventSink, stats: ReflectorStats) -> None:
        self.kind = kind
        self.name = name
        self.stats = stats
        self._sink = sink
        # The only per-object memory: enough to diff a relist against what the sink holds.
        self.versions: dict[str, str] = {}
        #: The resourceVersion the next watch starts from (list, event or bookmark).
        self.rv = ""

    # --- list -----------------------------------------------------------------------------

    def apply_listed(self, obj: dict[str, Any], seen: set[str]) -> None:
        meta = obj["metadata"]
        namespace = meta.get("namespace")
        key = f"{namespace}/{meta['name']}" if namespace else meta["name"]
        rv = meta.get("resourceVersion", "")
        seen.add(key)
        self.stats.listed += 1
        if self.versions.get(key) == rv:
            return
        try:
            self._sink.upsert(self.kind, obj)
        except Exception:
            self._sink_failed("upsert", key)
            return
        self.versions[key] = rv
        self.stats.events["LISTED"] += 1

    def reconcile_deletions(self, seen: set[str]) -> None:
        gone = [key for key in self.versions if key not in seen]
        for key in gone:
            del self.versions[key]
            try:
                self._sink.delete(self.kind, key)
            except Exception:
                self._sink_failed("delete", key)
                continue
            self.stats.events["LIST_DELETED"] += 1

    def synced(self) -> None:
        """Tell the sink a complete list has been applied."""
        try:
            self._sink.synced(self.kind)
        except Exception:
            self.stats.sink_errors += 1
            log.exception("%s: sink.synced failed", self.name)

    # --- watch ----------------------------------------------------------------------------

    def follow(self, response: Any) -> tuple[str | None, int]:
        """Apply a watch response's events as they arrive, one a line: why the watch must
        end (None when the stream ended by itself) and how many events it carried."""
        received = 0
        pending = b""
        for chunk in response.stream(65536, decode_content=True):
            if pending:
                chunk = pending + chunk
            lines = chunk.split(b"\n")
            pending = lines.pop()
            for line in lines:
                if line:
                    received += 1
                    ended = self.handle_event(line)
                    if ended is not None:
                        return ended, received
        if pending.strip():
            received += 1
            ended = self.handle_event(pending)
            if ended is not None:
                return ended, received
        return None, received

    def handle_event(self, line: bytes) -> str | None:
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
                if self.versions.get(key) != rv:
                    try:
                        self._sink.upsert(self.kind, obj)
                    except Exception:
                        self._sink_failed("upsert", key)
                    else:
                        self.versions[key] = rv
            elif etype == "DELETED":
                namespace = meta.get("namespace")
                key = f"{namespace}/{meta['name']}" if namespace else meta["name"]
                self.versions.pop(key, None)
                try:
                    self._sink.delete(self.kind, key)
                except Exception:
                    self._sink_failed("delete", key)
            elif etype == "BOOKMARK":
                pass
            elif etype == "ERROR":
                self.stats.events["ERROR"] += 1
                self.stats.last_event_at = time.monotonic()
                api_status = status_of_object(obj)
                if api_status.expired:
                    self.note_expired(api_status)
                    return RESTART_EXPIRED
                log.warning("%s: watch error event: %s", self.name, api_status.text())
                return RESTART_ERROR_EVENT
            else:
                log.warning("%s: ignoring watch event of unknown type %r", self.name, etype)
                return None
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            log.warning("%s: undecodable watch event (%s); re-watching", self.name, brief(exc))
            return RESTART_DECODE
        if rv:
            self.rv = rv
        self.stats.events[etype] += 1
        self.stats.last_event_at = time.monotonic()
        return None

    def note_expired(self, api_status: ApiStatus) -> None:
        log.info(
            "%s: watch from resourceVersion %s expired (%s); relisting",
            self.name,
            self.rv,
            api_status.text(),
        )

    def _sink_failed(self, operation: str, key: str) -> None:
        # The version is not recorded, so the next relist offers the object again.
        self.stats.sink_errors += 1
        log.exception("%s: sink.%s(%s) failed", self.name, operation, key)
