"""Each answer leaves in one write: head and body together when the response completes, and
nothing held past the loop's current round (a streamed body, a ``100 Continue``)."""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import ssl
import struct
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any, cast

import pytest
import trustme
import uvloop
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from uvicorn.server import ServerState

from app.serving.coalesce import CoalescingTransport, plain_socket_fd
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


# --- the write past uvloop, on a real TCP connection --------------------------------------


class _Peer(asyncio.Protocol):
    """The server side's protocol: notes the connection's end and its flow control."""

    def __init__(self) -> None:
        self.lost: asyncio.Future[Exception | None] = asyncio.get_running_loop().create_future()
        self.paused = False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(exc)

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False


async def _tcp_pair(small_buffers: bool = False) -> tuple[asyncio.Transport, _Peer, socket.socket]:
    """A loopback TCP connection: uvloop's transport of its accepted side, that side's
    protocol, and the client's socket (non-blocking, read through the loop)."""
    loop = asyncio.get_running_loop()
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if small_buffers:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        client.connect(listener.getsockname())
        accepted, _ = listener.accept()
    if small_buffers:
        accepted.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    client.setblocking(False)
    transport, peer = await loop.connect_accepted_socket(_Peer, accepted)
    return transport, peer, client


async def _receive(client: socket.socket, size: int) -> bytes:
    loop = asyncio.get_running_loop()
    seen = bytearray()
    while len(seen) < size:
        chunk = await loop.sock_recv(client, 65536)
        if not chunk:
            break
        seen += chunk
    return bytes(seen)


def _flushed_over_tcp(parts: list[bytes]) -> bytes:
    """What the client receives when ``parts`` are written and flushed in one step."""

    async def scenario() -> bytes:
        transport, _, client = await _tcp_pair()
        with client:
            out = CoalescingTransport(transport, asyncio.get_running_loop())
            for part in parts:
                out.write(part)
            out.flush()
            received = await _receive(client, sum(map(len, parts)))
            transport.close()
            return received

    return uvloop.run(scenario())


class _Writev:
    """``os.writev`` as ``flush`` calls it, recorded; ``behave`` decides what the kernel
    does (by default the real call)."""

    def __init__(self, behave: Any = None) -> None:
        self.calls: list[list[bytes]] = []
        self._real = os.writev
        self._behave = behave

    def __call__(self, fd: int, parts: Any) -> int:
        self.calls.append([bytes(part) for part in parts])
        if self._behave is None:
            return self._real(fd, parts)
        result: int = self._behave(fd, b"".join(bytes(part) for part in parts))
        return result


def _with_writev(monkeypatch: pytest.MonkeyPatch, behave: Any = None) -> _Writev:
    writev = _Writev(behave)
    monkeypatch.setattr(os, "writev", writev)
    return writev


def test_a_plain_tcp_answer_goes_to_the_socket_in_one_writev_past_the_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writev = _with_writev(monkeypatch)

    async def scenario() -> tuple[bytes, int]:
        transport, _, client = await _tcp_pair()
        with client:
            out = CoalescingTransport(transport, asyncio.get_running_loop())
            out.write(b"HTTP/1.1 200 OK\r\n\r\n")
            out.write(b"body")
            out.flush()
            buffered = transport.get_write_buffer_size()
            received = await _receive(client, 23)
            transport.close()
            return received, buffered

    received, buffered = uvloop.run(scenario())
    assert writev.calls == [[b"HTTP/1.1 200 OK\r\n\r\n", b"body"]]
    assert buffered == 0
    assert received == b"HTTP/1.1 200 OK\r\n\r\nbody"


@pytest.mark.parametrize(
    "taken",
    [0, 3, len(b"head-"), len(b"head-") + 2, len(b"head-body-"), len(b"head-body-tail")],
    ids=["nothing", "inside-the-first", "at-a-boundary", "inside-the-second", "all-but-one", "all"],
)
def test_what_the_kernel_did_not_take_goes_to_the_transport_in_order(
    monkeypatch: pytest.MonkeyPatch, taken: int
) -> None:
    writev = _with_writev(monkeypatch, lambda fd, data: os.write(fd, data[:taken]))
    assert _flushed_over_tcp([b"head-", b"body-", b"tail"]) == b"head-body-tail"
    assert len(writev.calls) == 1


