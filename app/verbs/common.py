"""What every verb handler shares: bounded body reading, answers as bytes, failure logging."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from time import perf_counter
from typing import Literal, TypeVar

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from app.telemetry.logs import DEBUG_V
from app.telemetry.metrics import ServiceMetrics, VerbMetrics
from app.verbs.ports import ExtenderBackend
from app.verbs.wire import BodyTooLarge, WireError, one_line
from scheduler_core.logutil import v

log = logging.getLogger("app.verbs")

OnError = Literal["pass", "fail"]
JSON = "application/json"


@dataclass(frozen=True, slots=True)
class VerbContext:
    """The collaborators and policies a verb handler is built with (no globals)."""

    backend: ExtenderBackend
    metrics: ServiceMetrics
    on_error: OnError
    max_body_bytes: int


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


def pod_ref(pod: object) -> str:
    """`namespace/name` of a decoded pod, for log lines; tolerant of any shape."""
    meta = pod.get("metadata") if isinstance(pod, dict) else None
    if not isinstance(meta, dict):
        return "<unknown pod>"
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def log_bad_request(verb: str, exc: WireError) -> None:
    log.warning("bad %s request: %s", verb, exc)


def log_backend_failure(verb: str, pod: object, exc: BaseException, policy: OnError) -> None:
    """Backend failures are logged at ERROR in one line; the traceback only at V(4)."""
    log.error(
        "%s for pod %s failed in the backend (%s policy applied): %s: %s",
        verb,
        pod_ref(pod),
        policy,
        type(exc).__name__,
        one_line(str(exc)),
    )
    log.log(v(DEBUG_V), "%s backend failure traceback", verb, exc_info=exc)


Args = TypeVar("Args")
Endpoint = Callable[[Request], Awaitable[Response]]


def verb_endpoint(
    ctx: VerbContext,
    verb: str,
    parse: Callable[[bytes], Args],
    answer: Callable[[VerbMetrics, Args], tuple[int, bytes]],
    encode_bad_request: Callable[[str], bytes],
) -> Endpoint:
    """The one skeleton every verb's handler has: read the bounded body, decode it, answer,
    and time the call; a body that does not decode (``WireError``) is counted and logged as a
    bad request and answered in the verb's own error shape."""
    m = ctx.metrics.verb(verb)

    async def endpoint(request: Request) -> Response:
        started = perf_counter()
        try:
            try:
                args = parse(await read_body(request, ctx.max_body_bytes))
                status, body = answer(m, args)
            except WireError as exc:
                m.bad_request()
                log_bad_request(verb, exc)
                return json_response(encode_bad_request(str(exc)), exc.status)
            return json_response(body, status)
        finally:
            m.observe(perf_counter() - started)

    return endpoint
