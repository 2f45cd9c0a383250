"""The verbs' router sends a verb POST past FastAPI, and what must see every verb call still
sees it there: authentication, the server-error handler, the metrics, the body cap and the
listener guard. Everything else still goes through FastAPI."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import orjson
import pytest
from prometheus_client import CollectorRegistry

from app.serving.guard import ListenerLimits
from app.serving.server import ServerSettings, create_app
from app.serving.verb_router import ExtenderApp
from scheduler_core.extender.decisions import FilterResult
from tests.app.fake_backend import FakeBackend
from tests.app.live import serve_address

ARGS = orjson.dumps(
    {"Pod": {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}}, "NodeNames": ["a", "b"]}
)


class Sent:
    """What one ASGI call sent back."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        start = next(m for m in messages if m["type"] == "http.response.start")
        self.status: int = start["status"]
        self.headers = {k.decode(): v.decode() for k, v in start["headers"]}
        self.body = b"".join(m.get("body", b"") for m in messages[1:])


def call(
    app: ExtenderApp,
    method: str,
    path: str,
    body: bytes = ARGS,
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
    chunks: int = 1,
    root_path: str = "",
) -> Sent:
    """One request through the app's ASGI interface, its body in ``chunks`` messages (no
    Content-Length beyond one, as a chunked upload)."""
    if headers is None:
        headers = [(b"content-length", str(len(body)).encode())] if chunks == 1 else []
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": root_path,
        "query_string": b"",
        "headers": [(b"host", b"x"), (b"content-type", b"application/json"), *headers],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 2),
    }
    size = -(-len(body) // chunks) if body else 1
    parts = [body[i : i + size] for i in range(0, len(body), size)] or [b""]
    messages = [
        {"type": "http.request", "body": p, "more_body": i < len(parts) - 1}
        for i, p in enumerate(parts)
    ]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return Sent(sent)


def metric(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def app_with(backend: FakeBackend | None = None, **settings: Any) -> ExtenderApp:
    return create_app(backend or FakeBackend(), ServerSettings(**settings))


# --- routing ---------------------------------------------------------------------------


def test_a_verb_post_is_answered_by_the_router_without_the_framework() -> None:
    app = app_with()
    r = call(app, "POST", "/filter")
    assert r.status == 200 and orjson.loads(r.body)["NodeNames"] == ["a", "b"]
    assert r.headers == {"content-length": str(len(r.body)), "content-type": "application/json"}
    # FastAPI builds its middleware stack on its first call: the verb never made it.
    assert app.middleware_stack is None


@pytest.mark.parametrize(
    ("method", "path", "root_path", "status"),
    [
        ("GET", "/filter", "", 405),  # another method: FastAPI's answer
        ("POST", "/filterx", "", 404),  # another path
        ("GET", "/healthz", "", 200),
    ],
)
def test_anything_but_a_verb_post_goes_through_the_framework(
    method: str, path: str, root_path: str, status: int
) -> None:
    app = app_with()
    assert call(app, method, path, root_path=root_path).status == status
    assert app.middleware_stack is not None


def test_a_verb_under_a_mounted_prefix_goes_through_the_framework() -> None:
    app = app_with()
    r = call(app, "POST", "/filter", root_path="/mounted")
    assert app.middleware_stack is not None
    assert r.status in (200, 404)


def test_the_renamed_verbs_are_routed_on_their_configured_paths() -> None:
    app = app_with(url_prefix="/x", filter_verb="f")
    assert call(app, "POST", "/x/f").status == 200
    assert app.middleware_stack is None
    assert call(app, "POST", "/filter").status == 404


def test_noop_takes_the_verbs_way_only_when_asked_for() -> None:
    app = app_with(noop=True)
    r = call(app, "POST", "/noop")
    assert (r.status, r.body) == (200, b"{}") and app.middleware_stack is None
    assert call(app_with(), "POST", "/noop").status == 404


# --- what must see every verb call -----------------------------------------------------


def test_authentication_sees_a_verb_call(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n")
    backend = FakeBackend()
    app = app_with(backend, token_file=str(token), token_recheck_seconds=0)
    refused = call(app, "POST", "/filter")
    assert refused.status == 401 and "www-authenticate" in refused.headers
    assert orjson.loads(refused.body)["Error"].startswith("unauthorized")
    wrong = call(app, "POST", "/prioritize", headers=[(b"authorization", b"Bearer nope")])
    assert wrong.status == 401
    assert backend.calls == []
    ok = call(app, "POST", "/filter", headers=[(b"authorization", b"Bearer s3cret")])
    assert ok.status == 200 and "filter" in [c[0] for c in backend.calls]


def test_the_server_error_handler_sees_a_verb_call() -> None:
    """A failure no handler caught (here a verdict that is no ``Status``, which the route's
    metrics cannot read) is answered 500 and raised on to the server, which logs it."""
    broken = FakeBackend(filter_fn=lambda pod, names: FilterResult([], {"a": "no status"}))  # type: ignore[dict-item]
    app = app_with(broken)
    sent: list[dict[str, Any]] = []

    async def run() -> None:
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/filter",
            "root_path": "",
            "headers": [(b"content-length", str(len(ARGS)).encode())],
        }

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": ARGS, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await app(scope, receive, send)

    with pytest.raises(AttributeError):
        asyncio.run(run())
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 500
    assert sent[1]["body"] == b"Internal Server Error"


def test_the_metrics_see_a_verb_call() -> None:
    registry = CollectorRegistry()
    app = app_with(registry=registry)
    count = "queue_extender_request_duration_seconds_count"
    for verb in ("filter", "prioritize"):
        assert metric(registry, count, verb=verb) == 0
        assert call(app, "POST", f"/{verb}").status == 200
        assert metric(registry, count, verb=verb) == 1
    assert call(app, "POST", "/filter", b"[]").status == 400
    assert metric(registry, count, verb="filter") == 2
    assert metric(registry, "queue_extender_bad_requests_total", verb="filter") == 1


@pytest.mark.parametrize("chunks", [1, 4])
def test_the_body_cap_sees_a_verb_call(chunks: int) -> None:
    """Over the cap, declared or streamed: 413 in the verb's error shape, counted as a bad
    request; within it, the same body is read whole across its messages."""
    registry = CollectorRegistry()
    app = app_with(registry=registry, max_body_bytes=len(ARGS) - 1)
    r = call(app, "POST", "/filter", chunks=chunks)
    assert r.status == 413 and "exceeds the limit" in orjson.loads(r.body)["Error"]
    assert metric(registry, "queue_extender_bad_requests_total", verb="filter") == 1
    roomy = app_with(max_body_bytes=len(ARGS))
    assert call(roomy, "POST", "/filter", chunks=chunks).status == 200


def test_an_unreadable_content_length_on_a_verb_is_a_400() -> None:
    r = call(app_with(), "POST", "/filter", headers=[(b"content-length", b"x2")])
    assert r.status == 400 and "invalid Content-Length" in orjson.loads(r.body)["Error"]


def test_a_client_gone_before_its_whole_body_is_a_bad_request() -> None:
    app = app_with()
    sent: list[dict[str, Any]] = []

    async def run() -> None:
        scope = {"type": "http", "method": "POST", "path": "/filter", "headers": []}
        replies = [{"type": "http.request", "body": b"{", "more_body": True}]

        async def receive() -> dict[str, Any]:
            return replies.pop(0) if replies else {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await app(scope, receive, send)

    asyncio.run(run())
    assert sent[0]["status"] == 400
    assert b"disconnected" in sent[1]["body"]


def test_the_listener_guard_sees_a_verb_call() -> None:
    """A verb POST whose body never arrives whole is cut at the read deadline, and one whose
    head is over the bound is refused, before the router is reached."""
    limits = ListenerLimits(read_timeout=0.5, max_head_bytes=1024)
    backend = FakeBackend()
    with serve_address(create_app(backend), limits) as address:
        with socket.create_connection(address, timeout=10) as sock:
            sock.sendall(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            sock.settimeout(10)
            assert sock.recv(65536) == b""  # closed, nothing answered
        with socket.create_connection(address, timeout=10) as sock:
            head = b"POST /filter HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 4096 + b"\r\n"
            sock.sendall(head + b"Content-Length: 2\r\n\r\n{}")
            sock.settimeout(10)
            assert sock.recv(65536).startswith(b"HTTP/1.1 400")
    assert backend.calls == []
