"""The sockets `serve` accepts answer without delay."""

from __future__ import annotations

import asyncio
import http.client
import socket
from typing import ClassVar
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from tests.app.live import serve


async def _hello(_: Request) -> Response:
    return Response(b'{"a":1}', media_type="application/json")


class NoDelayProbe(HttpToolsProtocol):
    seen: ClassVar[list[int]] = []

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        self.seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        super().connection_made(transport)


def test_accepted_sockets_have_tcp_nodelay() -> None:
    """uvicorn's own protocol writes an answer's headers and its body in two writes (ours
    joins them, ``app.serving.coalesce``, but a streamed answer still leaves piece by
    piece); without TCP_NODELAY (uvloop sets it on every accepted TCP socket) Nagle's
    algorithm would hold the second piece until the client's delayed ACK, ~40 ms."""
    app = Starlette(routes=[Route("/hello", _hello)])
    with serve(app, http=NoDelayProbe) as url:
        conn = http.client.HTTPConnection(urlsplit(url).netloc, timeout=10)
        try:
            conn.request("GET", "/hello")
            assert conn.getresponse().read() == b'{"a":1}'
        finally:
            conn.close()
    assert NoDelayProbe.seen and all(NoDelayProbe.seen)
