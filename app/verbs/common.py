"""What every verb handler shares: bounded body reading, answers as bytes, failure logging."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from typing import Literal, TypeVar

from starlette.requests import Request
from starlette.responses import Response

from app.http.body import Endpoint, json_response, read_body
from app.http.errors import WireError, one_line
from app.telemetry.logs import DEBUG_V
from app.telemetry.metrics import ServiceMetrics, VerbMetrics
from app.verbs.ports import ExtenderBackend
from scheduler_core.logutil import v

log = logging.getLogger("app.verbs")

OnError = Literal["pass", "fail"]


@dataclass(frozen=True, slots=True)
class VerbContext:
    """The collaborators and policies a verb handler is built with (no globals)."""

    backend: ExtenderBackend
    metrics: ServiceMetrics
    on_error: OnError
    max_body_bytes: int


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
