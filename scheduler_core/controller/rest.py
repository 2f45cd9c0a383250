"""JSON requests through the informers' ``ApiClient``, counted per resource, verb and result.

The generated API classes build typed models and pick a PATCH content type by position in a
list; the controller writes a few small documents and wants plain dicts, an explicit merge
patch, and one counter of every write it makes (``queue_extender_api_writes_total``), which is
how a burst of cluster changes is shown to cost a bounded number of writes.

Two more things the eviction path needs from here: a write with one hard deadline and no
hidden retries (:meth:`RestClient.post_within`), which tells a request that never left from
one whose fate is unknown; and the API server's clock (:class:`ServerClock`), read from the
``Date`` header of every answer, so that ages the cluster judges (a pod's minimum runtime) are
measured on the clock that stamped them rather than on a local clock that may be off.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any, Final

import orjson
import urllib3
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry, Counter, Gauge

log = logging.getLogger(__name__)

MERGE_PATCH: Final = "application/merge-patch+json"
JSON: Final = "application/json"

#: (connect, read) timeouts of one write: a slow API server delays a background thread only.
TIMEOUT: Final = (5.0, 15.0)


#: Transport failures that happen before a byte of the request is sent: no connection
#: could be made (refused, unreachable, connect timeout) or TLS could not be set up. A
#: request that failed this way certainly did nothing, so it may be sent again.
_NOT_SENT: Final = (
    urllib3.exceptions.ConnectTimeoutError,  # NewConnectionError is one of these
    urllib3.exceptions.SSLError,
)


class ApiError(Exception):
    """A non-2xx answer (or a transport failure, status 0) with the server's message.

    ``sent`` is False only when the request certainly never reached the server."""

    def __init__(self, status: int, reason: str, message: str = "", *, sent: bool = True) -> None:
        super().__init__(f"{status} {reason}: {message}" if message else f"{status} {reason}")
        self.status = status
        self.reason = reason
        self.message = message
        self.sent = sent

    @property
    def ambiguous(self) -> bool:
        """Whether the server may have applied the request although no success came back:
        the answer was lost (a timeout or a broken connection after sending), or the server
        failed or timed out on its side (5xx) after perhaps committing it."""
        return (self.status == 0 and self.sent) or self.status >= 500

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def not_found(self) -> bool:
        return self.status == 404


class ServerClock:
    """The API server's wall clock as this process can tell it: the local clock plus the
    offset last read from a response's ``Date`` header (0 until one is read).

    The header has whole seconds; the server wrote it between sending our request and our
    reading the answer, so the offset is taken against the middle of that interval and is
    good to about a second plus half the round trip: fine for minimum runtimes counted in
    minutes, and far better than a local clock nobody keeps in step."""

    def __init__(
        self, registry: CollectorRegistry | None = None, wall: Callable[[], float] = time.time
    ) -> None:
        self._wall = wall
        self._lock = threading.Lock()
        self._offset: float | None = None
        self.gauge = Gauge(
            "queue_extender_api_server_clock_offset_seconds",
            "The API server's clock minus this process's, from the Date header of its last "
            "answer (minimum runtimes are judged on the API server's clock).",
            registry=registry,
        )

    def observe(self, date: str | None, sent: float, received: float) -> None:
        """Learn the offset from a ``Date`` header (HTTP date) of an answer to a request sent
        at local ``sent`` and read at ``received``; an unreadable header is ignored."""
        if not date:
            return
        try:
            stamped = parsedate_to_datetime(date).timestamp()
        except (TypeError, ValueError, IndexError, OverflowError):
            log.debug("unreadable Date header %r", date)
            return
        # The header truncates to the second: the server's time was within [stamped, +1).
        offset = stamped + 0.5 - (sent + received) / 2
        with self._lock:
            self._offset = offset
        self.gauge.set(offset)

    @property
    def offset(self) -> float | None:
        return self._offset

    def now(self) -> float:
        """The API server's time now (seconds since the epoch)."""
        return self._wall() + (self._offset or 0.0)


