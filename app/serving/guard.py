"""Listener limits uvicorn does not give: a connection cap, a request-read deadline, bounded
pipelining and bounded request heads, per listener.

Why a protocol of our own: uvicorn arms its keep-alive timer only after a response, so a
connection that never sends a whole request (idle after the handshake, or one byte every few
seconds) is held forever; its ``limit_concurrency`` answers 503 but still accepts and keeps
every connection (each an open file); and it resumes reading after every response even while
requests already read wait in its pipeline, so a client that pipelines without reading grows
that queue without bound. ``GuardedHttpToolsProtocol`` is uvicorn's httptools protocol with
those four holes closed, writing each answer in one piece (``app.serving.coalesce``), and
answering kube-scheduler's plain verb calls itself (``GuardedHttpToolsProtocol``);
everything else (the parser, flow control, the ASGI cycle) is uvicorn's own.

Each listener has its own ``ListenerLimits`` (uvicorn keeps one connection set per server),
so connections to the metrics or status listener never count against the verbs' listener.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

import uvicorn
import uvloop
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.protocols.utils import get_client_addr

from app.serving.coalesce import CoalescingTransport
from app.telemetry.metrics import ListenerCounts

log = logging.getLogger(__name__)


class LimitError(Exception):
    """Raised from a parser callback: the request broke a limit; httptools turns it into a
    parser error and uvicorn answers 400 and closes the connection."""


@dataclass(frozen=True, slots=True)
class ListenerLimits:
    """One listener's bounds.

    ``max_connections``: open connections at once; the next one is closed as soon as it is
    accepted (its file descriptor freed at once), and each connection runs at most one request
    at a time, so this is also the listener's concurrency cap. ``read_timeout``: seconds from
    the connection's start, or from a request's first byte, to that request's last byte; a
    connection that has not sent a whole request by then is closed. ``idle_timeout``: seconds a
    keep-alive connection may wait for its next request. ``max_pipelined``: requests read
    ahead of the one being answered; reading pauses while any wait, and a client pushing past
    the bound is disconnected. ``max_head_bytes``: request line and headers together.
    ``backlog``: the listen queue.
    """

    max_connections: int = 256
    read_timeout: float = 10.0
    idle_timeout: float = 5.0
    max_pipelined: int = 8
    max_head_bytes: int = 64 * 1024
    backlog: int = 1024

    def __post_init__(self) -> None:
        for name in ("max_connections", "max_pipelined", "max_head_bytes", "backlog"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")
        if not (self.read_timeout > 0 and self.idle_timeout > 0):
            raise ValueError("read_timeout and idle_timeout must be positive")


#: kube-scheduler's listener: the verbs, and on loopback the debug and read routes too.
VERB_LIMITS = ListenerLimits(max_connections=512, max_pipelined=16)
#: /metrics and the probes: Prometheus and the kubelet need a handful of connections.
METRICS_LIMITS = ListenerLimits(max_connections=64, max_pipelined=4)
#: The status page and the read-only API, shown to people.
STATUS_LIMITS = ListenerLimits(max_connections=128, max_pipelined=4)


class LeanVerb(Protocol):
    """A verb the protocol answers itself: (status, JSON answer) for a whole body."""

    def respond(self, body: bytes) -> tuple[int, bytes]: ...


_JSON_HEAD = b"content-type: application/json\r\n\r\n"
_SERVER_ERROR = (
    STATUS_LINE[500] + b"content-type: text/plain; charset=utf-8\r\ncontent-length: 21\r\n"
    b"connection: close\r\n\r\nInternal Server Error"
)


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, bounded by the ``ListenerLimits`` its configuration
    carries as ``config.limits``.

    It also answers the verbs itself when it can (``config.lean_verbs``: raw path -> verb;
    ``config.lean_limit``: their body cap). kube-scheduler calls filter and prioritize for
    every pod, and uvicorn's request cycle (a scope, a task, an event, the ASGI messages and
    its checks on every answer header) cost about as much CPU as the whole application's part
    of a call. A verb request is answered here when it is the plain case: a POST to exactly
    a verb's path, HTTP/1.1 kept alive, no ``Expect``, a declared ``Content-Length`` within
    the cap, and no earlier request of the connection still being answered. The body is
    gathered by the parser's callbacks, the verb's handler (which decodes, decides, counts and
    times the call) answers synchronously when the message completes, and the answer leaves
    with uvicorn's default headers in one write; a failure the handler did not catch is
    answered 500 and the connection closed, as uvicorn does. While the client leaves its
    answers unread (uvicorn's flow control says the buffer is full) no verb is answered here
    and reading pauses, so the pipeline bound still holds. Every other request, including a
    verb call that is not the plain case, takes uvicorn's way to the application, whose
    router answers verbs the same (``app.serving.verb_router``)."""

    def __init__(self, config: Any, *args: Any, **kw: Any) -> None:
        super().__init__(config, *args, **kw)
        limits = getattr(config, "limits", None)
        self.limits: ListenerLimits = limits if limits is not None else ListenerLimits()
        self._read_timer: asyncio.TimerHandle | None = None
        self._head_bytes = 0
        self._out: CoalescingTransport | None = None
        self._lean_verbs: Mapping[bytes, LeanVerb] = getattr(config, "lean_verbs", None) or {}
        self._lean_limit: int = getattr(config, "lean_limit", 0)
        self._lean: LeanVerb | None = None
        self._lean_body: list[bytes] = []
        self._paused_for_answers = False

    # --- connections --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.limits.max_connections:
            # Not added to the set, so the cap counts only connections being served.
            self.transport = transport
            refused = _count(self.config, "refused")
            if _worth_a_line(refused):
                log.warning(
                    "%s: %d connections open, the cap: closing new ones (%d so far, last from %s)",
                    getattr(self.config, "name", "listener"),
                    len(self.connections),
                    refused,
                    transport.get_extra_info("peername"),
                )
            transport.abort()
            return
        super().connection_made(transport)
        # Flow control keeps the real transport; the answers go out one write each.
        self._out = CoalescingTransport(transport, self.loop)
        self.transport = self._out
        self._arm_read_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_read_timer()
        if self.flow is None:  # refused in connection_made: nothing of uvicorn's to undo
            return
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.flow is None or self.parser is None:
            return
        super().data_received(data)

    # --- the request-read deadline ------------------------------------------------------

    def _arm_read_timer(self) -> None:
        if self._read_timer is None:
            self._read_timer = self.loop.call_later(self.limits.read_timeout, self._read_expired)

    def _cancel_read_timer(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _read_expired(self) -> None:
        self._read_timer = None
        if not self.transport.is_closing():
            timed_out = _count(self.config, "timed_out")
            if _worth_a_line(timed_out):
                log.warning(
                    "%s: closing connections that send no whole request within %gs (%d so "
                    "far, last from %s)",
                    getattr(self.config, "name", "listener"),
                    self.limits.read_timeout,
                    timed_out,
                    self.client,
                )
            self.transport.close()

    # --- parser callbacks ---------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_bytes = 0
        self._arm_read_timer()

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        # uvicorn's ``on_header`` with the head's bound counted in place: called for every
        # header of every request, so one Python call a header rather than three.
        self._head_bytes += len(name) + len(value)
        if self._head_bytes > self.limits.max_head_bytes:
            raise LimitError(f"request head larger than {self.limits.max_head_bytes} bytes")
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self.expect_100_continue = True
        self.headers.append((name, value))

    def _count_head(self, n: int) -> None:
        self._head_bytes += n
        if self._head_bytes > self.limits.max_head_bytes:
            raise LimitError(f"request head larger than {self.limits.max_head_bytes} bytes")

    def on_headers_complete(self) -> None:
        verb = self._lean_verbs.get(self.url) if self._lean_verbs else None
        if verb is not None and self._plain_request():
            self._lean = verb
            self._lean_body = []
            return
        super().on_headers_complete()
        if len(self.pipeline) > self.limits.max_pipelined:
            raise LimitError(f"more than {self.limits.max_pipelined} pipelined requests")

    def _plain_request(self) -> bool:
        """Whether the request whose head was just read may be answered here."""
        parser = self.parser
        if (
            parser.get_method() != b"POST"
            or parser.get_http_version() != "1.1"
            or not parser.should_keep_alive()
            or parser.should_upgrade()
            or self.expect_100_continue
            or self.root_path
            or self.flow.write_paused
            or self.pipeline
            or (self.cycle is not None and not self.cycle.response_complete)
        ):
            return False
        declared = None
        for name, value in self.headers:
            if name == b"content-length":
                if declared is not None:
                    return False
                declared = value
            elif name == b"transfer-encoding":
                return False
        return declared is not None and declared.isdigit() and int(declared) <= self._lean_limit

    def on_body(self, body: bytes) -> None:
        if self._lean is not None:
            self._lean_body.append(body)
            return
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._cancel_read_timer()
        verb = self._lean
        if verb is None:
            super().on_message_complete()
            return
        self._lean = None
        body = b"".join(self._lean_body)
        self._lean_body = []
        try:
            status, answer = verb.respond(body)
        except Exception as exc:
            self.logger.error("Exception in verb handler", exc_info=exc)
            self.transport.write(_SERVER_ERROR)
            self.transport.close()
            return
        head = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            head += (name, b": ", value, b"\r\n")
        head += (b"content-length: %d\r\n" % len(answer), _JSON_HEAD, answer)
        if self._out is not None:
            self._out.send(b"".join(head))  # whole: it leaves now, in one write
        else:
            self.transport.write(b"".join(head))
        if self.access_log:
            self.access_logger.info(
                '%s - "%s %s HTTP/%s" %d',
                get_client_addr(self.scope),
                "POST",
                self.url.decode("ascii"),
                "1.1",
                status,
            )
        self.on_response_complete()
        if self.flow.write_paused and not self.transport.is_closing():
            # The client is not reading its answers: read no more requests until it has
            # (those already read take uvicorn's way, bounded by ``max_pipelined``).
            self.flow.pause_reading()
            self._paused_for_answers = True

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._paused_for_answers:
            self._paused_for_answers = False
            if not self.pipeline and not self.transport.is_closing():
                self.flow.resume_reading()

    def on_response_complete(self) -> None:
        # The whole answer is written: it leaves now, head and body in one writev.
        if self._out is not None:
            self._out.flush()
        super().on_response_complete()
        # uvicorn resumes reading after every response; while read-ahead requests still
        # wait, reading more would only lengthen their queue.
        if self.pipeline and not self.transport.is_closing():
            self.flow.pause_reading()


def _count(config: Any, what: str) -> int:
    """Bumps the listener's counter ``what`` (kept on its configuration, one per listener)."""
    n: int = getattr(config, what, 0) + 1
    setattr(config, what, n)
    return n


def _worth_a_line(n: int) -> bool:
    """The first occurrence and every thousandth: an attack is logged, not echoed."""
    return n == 1 or n % 1000 == 0


class HandshakeBoundedLoop(uvloop.Loop):
    """uvloop's event loop, whose servers bound a TLS handshake by ``handshake_timeout``.

    asyncio gives a handshake 60 seconds by default, and the guard sees a connection only
    once its handshake is done: a client that opens TLS connections and never finishes the
    handshake held each one for a minute, counted by no listener's cap and cut by no read
    deadline. With this loop the handshake must end within the listeners' read timeout."""

    handshake_timeout = 60.0

    async def create_server(self, *args: Any, **kwargs: Any) -> asyncio.Server:
        if kwargs.get("ssl") is not None:
            kwargs.setdefault("ssl_handshake_timeout", self.handshake_timeout)
        return cast(asyncio.Server, await super().create_server(*args, **kwargs))


class LimitedConfig(uvicorn.Config):
    """uvicorn's configuration carrying the listener's limits to its protocol, and the read
    timeout to the TLS handshake (``HandshakeBoundedLoop``)."""

    def __init__(self, *args: Any, limits: ListenerLimits, name: str = "listener", **kw: Any):
        kw.setdefault("http", GuardedHttpToolsProtocol)
        kw.setdefault("timeout_keep_alive", limits.idle_timeout)
        kw.setdefault("backlog", limits.backlog)
        super().__init__(*args, **kw)
        self.limits = limits
        self.name = name
        #: The verbs the protocol answers itself, as the application offers them
        #: (``app.serving.verb_router.ExtenderApp``); none for any other application.
        self.lean_verbs: Mapping[bytes, LeanVerb] = getattr(self.app, "lean_verbs", None) or {}
        self.lean_limit: int = getattr(self.app, "lean_limit", 0)
        #: Connections closed at the cap, and for sending no whole request in time.
        self.refused = 0
        self.timed_out = 0

    def get_loop_factory(self) -> Callable[[], asyncio.AbstractEventLoop] | None:
        if self.loop != "uvloop":
            return super().get_loop_factory()
        timeout = self.limits.read_timeout

        def bounded() -> asyncio.AbstractEventLoop:
            loop = HandshakeBoundedLoop()
            loop.handshake_timeout = timeout
            return loop

        return bounded

    def counts(self) -> ListenerCounts:
        """What ``/metrics`` shows of this listener (``ListenerCollector``)."""
        return ListenerCounts(self.name.removesuffix(" listener"), self.refused, self.timed_out)


def raise_open_files_limit() -> tuple[int, int]:
    """Raises the soft limit on open files to the hard one; returns (before, after).

    Python starts with the soft limit it inherits (often 1,024): every connection, informer
    watch and API call holds a descriptor, and at the soft limit accept() fails for every
    listener at once. The hard limit is what the container runtime grants."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:
            log.warning("cannot raise the open files limit from %d to %d: %s", soft, target, exc)
            return soft, soft
        return soft, target
    return soft, soft
