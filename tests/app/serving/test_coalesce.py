"""Each answer leaves in one write: head and body together when the response completes, and
nothing held past the loop's current round (a streamed body, a ``100 Continue``)."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from uvicorn.server import ServerState

from app.serving.coalesce import CoalescingTransport
from app.serving.guard import GuardedHttpToolsProtocol, LimitedConfig, ListenerLimits
from tests.app.live import serve_address

WAIT = 10.0


class RecordingTransport(asyncio.Transport):
    """A transport that records each call that would reach the socket, as one entry each."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[str, bytes]] = []
        self.closing = False

    def write(self, data: Any) -> None:
        self.calls.append(("write", bytes(data)))

    def writelines(self, list_of_data: Any) -> None:
        self.calls.append(("writelines", b"".join(bytes(d) for d in list_of_data)))

    def close(self) -> None:
        self.calls.append(("close", b""))
        self.closing = True

    def abort(self) -> None:
        self.calls.append(("abort", b""))
        self.closing = True

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("127.0.0.1", 40000), "sockname": ("127.0.0.1", 8888)}.get(
            name, default
        )

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


async def _hello(request: Request) -> Response:
    await request.body()  # a POST's body is read: an ``Expect: 100-continue`` is answered
    return Response(b'{"nodenames":["n1"]}', media_type="application/json")


#: Set by the test once it has seen the first chunk arrive.
_release = threading.Event()


async def _stream(_: Request) -> StreamingResponse:
    async def chunks() -> AsyncIterator[bytes]:
        yield b"first"
        while not _release.wait(0):
            await asyncio.sleep(0.01)
        yield b"second"

    return StreamingResponse(chunks())


def _app() -> Starlette:
    return Starlette(
        routes=[Route("/hello", _hello, methods=["GET", "POST"]), Route("/s", _stream)]
    )


# --- the transport alone ------------------------------------------------------------------


def test_writes_in_one_step_leave_as_one_writelines_on_flush() -> None:
    async def scenario() -> list[tuple[str, bytes]]:
        real = RecordingTransport()
        out = CoalescingTransport(real, asyncio.get_running_loop())
        out.write(b"HTTP/1.1 200 OK\r\n\r\n")
        out.write(b"body")
        assert real.calls == []
        assert out.get_write_buffer_size() == len(b"HTTP/1.1 200 OK\r\n\r\nbody")
        out.flush()
        out.flush()  # nothing left: no empty write
        await asyncio.sleep(0)  # the fallback was cancelled: nothing more leaves
        return real.calls

    assert asyncio.run(scenario()) == [("writelines", b"HTTP/1.1 200 OK\r\n\r\nbody")]


def test_what_is_not_flushed_leaves_at_the_end_of_the_loops_round() -> None:
    async def scenario() -> list[tuple[str, bytes]]:
        real = RecordingTransport()
        out = CoalescingTransport(real, asyncio.get_running_loop())
        out.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await asyncio.sleep(0)
        return real.calls

    assert asyncio.run(scenario()) == [("write", b"HTTP/1.1 100 Continue\r\n\r\n")]


def test_close_sends_what_is_held_before_closing_and_abort_drops_it() -> None:
    async def scenario() -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]:
        loop = asyncio.get_running_loop()
        closed, aborted = RecordingTransport(), RecordingTransport()
        for real in (closed, aborted):
            out = CoalescingTransport(real, loop)
            out.write(b"head")
            out.write(b"body")
            out.close() if real is closed else out.abort()
            out.write(b"late")  # after close: dropped, as asyncio's transports do
            await asyncio.sleep(0)
        return closed.calls, aborted.calls

    closed, aborted = asyncio.run(scenario())
    assert closed == [("writelines", b"headbody"), ("close", b"")]
    assert aborted == [("abort", b"")]


# --- uvicorn's protocol over it -----------------------------------------------------------


class _Observed(GuardedHttpToolsProtocol):
    """The guarded protocol, noting what had reached the socket when each response ended."""

    real: RecordingTransport
    at_completion: list[tuple[str, bytes]] | None

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self.at_completion = [call for call in self.real.calls if call[0] != "close"]


def _protocol_answer(request: bytes) -> list[tuple[str, bytes]]:
    """Feeds ``request`` to the guarded protocol over a recording transport; returns what had
    reached the transport when the response completed."""

    async def scenario() -> list[tuple[str, bytes]]:
        config = LimitedConfig(_app(), limits=ListenerLimits(), lifespan="off", log_config=None)
        config.load()
        protocol = _Observed(config=config, server_state=ServerState(), app_state={})
        protocol.real = real = RecordingTransport()
        protocol.at_completion = None
        protocol.connection_made(real)
        protocol.data_received(request)
        for _ in range(100):
            await asyncio.sleep(0)
            if real.closing or protocol.at_completion is not None:
                break
        protocol.connection_lost(None)
        if protocol.at_completion is not None:
            return protocol.at_completion
        return [call for call in real.calls if call[0] != "close"]

    return asyncio.run(scenario())


def test_a_verbs_answer_reaches_the_socket_in_one_write_head_and_body() -> None:
    body = b'{"pod":{}}'
    calls = _protocol_answer(
        b"POST /hello HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    )
    assert len(calls) == 1
    kind, data = calls[0]
    assert kind == "writelines"
    head, _, answer = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK")
    assert answer == b'{"nodenames":["n1"]}'


def test_an_unreadable_request_is_still_answered_400_before_the_close() -> None:
    calls = _protocol_answer(b"NOT A REQUEST\r\n\r\n")
    assert len(calls) == 1 and calls[0][1].startswith(b"HTTP/1.1 400")


# --- through a real listener ------------------------------------------------------------------


@contextmanager
def _socket_to_listener() -> Iterator[socket.socket]:
    with (
        serve_address(_app(), ListenerLimits()) as address,
        socket.create_connection(address, timeout=WAIT) as sock,
    ):
        yield sock


def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    seen = b""
    while marker not in seen:
        chunk = sock.recv(65536)
        if not chunk:
            break
        seen += chunk
    return seen


def test_a_streamed_body_leaves_chunk_by_chunk_not_at_the_end() -> None:
    _release.clear()
    with _socket_to_listener() as sock:
        sock.sendall(b"GET /s HTTP/1.1\r\nHost: x\r\n\r\n")
        # The stream waits for a release that only comes after its first chunk is seen; were
        # the chunk held until the response completed, this read would time out.
        seen = _read_until(sock, b"first")
        assert b"first" in seen and b"second" not in seen
        _release.set()
        assert b"second" in _read_until(sock, b"0\r\n\r\n")


def test_a_100_continue_is_sent_before_the_body_is_read() -> None:
    with _socket_to_listener() as sock:
        sock.sendall(
            b"POST /hello HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
            b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n"
        )
        assert _read_until(sock, b"\r\n\r\n").startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(b"{}")
        assert b"200 OK" in _read_until(sock, b'"n1"]}')
