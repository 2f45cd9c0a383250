"""A POST to a verb path reaches its endpoint directly; everything else goes through the app."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from app.verbs.fast_path import VerbFastPath


class Recorder:
    def __init__(self) -> None:
        self.inner: list[str] = []
        self.verbs: list[bytes] = []

    async def app(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.inner.append(scope["path"])
        await Response(b"inner")(scope, receive, send)

    async def verb(self, request: Request) -> Response:
        self.verbs.append(await request.body())
        return Response(b'{"verb":true}', media_type="application/json")


def call(app: VerbFastPath, method: str, path: str, root_path: str = "") -> bytes:
    scope: dict[str, Any] = {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": root_path,
        "headers": [],
        "query_string": b"",
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


@pytest.mark.parametrize(
    "method, path, root_path",
    [
        ("GET", "/filter", ""),  # another method: FastAPI answers (405)
        ("POST", "/filterx", ""),  # another path
        ("POST", "/filter", "/mounted"),  # under a prefix the router would strip
    ],
)
def test_anything_but_a_verb_post_goes_through_the_app(
    method: str, path: str, root_path: str
) -> None:
    rec = Recorder()
    app = VerbFastPath(rec.app, {"/filter": rec.verb})
    assert call(app, method, path, root_path) == b"inner"
    assert rec.inner == [path] and rec.verbs == []


def test_a_verb_post_reaches_its_endpoint_with_its_body() -> None:
    rec = Recorder()
    app = VerbFastPath(rec.app, {"/filter": rec.verb})
    assert call(app, "POST", "/filter") == b'{"verb":true}'
    assert rec.verbs == [b"{}"] and rec.inner == []