class RestClient:
    """Plain JSON requests with the client's host, TLS and authentication."""

    def __init__(
        self,
        api_client: Any,
        registry: CollectorRegistry | None = None,
        *,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._api = api_client
        self._wall = wall
        self.clock = ServerClock(registry, wall)
        self.writes = Counter(
            "queue_extender_api_writes",
            "Writes the controller sent to the API server, by resource, verb and result code "
            "(0: no answer).",
            ["resource", "verb", "code"],
            registry=registry,
        )

    def get(self, path: str) -> dict[str, Any]:
        return self._call("GET", path, None, JSON)

    def post(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        return self._write("POST", path, body, JSON, resource, "create")

    def post_within(
        self, path: str, body: dict[str, Any], resource: str, deadline: float
    ) -> dict[str, Any]:
        """POST once, answered within ``deadline`` seconds or abandoned.

        The API server is told the same bound (its ``timeout`` parameter), so it gives up on
        its side too rather than apply the request after we stopped waiting; urllib3 gets one
        total bound (connect and read together) and no retries of its own, so the caller
        knows exactly how many times the request went out. A failure raises
        :class:`ApiError` whose ``sent`` says whether the request may have arrived."""
        if not deadline > 0:
            raise ValueError(f"a request deadline must be positive, not {deadline}")
        try:
            answer = self._send(
                "POST",
                path,
                body,
                JSON,
                query=[("timeout", f"{max(1, int(deadline * 1000))}ms")],
                timeout=urllib3.Timeout(total=deadline),
            )
        except ApiError as exc:
            self.writes.labels(resource, "create", str(exc.status)).inc()
            raise
        self.writes.labels(resource, "create", "200").inc()
        return answer

    def _send(
        self,
        method: str,
        path: str,
        body: dict[str, Any],
        content_type: str,
        *,
        query: list[tuple[str, str]],
        timeout: urllib3.Timeout,
    ) -> dict[str, Any]:
        """One request straight through the client's connection pool (its host, TLS and
        credentials), with no retries."""
        headers = {"Accept": JSON, "Content-Type": content_type}
        sent = self._wall()
        try:
            method, url, headers, _body, _post = self._api.param_serialize(
                method,
                path,
                query_params=query,
                header_params=headers,
                auth_settings=["BearerToken"],
            )
            response = self._api.rest_client.pool_manager.request(
                method,
                url,
                body=orjson.dumps(body),
                headers=headers,
                timeout=timeout,
                retries=False,
                preload_content=True,
            )
            data: bytes = response.data
            status = int(response.status)
            reason = str(response.reason or "")
        except _NOT_SENT as exc:
            raise ApiError(0, type(exc).__name__, str(exc), sent=False) from exc
        except Exception as exc:  # after sending: timeouts, broken connections
            raise ApiError(0, type(exc).__name__, str(exc)) from exc
        self.clock.observe(response.headers.get("Date"), sent, self._wall())
        return _decoded(status, reason, data)

    def put(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        return self._write("PUT", path, body, JSON, resource, "update")

    def merge_patch(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        return self._write("PATCH", path, body, MERGE_PATCH, resource, "patch")

    def _write(
        self,
        method: str,
        path: str,
        body: dict[str, Any],
        content_type: str,
        resource: str,
        verb: str,
    ) -> dict[str, Any]:
        try:
            answer = self._call(method, path, body, content_type)
        except ApiError as exc:
            self.writes.labels(resource, verb, str(exc.status)).inc()
            raise
        self.writes.labels(resource, verb, "200").inc()
        return answer

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None, content_type: str
    ) -> dict[str, Any]:
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        sent = self._wall()
        try:
            method, url, headers, _body, _post = self._api.param_serialize(
                method, path, header_params=headers, auth_settings=["BearerToken"]
            )
            rest = self._api.call_api(
                method,
                url,
                header_params=headers,
                body=body,
                _request_timeout=TIMEOUT,
            )
            response = rest.response
            data: bytes = response.data
            status = int(response.status)
            reason = str(response.reason or "")
        except ApiException as exc:
            raise ApiError(
                int(exc.status or 0), str(exc.reason or ""), str(exc.body or "")
            ) from exc
        except Exception as exc:  # transport failures: urllib3 errors, OSError, client errors
            raise ApiError(0, type(exc).__name__, str(exc)) from exc
        self.clock.observe(_header(response, "Date"), sent, self._wall())
        return _decoded(status, reason, data)


def _header(response: Any, name: str) -> str | None:
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get(name)
    return str(value) if value else None


def _decoded(status: int, reason: str, data: bytes) -> dict[str, Any]:
    """The JSON object of a 2xx answer; an :class:`ApiError` with the server's message for
    any other."""
    if not 200 <= status < 300:
        message = ""
        try:
            message = str(orjson.loads(data).get("message", ""))
        except (orjson.JSONDecodeError, AttributeError):
            message = data[:200].decode(errors="replace")
        raise ApiError(status, reason, message)
    try:
        decoded = orjson.loads(data) if data else {}
    except orjson.JSONDecodeError as exc:
        raise ApiError(status, "undecodable answer", str(exc)) from exc
    return decoded if isinstance(decoded, dict) else {}
