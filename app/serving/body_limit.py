"""Every endpoint's request body capped, whether or not the endpoint reads it with care.

The verbs and the what-if read their bodies through ``read_body`` with a cap, but FastAPI
routes, /noop and any route added later read ``request.body()`` whole: a 400 MB POST was
buffered in full. This middleware sits outside them all:

- a declared ``Content-Length`` over the cap is answered 413 before a byte of the body is
  read; a ``Content-Length`` that is not a number is answered 400;
- a body without ``Content-Length`` (chunked) is read here up to the cap, 413 beyond it,
  and handed on once read.

A request with a valid ``Content-Length`` within the cap passes untouched (the protocol
delivers no more than it declares). The verbs' paths are left to the verbs, which read their
bodies within the same cap themselves, answer the same 413, and count the refusal in their
own bad-request series.
"""

from __future__ import annotations

from collections.abc import Collection

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.http.errors import encode_error


class BodyLimit:
    """ASGI middleware refusing bodies over ``max_bytes`` on every path but ``exempt``."""

    def __init__(self, app: ASGIApp, max_bytes: int, exempt: Collection[str] = ()) -> None:
        if max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        self.app = app
        self.max_bytes = max_bytes
        self.exempt = frozenset(exempt)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.exempt:
            await self.app(scope, receive, send)
            return
        declared: bytes | None = None
        for name, value in scope["headers"]:
            if name == b"content-length":
                declared = value
                break
        if declared is not None:
            text = declared.decode("latin-1").strip()
            if not text.isdigit():
                await _answer(send, 400, f"invalid Content-Length {text!r}")
                return
            size = int(text)
            if size > self.max_bytes:
                await _answer(send, 413, self._too_large(f"request body of {size} bytes"))
                return
            await self.app(scope, receive, send)
            return
        # No declared length: read the body here, within the cap.
        messages: list[Message] = []
        total = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            total += len(message.get("body", b""))
            if total > self.max_bytes:
                await _answer(send, 413, self._too_large("request body"))
                return
            if not message.get("more_body", False):
                break
        replay = iter(messages)

        async def replayed() -> Message:
            message = next(replay, None)
            return message if message is not None else await receive()

        await self.app(scope, replayed, send)

    def _too_large(self, what: str) -> str:
        return f"{what} exceeds the limit of {self.max_bytes} bytes"


async def _answer(send: Send, status: int, message: str) -> None:
    body = encode_error(message)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
