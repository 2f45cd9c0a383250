"""Reading a request's body within a cap, and answering pre-encoded JSON."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

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


def json_response(body: bytes, status: int = 200) -> Response:
    return Response(content=body, status_code=status, media_type=JSON)
