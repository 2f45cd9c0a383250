"""uvicorn's httptools protocol, answering each request in one write.

uvicorn writes a response's status line and headers as soon as the application starts the
response, then the body in a second ``transport.write``: two ``send`` system calls and two
TCP segments per answer (the sockets have ``TCP_NODELAY``, so nothing coalesces them). Under
kube-scheduler, which waits for every answer, those two writes were ~20 % of the serving
loop's time. Here the header block is held back and written with the body that follows it;
if no body follows within the same turn of the event loop (a streamed or body-less answer),
it is written on the next turn, so nothing is ever held longer than that.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

_HEADER_END = b"\r\n\r\n"
_STATUS_START = b"HTTP/"


class OneWriteTransport:
    """A transport whose header block waits for the body written right after it."""

    __slots__ = ("_held", "_loop", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(held + bytes(data))
        elif (
            isinstance(data, bytes)
            and data.startswith(_STATUS_START)
            and data.endswith(_HEADER_END)
        ):
            self._held = data
            self._loop.call_soon(self.flush)
        else:
            self._transport.write(data)

    def flush(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class OneWriteHttpToolsProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` over a ``OneWriteTransport``. (uvloop already sets
    ``TCP_NODELAY`` on every accepted TCP socket; a test pins that.)"""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.transport = OneWriteTransport(transport, self.loop)  # type: ignore[assignment]
