"""Answers in one write: the header block waits for its body, and nothing waits longer."""

from __future__ import annotations

import asyncio
import http.client
import socket
from typing import Any, ClassVar
from urllib.parse import urlsplit

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from app.http_protocol import OneWriteHttpToolsProtocol, OneWriteTransport
from tests.app.live import serve

HEADER = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n"


class RecordingTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def one_write(loop: asyncio.AbstractEventLoop) -> tuple[OneWriteTransport, RecordingTransport]:
    raw = RecordingTransport()
    return OneWriteTransport(raw, loop), raw  # type: ignore[arg-type]


def test_the_header_block_goes_out_with_the_body_in_one_write() -> None:
    loop = asyncio.new_event_loop()
    try:
        transport, raw = one_write(loop)
        transport.write(HEADER)
        assert raw.writes == []
        transport.write(b"hello")
        assert raw.writes == [HEADER + b"hello"]
        loop.run_until_complete(asyncio.sleep(0))  # the scheduled flush finds nothing held
        assert raw.writes == [HEADER + b"hello"]
    finally:
        loop.close()


def test_a_header_block_without_a_body_goes_out_on_the_next_turn_of_the_loop() -> None:
    loop = asyncio.new_event_loop()
    try:
        transport, raw = one_write(loop)
        transport.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        loop.run_until_complete(asyncio.sleep(0))
        assert raw.writes == [b"HTTP/1.1 204 No Content\r\n\r\n"]
    finally:
        loop.close()


def test_closing_writes_what_is_held_first_and_other_writes_pass_straight_through() -> None:
    loop = asyncio.new_event_loop()
    try:
        transport, raw = one_write(loop)
        transport.write(b"5\r\nchunk\r\n")
        assert raw.writes == [b"5\r\nchunk\r\n"]
        transport.write(HEADER)
        transport.close()
        assert raw.writes == [b"5\r\nchunk\r\n", HEADER]
        assert raw.closed
        assert transport.is_closing()  # the rest of the transport is the real one
    finally:
        loop.close()


async def _hello(_: Request) -> Response:
    return Response(b'{"a":1}', media_type="application/json")


async def _stream(_: Request) -> StreamingResponse:
    async def parts() -> Any:
        yield b"one,"
        await asyncio.sleep(0.01)
        yield b"two"

    return StreamingResponse(parts(), media_type="text/plain")


APP = Starlette(routes=[Route("/hello", _hello), Route("/stream", _stream)])


@pytest.mark.parametrize("path, body", [("/hello", b'{"a":1}'), ("/stream", b"one,two")])
def test_answers_over_one_keep_alive_connection_arrive_whole(path: str, body: bytes) -> None:
    with serve(APP) as url:
        conn = http.client.HTTPConnection(urlsplit(url).netloc, timeout=10)
        try:
            for _ in range(3):
                conn.request("GET", path)
                answer = conn.getresponse()
                assert answer.status == 200
                assert answer.read() == body
        finally:
            conn.close()


class NoDelayProbe(OneWriteHttpToolsProtocol):
    seen: ClassVar[list[int]] = []

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        self.seen.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        super().connection_made(transport)


def test_accepted_sockets_have_tcp_nodelay() -> None:
    """Without it, the client's delayed ACK and Nagle's algorithm hold answers ~40 ms."""
    with serve(APP, http=NoDelayProbe) as url:
        conn = http.client.HTTPConnection(urlsplit(url).netloc, timeout=10)
        try:
            conn.request("GET", "/hello")
            assert conn.getresponse().read() == b'{"a":1}'
        finally:
            conn.close()
    assert NoDelayProbe.seen and all(NoDelayProbe.seen)
