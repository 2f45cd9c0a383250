"""Reading a request's body within a cap, and answering pre-encoded JSON."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Receive, Scope

from app.http.errors import BodyTooLarge, WireError

JSON = "application/json"

#: A route's handler: every endpoint of the service reads the raw request and answers bytes.
Endpoint = Callable[[Request], Awaitable[Response]]


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refusing more than `limit` bytes before buffering them.

    The declared Content-Length is checked first (so a huge upload is refused at once),
    then the streamed size (chunked uploads declare nothing).
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise WireError(f"invalid Content-Length {declared!r}") from None
        if size > limit:
            raise BodyTooLarge(f"request body of {size} bytes exceeds the limit of {limit} bytes")
    chunks: list[bytes] = []
    total = 0
    try:
        async for chunk in request.stream():
            total += len(chunk)
            if total > limit:
                raise BodyTooLarge(f"request body exceeds the limit of {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        raise WireError("client disconnected before sending the whole body") from None
    return b"".join(chunks)


async def read_asgi_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """``read_body``'s bytes and refusals, read from the ASGI messages themselves.

    The verbs' own way in has no ``Request`` to ask: the declared ``Content-Length`` is found
    in the raw headers and checked against ``limit`` first, then the streamed size; a body
    that arrives in one message (kube-scheduler's always does) is returned as it came."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            declared = value.decode("latin-1")
            try:
                size = int(declared)
            except ValueError:
                raise WireError(f"invalid Content-Length {declared!r}") from None
            if size > limit:
                raise BodyTooLarge(
                    f"request body of {size} bytes exceeds the limit of {limit} bytes"
                )
            break
    chunks: list[bytes] = []
    total = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise WireError("client disconnected before sending the whole body")
        chunk: bytes = message.get("body", b"")
        total += len(chunk)
        if total > limit:
            raise BodyTooLarge(f"request body exceeds the limit of {limit} bytes")
        if not message.get("more_body", False):
            if not chunks:
                return chunk
            chunks.append(chunk)
            return b"".join(chunks)
        chunks.append(chunk)


def json_response(body: bytes, status: int = 200) -> Response:
    return Response(content=body, status_code=status, media_type=JSON)
