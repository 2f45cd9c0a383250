"""The verbs listener's protocol answers a plain verb call itself, byte for byte as the
router would, keeps the order of a connection's requests, and leaves every other verb call
(and everything authentication must see) to the application."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from prometheus_client import CollectorRegistry
from uvicorn.server import ServerState

from app.serving.guard import GuardedHttpToolsProtocol, LimitedConfig, ListenerLimits
from app.serving.server import ServerSettings, create_app
from app.serving.verb_router import ExtenderApp
from scheduler_core.extender.decisions import FilterResult
from tests.app.fake_backend import FakeBackend
from tests.app.live import serve, serve_address

WAIT = 10.0
ARGS = orjson.dumps({"Pod": {"metadata": {"name": "p", "namespace": "ns"}}, "NodeNames": ["a"]})


def post(path: str = "/filter", body: bytes = ARGS, extra: bytes = b"") -> bytes:
    return (
        b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n%s\r\n" % (path.encode(), len(body), extra)
    ) + body


def answers(sock: socket.socket, count: int) -> list[tuple[bytes, dict[bytes, bytes], bytes]]:
    """``count`` answers read off ``sock``: (status line, headers, body) each."""
    sock.settimeout(WAIT)
    buffer = b""
    out: list[tuple[bytes, dict[bytes, bytes], bytes]] = []
    while len(out) < count:
        while b"\r\n\r\n" not in buffer:
            chunk = sock.recv(65536)
            assert chunk, f"closed after {len(out)} answers"
            buffer += chunk
        head, buffer = buffer.split(b"\r\n\r\n", 1)
        status, *lines = head.split(b"\r\n")
        headers = dict(line.lower().split(b": ", 1) for line in lines)
        size = int(headers[b"content-length"])
        while len(buffer) < size:
            chunk = sock.recv(65536)
            assert chunk, "closed inside an answer"
            buffer += chunk
        out.append((status, headers, buffer[:size]))
        buffer = buffer[size:]
    return out


async def _routed(scope: Any, receive: Any, send: Any) -> None:
    """Stands in for the router's verb chains: an answer only the application gives."""
    await send(
        {"type": "http.response.start", "status": 202, "headers": [(b"content-length", b"0")]}
    )
    await send({"type": "http.response.body", "body": b""})


def marked(app: ExtenderApp) -> ExtenderApp:
    """``app`` whose router answers every verb 202: a 200 can only come from the protocol."""
    app.verb_apps = dict.fromkeys(app.verb_apps, _routed)
    return app


@pytest.fixture
def listener() -> Iterator[tuple[tuple[str, int], FakeBackend, CollectorRegistry]]:
    backend, registry = FakeBackend(), CollectorRegistry()
    app = marked(create_app(backend, ServerSettings(registry=registry, max_body_bytes=4096)))
    with serve_address(app, ListenerLimits()) as address:
        yield address, backend, registry


def test_a_plain_verb_call_is_answered_by_the_protocol_as_the_router_answers_it() -> None:
    with serve(create_app(FakeBackend())) as url:  # uvicorn's own protocol: the router
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=WAIT) as sock:
            sock.sendall(post())
            [routed] = answers(sock, 1)
    app = marked(create_app(FakeBackend()))
    with (
        serve_address(app, ListenerLimits()) as address,
        socket.create_connection(address, timeout=WAIT) as sock,
    ):
        sock.sendall(post())
        [lean] = answers(sock, 1)
    assert lean[0] == routed[0] == b"HTTP/1.1 200 OK"
    assert lean[2] == routed[2] and orjson.loads(lean[2])["NodeNames"] == ["a"]
    assert list(lean[1]) == list(routed[1])
    assert lean[1][b"content-type"] == b"application/json"


def test_a_connections_requests_are_answered_in_their_order() -> None:
    """Verb calls in one read are answered here one after the other; once a request goes to
    the application, those read behind it wait their turn in uvicorn's pipeline."""
    bad = post(body=b"[]")
    health = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    with (
        serve_address(create_app(FakeBackend()), ListenerLimits()) as address,
        socket.create_connection(address, timeout=WAIT) as sock,
    ):
        sock.sendall(post() + bad + health + post("/prioritize") + post())
        got = answers(sock, 5)
    assert [status for status, _, _ in got] == [
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 400 Bad Request",
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 200 OK",
    ]
    assert "must be a JSON ExtenderArgs object" in orjson.loads(got[1][2])["Error"]
    assert got[2][2] == b"ok"
    assert orjson.loads(got[3][2]) == [{"Host": "a", "Score": 0}]


@pytest.mark.parametrize(
    "request_bytes",
    [
        post().replace(b"HTTP/1.1", b"HTTP/1.0", 1),
        post(extra=b"Connection: close\r\n"),
        post(extra=b"Expect: 100-continue\r\n"),
        post("/filter?x=1"),
        post(body=b" " * 5000),  # over the cap: the router answers its 413
        b"POST /filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\n{}\r\n0\r\n\r\n",
    ],
    ids=["http/1.0", "connection-close", "expect", "query", "over-the-cap", "chunked"],
)
def test_a_verb_call_that_is_not_the_plain_case_goes_to_the_application(
    listener: tuple[tuple[str, int], FakeBackend, CollectorRegistry], request_bytes: bytes
) -> None:
    address, backend, _ = listener
    with socket.create_connection(address, timeout=WAIT) as sock:
        sock.sendall(request_bytes)
        sock.settimeout(WAIT)
        assert sock.recv(65536).startswith(b"HTTP/1.1 202")
    assert backend.calls == []


