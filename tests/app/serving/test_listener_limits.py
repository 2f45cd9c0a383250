"""Each listener bounds what a client can hold: connections, time to send a request, requests
read ahead, the size of a request head and of every body; /noop only when asked for."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack
from urllib.parse import urlsplit

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from app.cli.main import build_parser
from app.cli.serve import backend_from_args, build_servers
from app.cli.serve_flags import listening_from_args
from app.serving.guard import ListenerLimits, raise_open_files_limit
from app.serving.listeners import serve_all
from app.serving.server import ServerSettings, create_app, create_metrics_app
from tests.app.fake_backend import FakeBackend
from tests.app.live import serve, serve_address
from tests.ports import free_port

#: Generous against a loaded machine; the limits under test are far below it.
WAIT = 10.0


async def _hello(_: Request) -> Response:
    return Response(b"ok")


def _app() -> Starlette:
    return Starlette(routes=[Route("/hello", _hello)])


def _listener(limits: ListenerLimits) -> AbstractContextManager[tuple[str, int]]:
    return serve_address(_app(), limits)


def _connect(address: tuple[str, int]) -> socket.socket:
    sock = socket.create_connection(address, timeout=WAIT)
    return sock


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """True when the server closes the connection (EOF or reset) within ``seconds``."""
    sock.settimeout(seconds)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
    return True


def _get(sock: socket.socket) -> bytes:
    sock.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
    sock.settimeout(WAIT)
    return sock.recv(65536)


def test_a_connection_that_never_sends_a_request_is_closed_after_the_read_timeout() -> None:
    with _listener(ListenerLimits(read_timeout=0.3)) as address, _connect(address) as sock:
        assert _closed_within(sock, WAIT)


def test_a_request_head_trickled_slower_than_the_read_timeout_is_cut_off() -> None:
    with _listener(ListenerLimits(read_timeout=0.5)) as address, _connect(address) as sock:
        started = time.monotonic()
        closed = False
        for byte in b"GET /hello HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa":
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                closed = True
                break
            time.sleep(0.05)
            if time.monotonic() - started > WAIT:
                break
        assert closed or _closed_within(sock, WAIT)


def test_a_whole_request_in_time_is_answered_and_the_connection_kept() -> None:
    with _listener(ListenerLimits(read_timeout=5.0)) as address, _connect(address) as sock:
        assert _get(sock).startswith(b"HTTP/1.1 200")
        assert _get(sock).startswith(b"HTTP/1.1 200")


def test_connections_over_the_cap_are_closed_as_they_arrive_and_the_held_ones_served() -> None:
    with _listener(ListenerLimits(max_connections=3)) as address, ExitStack() as stack:
        held = [stack.enter_context(_connect(address)) for _ in range(3)]
        # The server registers a connection once its loop accepts it: the first answer
        # proves each of the three is counted.
        for sock in held:
            assert _get(sock).startswith(b"HTTP/1.1 200")
        extra = stack.enter_context(_connect(address))
        assert _closed_within(extra, WAIT)
        held.pop().close()
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            with _connect(address) as again:
                try:
                    if _get(again).startswith(b"HTTP/1.1 200"):
                        break
                except OSError:
                    pass
            time.sleep(0.05)
        else:
            pytest.fail("a freed slot was never given to a new connection")


def test_pipelining_past_the_bound_disconnects_instead_of_queueing() -> None:
    limits = ListenerLimits(max_pipelined=4)
    with _listener(limits) as address, _connect(address) as sock:
        sock.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n" * 1000)
        answers = b""
        sock.settimeout(WAIT)
        try:
            while chunk := sock.recv(65536):
                answers += chunk
        except ConnectionResetError:
            pass
        assert answers.count(b"HTTP/1.1 200") <= limits.max_pipelined + 1


def test_a_request_head_over_the_bound_is_refused() -> None:
    limits = ListenerLimits(max_head_bytes=1024)
    with _listener(limits) as address, _connect(address) as sock:
        sock.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 4096 + b"\r\n\r\n")
        sock.settimeout(WAIT)
        assert sock.recv(65536).startswith(b"HTTP/1.1 400")
        assert _closed_within(sock, WAIT)


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_connections", 0), ("max_pipelined", 0), ("read_timeout", 0.0), ("backlog", -1)],
)
def test_limits_refuse_non_positive_bounds(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        ListenerLimits(**{field: value})


def test_the_open_files_soft_limit_is_raised_to_the_hard_one() -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 512), hard))
    try:
        before, after = raise_open_files_limit()
        assert before == min(soft, 512)
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == after
        assert after == hard or hard == resource.RLIM_INFINITY
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# --- bodies ---------------------------------------------------------------------------


@pytest.fixture
def small_body_app() -> Iterator[httpx.Client]:
    settings = ServerSettings(max_body_bytes=1024)
    with serve(create_app(FakeBackend(), settings)) as url, httpx.Client(base_url=url) as client:
        yield client


@pytest.mark.parametrize("path", ["/filter", "/prioritize", "/preempt", "/debug/explain"])
def test_a_declared_body_over_the_cap_is_answered_413_on_every_endpoint(
    small_body_app: httpx.Client, path: str
) -> None:
    r = small_body_app.post(path, content=b" " * 2048)
    assert r.status_code == 413
    assert "exceeds the limit of 1024 bytes" in r.text


@pytest.mark.parametrize("path", ["/filter", "/debug/explain", "/api/v1/whatif", "/metrics"])
def test_a_chunked_body_over_the_cap_is_answered_413(
    small_body_app: httpx.Client, path: str
) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(8):
            yield b" " * 512

    r = small_body_app.post(path, content=chunks())
    assert r.status_code == 413


def test_a_body_within_the_cap_reaches_the_endpoint(small_body_app: httpx.Client) -> None:
    r = small_body_app.post("/filter", content=b'{"Pod": {"metadata": {}}, "NodeNames": ["a"]}')
    assert r.status_code == 200


def test_an_unreadable_content_length_is_a_400(small_body_app: httpx.Client) -> None:
    parts = urlsplit(str(small_body_app.base_url))
    assert parts.hostname is not None and parts.port is not None
    with _connect((parts.hostname, parts.port)) as sock:
        sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: x2\r\n\r\n{}")
        sock.settimeout(WAIT)
        assert sock.recv(65536).startswith(b"HTTP/1.1 400")


def test_the_metrics_listener_refuses_any_body() -> None:
    app = create_app(FakeBackend())
    with serve(create_metrics_app(app)) as url, httpx.Client(base_url=url) as client:
        assert client.get("/healthz").status_code == 200
        assert client.request("GET", "/metrics", content=b"x" * 4096).status_code == 413


@pytest.mark.parametrize(("noop", "status"), [(False, 404), (True, 200)])
def test_noop_is_served_only_when_asked_for(noop: bool, status: int) -> None:
    app = create_app(FakeBackend(), ServerSettings(noop=noop))
    with serve(app) as url, httpx.Client(base_url=url) as client:
        assert client.post("/noop", content=b"{}").status_code in (
            (status,) if noop else (404, 405)
        )


def test_closings_are_logged_once_then_every_thousandth_not_per_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limits = ListenerLimits(max_connections=1, read_timeout=0.3)
    with (
        caplog.at_level("WARNING", "app.serving.guard"),
        _listener(limits) as address,
        ExitStack() as stack,
    ):
        held = stack.enter_context(_connect(address))  # accepted first: holds the slot
        for _ in range(5):
            assert _closed_within(stack.enter_context(_connect(address)), WAIT)
        assert _closed_within(held, WAIT)  # idle past the read timeout
    lines = [r.getMessage() for r in caplog.records if r.name == "app.serving.guard"]
    assert sum("the cap: closing new ones (1 so far" in line for line in lines) == 1
    assert sum("closing new ones" in line for line in lines) == 1
    assert any("no whole request within 0.3s" in line for line in lines)


def test_metrics_count_each_listeners_closes_by_reason() -> None:
    """``/metrics`` of a served process shows how many connections each listener closed at
    its cap and for sending nothing in time, per listener."""
    main_port, metrics_port = free_port(), free_port()
    args = build_parser().parse_args(
        [
            "serve",
            "--demo",
            "--port",
            str(main_port),
            "--metrics-bind-address",
            f"127.0.0.1:{metrics_port}",
            "--metrics-max-connections",
            "1",
            "--request-read-timeout",
            "0.3",
        ]
    )
    server, sides, _ = build_servers(args, listening_from_args(args), backend_from_args)
    thread = threading.Thread(target=serve_all, args=(server, sides), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + WAIT
        while not (server.started and sides[0].started) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.started and sides[0].started
        with _connect(("127.0.0.1", main_port)) as idle:
            assert _closed_within(idle, WAIT)  # sent nothing: closed at the read timeout
        with _connect(("127.0.0.1", metrics_port)) as held:
            assert _get(held).startswith(b"HTTP/1.1 ")  # served (the route is not there)
            with _connect(("127.0.0.1", metrics_port)) as extra:
                assert _closed_within(extra, WAIT)  # one connection is the cap
        text = ""
        while not text and time.monotonic() < deadline + WAIT:  # the held slot comes back
            with contextlib.suppress(httpx.TransportError):
                text = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=WAIT).text
        closed = {
            line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("queue_extender_listener_connections_closed_total{")
        }
        series = "queue_extender_listener_connections_closed_total"
        assert closed[f'{series}{{listener="verbs",reason="read_timeout"}}'] >= 1
        assert closed[f'{series}{{listener="metrics",reason="connection_cap"}}'] >= 1
        assert f'{series}{{listener="status",reason="connection_cap"}}' not in closed
    finally:
        server.should_exit = True
        thread.join(WAIT)
