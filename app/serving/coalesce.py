"""One write per answer: a transport that holds a response's pieces until it is complete.

uvicorn writes a response's status line and headers as soon as the application starts it,
and the body when the application sends it: two ``write`` calls, two syscalls and two TCP
segments for every verb's answer, each write paid by the event loop while it holds the GIL,
and a client that reads the head before the body has arrived waits on its socket a second
time (kube-scheduler does so inside its scheduling cycle).

``CoalescingTransport`` keeps what is written within one step of the event loop and hands it
to the real transport as one ``writelines`` (a single ``writev``) when the response
completes (``flush``, called by the protocol), when the connection is closed, or, for
anything that does not complete in this step (a ``100 Continue``, a streamed body), at the
end of the loop's current round of callbacks. Nothing waits longer than that round, and the
bytes and their order are exactly those uvicorn wrote.

The write itself: uvloop's ``write`` makes its ``write`` system call while holding the GIL.
On loopback that call wakes kube-scheduler, which takes the core while our thread still
holds the GIL, so the informers' threads cannot run until we are scheduled again. For a
plain TCP connection whose transport holds nothing unsent, ``flush`` therefore hands the
answer to the kernel itself with ``os.writev`` on the connection's socket, which releases
the GIL around the call, exactly as uvloop would have written it (uvloop, too, writes
directly when its buffer is empty). What the kernel does not take (a partial write, or
none at all when the socket's buffer is full) goes to the transport, which buffers it and
applies its flow control as for any write, so order and backpressure stay the transport's.
Anything else takes the transport's own path: TLS (the bytes must be encrypted), a
transport that still buffers earlier bytes (they must leave first), after ``write_eof``,
or a write the kernel refuses with an error (the transport meets the same error and
closes the connection as it always has).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import uvloop.loop

#: uvloop's plain TCP transport (its stub does not name it).
TCP_TRANSPORT: type = uvloop.loop.TCPTransport  # type: ignore[attr-defined]


def plain_socket_fd(transport: asyncio.BaseTransport) -> int:
    """The socket descriptor ``flush`` may write to past ``transport``: that of uvloop's
    plain TCP transport (not TLS, whose protocol transport is another type), else -1."""
    if type(transport) is not TCP_TRANSPORT or transport.get_extra_info("sslcontext") is not None:
        return -1
    sock = transport.get_extra_info("socket")
    if sock is None:
        return -1
    try:
        fd: int = sock.fileno()
    except (OSError, ValueError):
        return -1
    return fd


def unsent(pending: list[bytes | bytearray | memoryview], sent: int) -> list[memoryview]:
    """What of ``pending`` is left once its first ``sent`` bytes were written, in order."""
    for index, data in enumerate(pending):
        view = memoryview(data).cast("B")
        if sent < len(view):
            return [view[sent:], *(memoryview(rest).cast("B") for rest in pending[index + 1 :])]
        sent -= len(view)
    return []


class CoalescingTransport(asyncio.Transport):
    """Forwards everything to ``transport``; ``write`` and ``writelines`` are held back until
    ``flush``, ``close``, ``write_eof`` or the loop's next round, whichever comes first."""

    __slots__ = ("_fd", "_loop", "_pending", "_scheduled", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes | bytearray | memoryview] = []
        self._scheduled: asyncio.Handle | None = None
        #: The socket ``flush`` writes to itself while the transport holds nothing; -1: never.
        self._fd = plain_socket_fd(transport)

    # --- writing ------------------------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        self._pending.append(data)
        if self._scheduled is None:
            self._scheduled = self._loop.call_soon(self._flush_soon)

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.write(data)

    def send(self, data: bytes) -> None:
        """``write`` and ``flush`` at once, for an answer known to be whole: it leaves now,
        after anything held, with no round of the loop scheduled and cancelled for it."""
        self._pending.append(data)
        self.flush()

    def flush(self) -> None:
        """Hands what is held to the real transport now: one ``writev`` for all of it."""
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None
        pending = self._pending
        if not pending:
            return
        self._pending = []
        transport = self._transport
        if transport.is_closing():
            return  # what asyncio's transports do with a write after close: drop it
        if self._fd >= 0 and not transport.get_write_buffer_size():
            try:
                sent = os.writev(self._fd, pending)
            except BlockingIOError:
                pass  # the socket's buffer is full: all of it goes to the transport
            except OSError:
                pass  # the transport meets the same error and closes as it always does
            else:
                pending = unsent(pending, sent)  # type: ignore[assignment]
                if not pending:
                    return
        if len(pending) == 1:
            transport.write(pending[0])
        else:
            transport.writelines(pending)

    def _flush_soon(self) -> None:
        self._scheduled = None
        self.flush()

    def _unschedule(self) -> None:
        if self._scheduled is not None:
            self._scheduled.cancel()
            self._scheduled = None

    def get_write_buffer_size(self) -> int:
        held = sum(len(data) for data in self._pending)
        return held + self._transport.get_write_buffer_size()

    def write_eof(self) -> None:
        self.flush()
        self._fd = -1  # the transport refuses writes from now on; so must ``flush``
        self._transport.write_eof()

    def can_write_eof(self) -> bool:
        return self._transport.can_write_eof()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._transport.set_write_buffer_limits(high, low)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._transport.get_write_buffer_limits()

    # --- closing ------------------------------------------------------------------------

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        """Drops what is held, as the real transport drops its own buffer."""
        self._unschedule()
        self._pending = []
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    # --- everything else is the real transport's ----------------------------------------

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._transport.get_protocol()