@pytest.mark.parametrize(
    "refusal",
    [BlockingIOError(errno.EAGAIN, "full"), BrokenPipeError(errno.EPIPE, "odd")],
    ids=["eagain", "another-error"],
)
def test_a_refused_writev_hands_everything_to_the_transport(
    monkeypatch: pytest.MonkeyPatch, refusal: OSError
) -> None:
    def refuse(fd: int, data: bytes) -> int:
        raise refusal

    writev = _with_writev(monkeypatch, refuse)
    assert _flushed_over_tcp([b"head-", b"body"]) == b"head-body"
    assert len(writev.calls) == 1


def test_a_partial_write_leaves_the_rest_to_the_transport_and_the_next_answer_queues_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two pipelined answers, the first larger than the socket takes: the kernel's part of
    the first leaves directly, the rest is the transport's (its flow control pauses the
    writer), and the second, written while the transport still holds bytes, goes through it
    behind them."""
    writev = _with_writev(monkeypatch)
    first = bytes(range(256)) * 4096  # 1 MiB
    second = b"the second answer"

    async def scenario() -> tuple[bytes, int, bool]:
        transport, peer, client = await _tcp_pair(small_buffers=True)
        with client:
            out = CoalescingTransport(transport, asyncio.get_running_loop())
            out.write(first[:100])
            out.write(first[100:])
            out.flush()
            held = transport.get_write_buffer_size()
            paused = peer.paused
            out.write(second)
            out.flush()
            received = await _receive(client, len(first) + len(second))
            transport.close()
            return received, held, paused

    received, held, paused = uvloop.run(scenario())
    assert len(writev.calls) == 1  # the second answer did not pass the held bytes
    assert 0 < held < len(first)
    assert paused  # 1 MiB held is above the transport's high-water mark
    assert received == first + second


def test_a_peer_gone_before_the_write_closes_the_connection_as_the_transport_would() -> None:
    async def scenario() -> tuple[Exception | None, bool]:
        transport, peer, client = await _tcp_pair()
        # A reset, not a FIN: the next write on the accepted side fails.
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
        out = CoalescingTransport(transport, asyncio.get_running_loop())
        out.write(b"an answer nobody reads")
        out.flush()  # never raises: the transport's own error handling applies
        lost = await asyncio.wait_for(peer.lost, WAIT)
        out.write(b"late")
        out.flush()  # after the close: dropped
        return lost, transport.is_closing()

    lost, closing = uvloop.run(scenario())
    assert isinstance(lost, ConnectionError)
    assert closing


def test_a_tls_connection_is_never_written_past_its_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    writev = _with_writev(monkeypatch)
    ca = trustme.CA()
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(server_ctx)
    client_ctx = ssl.create_default_context()
    ca.configure_trust(client_ctx)

    class Reader(asyncio.Protocol):
        def __init__(self) -> None:
            self.seen = bytearray()
            self.got = asyncio.get_running_loop().create_future()

        def data_received(self, data: bytes) -> None:
            self.seen += data
            if self.seen.endswith(b"body") and not self.got.done():
                self.got.set_result(bytes(self.seen))

    async def scenario() -> tuple[int, bool, bytes]:
        loop = asyncio.get_running_loop()
        accepted: asyncio.Future[asyncio.Transport] = loop.create_future()

        class Server(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                accepted.set_result(cast(asyncio.Transport, transport))

        server = await loop.create_server(Server, "127.0.0.1", 0, ssl=server_ctx)
        port = server.sockets[0].getsockname()[1]
        client, reader = await loop.create_connection(
            Reader, "127.0.0.1", port, ssl=client_ctx, server_hostname="localhost"
        )
        transport = await asyncio.wait_for(accepted, WAIT)
        out = CoalescingTransport(transport, loop)
        out.write(b"head-")
        out.write(b"body")
        out.flush()
        received = await asyncio.wait_for(reader.got, WAIT)
        fd = plain_socket_fd(transport)
        has_socket = transport.get_extra_info("socket") is not None
        client.close()
        transport.close()
        server.close()
        return fd, has_socket, received

    fd, has_socket, received = uvloop.run(scenario())
    assert fd == -1 and has_socket  # the TLS transport does show its socket: not written to
    assert writev.calls == []
    assert received == b"head-body"


def test_a_whole_answer_sent_leaves_at_once_behind_what_is_held() -> None:
    async def scenario() -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]:
        real = RecordingTransport()
        out = CoalescingTransport(real, asyncio.get_running_loop())
        out.write(b"held-")
        out.send(b"answer")
        at_once = list(real.calls)
        await asyncio.sleep(0)  # nothing was left scheduled
        return at_once, real.calls

    at_once, after = asyncio.run(scenario())
    assert at_once == after == [("writelines", b"held-answer")]