def test_a_verb_call_answered_by_the_protocol_is_timed_and_counted(
    listener: tuple[tuple[str, int], FakeBackend, CollectorRegistry],
) -> None:
    address, backend, registry = listener
    with socket.create_connection(address, timeout=WAIT) as sock:
        sock.sendall(post() + post(body=b"{"))
        answers(sock, 2)
    count = registry.get_sample_value(
        "queue_extender_request_duration_seconds_count", {"verb": "filter"}
    )
    bad = registry.get_sample_value("queue_extender_bad_requests_total", {"verb": "filter"})
    assert (count, bad) == (2, 1)
    assert [c[0] for c in backend.calls if c[0] == "filter"] == ["filter"]


def test_a_failure_the_handler_did_not_catch_is_a_500_and_the_connection_closes() -> None:
    broken = FakeBackend(filter_fn=lambda pod, names: FilterResult([], {"a": "no status"}))  # type: ignore[dict-item]
    with (
        serve_address(create_app(broken), ListenerLimits()) as address,
        socket.create_connection(address, timeout=WAIT) as sock,
    ):
        sock.sendall(post())
        sock.settimeout(WAIT)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 500 Internal Server Error")
    assert data.endswith(b"Internal Server Error") and b"connection: close" in data


def test_with_a_token_every_verb_call_goes_through_authentication(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret")
    app = create_app(FakeBackend(), ServerSettings(token_file=str(token)))
    assert app.lean_verbs == {}
    with (
        serve_address(app, ListenerLimits()) as address,
        socket.create_connection(address, timeout=WAIT) as sock,
    ):
        sock.sendall(post() + post(extra=b"Authorization: Bearer s3cret\r\n"))
        statuses = [status for status, _, _ in answers(sock, 2)]
    assert statuses == [b"HTTP/1.1 401 Unauthorized", b"HTTP/1.1 200 OK"]


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []

    def write(self, data: Any) -> None:
        self.written.append(bytes(data))

    def writelines(self, data: Any) -> None:
        self.written.append(b"".join(data))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if name in ("peername", "sockname") else default

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def test_requests_answered_in_one_read_leave_one_keep_alive_timer() -> None:
    """Each answer arms the idle timer (uvicorn's ``on_response_complete``, which cancels the
    one before): a read holding several verb calls leaves no stray timer to close the
    connection while it is used."""

    async def run() -> list[asyncio.TimerHandle]:
        loop = asyncio.get_running_loop()
        config = LimitedConfig(create_app(FakeBackend()), limits=ListenerLimits())
        config.load()
        protocol = GuardedHttpToolsProtocol(
            config=config, server_state=ServerState(), app_state={}, _loop=loop
        )
        transport = Transport()
        protocol.connection_made(transport)
        armed: list[asyncio.TimerHandle] = []
        real_call_later = loop.call_later

        def call_later(delay: float, callback: Any, *args: Any) -> asyncio.TimerHandle:
            handle = real_call_later(delay, callback, *args)
            if callback == protocol.timeout_keep_alive_handler:
                armed.append(handle)
            return handle

        loop.call_later = call_later  # type: ignore[method-assign]
        try:
            protocol.data_received(post() * 3)
        finally:
            loop.call_later = real_call_later  # type: ignore[method-assign]
        assert b"".join(transport.written).count(b"HTTP/1.1 200 OK") == 3
        protocol.connection_lost(None)
        return armed

    armed = asyncio.run(run())
    assert len(armed) == 3
    assert [h.cancelled() for h in armed] == [True, True, True]  # the last by connection_lost


def test_a_client_that_pipelines_verb_calls_without_reading_is_bounded() -> None:
    """Answers the client does not read pause the protocol's own answering: what it sends
    after that takes uvicorn's way, whose pipeline bound disconnects it, so the server never
    buffers answers without end."""
    names = [f"node-{i:05d}" for i in range(200)]
    request = post(body=orjson.dumps({"Pod": {"metadata": {"name": "p"}}, "NodeNames": names}))
    sent_requests = 3000
    limits = ListenerLimits(max_pipelined=4)
    with serve_address(create_app(FakeBackend()), limits) as address:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(address)
        with sock:
            sock.settimeout(5.0)
            # The server stops reading, or closes the connection.
            with contextlib.suppress(TimeoutError, ConnectionResetError, BrokenPipeError):
                sock.sendall(request * sent_requests)
            sock.settimeout(WAIT)
            received = b""
            with contextlib.suppress(TimeoutError, ConnectionResetError):
                while chunk := sock.recv(1 << 20):
                    received += chunk
    assert 0 < received.count(b"HTTP/1.1 200 OK") < sent_requests
