"""What every verb handler shares: bounded body reading, answers as bytes, failure logging."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from typing import Generic, Literal, TypeVar

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from app.http.body import json_response, read_asgi_body, read_body
from app.http.errors import WireError, one_line
from app.telemetry.logs import DEBUG_V
from app.telemetry.metrics import ServiceMetrics, VerbMetrics
from app.verbs.ports import BadPodError, ExtenderBackend
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


def backend_failed(
    verb: str, ctx: VerbContext, m: VerbMetrics, pod: object, exc: Exception
) -> None:
    """What every verb does first when its backend raises, before it answers by its own
    error policy (``ctx.on_error``): a pod the engine cannot read is the caller's mistake,
    raised again as ``WireError`` (a 400 naming the field); any other failure is counted as
    an error and logged at ERROR in one line, the traceback only at V(4). Called only on the
    failure path, so an answered call pays nothing for it."""
    if isinstance(exc, BadPodError):
        raise WireError(str(exc)) from exc
    m.error()
    m.outcome("error")
    log.error(
        "%s for pod %s failed in the backend (%s policy applied): %s: %s",
        verb,
        pod_ref(pod),
        ctx.on_error,
        type(exc).__name__,
        one_line(str(exc)),
    )
    log.log(v(DEBUG_V), "%s backend failure traceback", verb, exc_info=exc)


Args = TypeVar("Args")

_JSON_HEADER = (b"content-type", b"application/json")


class VerbHandler(Generic[Args]):
    """The one skeleton every verb's handler has: read the bounded body, decode it, answer,
    and time the call; a body that does not decode (``WireError``) is counted and logged as a
    bad request and answered in the verb's own error shape.

    Three ways in, one behaviour: ``respond`` is what the verbs listener's protocol calls
    with a body it has read itself (``app.serving.guard``); ``asgi`` is what the verbs'
    router (``app.serving.verb_router``) calls for any other verb request, with no
    ``Request`` or ``Response`` object made; ``endpoint`` is the same handler as a FastAPI
    route, for the OpenAPI document and any request the router leaves to the framework (a
    mounted prefix)."""

    __slots__ = ("_answer", "_encode_bad_request", "_limit", "_metrics", "_parse", "verb")

    def __init__(
        self,
        ctx: VerbContext,
        verb: str,
        parse: Callable[[bytes], Args],
        answer: Callable[[VerbMetrics, Args], tuple[int, bytes]],
        encode_bad_request: Callable[[str], bytes],
    ) -> None:
        self.verb = verb
        self._metrics = ctx.metrics.verb(verb)
        self._limit = ctx.max_body_bytes
        self._parse = parse
        self._answer = answer
        self._encode_bad_request = encode_bad_request

    def _respond(self, body: bytes) -> tuple[int, bytes]:
        try:
            return self._answer(self._metrics, self._parse(body))
        except WireError as exc:
            return self._bad_request(exc)

    def _bad_request(self, exc: WireError) -> tuple[int, bytes]:
        self._metrics.bad_request()
        log_bad_request(self.verb, exc)
        return exc.status, self._encode_bad_request(str(exc))

    def respond(self, body: bytes) -> tuple[int, bytes]:
        """(status, answer) for a body already read whole, timed into the metrics: what the
        verbs listener's protocol calls when it reads a verb request itself
        (``app.serving.guard``)."""
        started = perf_counter()
        try:
            return self._respond(body)
        finally:
            self._metrics.observe(perf_counter() - started)

    async def asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = perf_counter()
        try:
            try:
                status, answer = self._respond(await read_asgi_body(scope, receive, self._limit))
            except WireError as exc:
                status, answer = self._bad_request(exc)
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [(b"content-length", b"%d" % len(answer)), _JSON_HEADER],
                }
            )
            await send({"type": "http.response.body", "body": answer})
        finally:
            self._metrics.observe(perf_counter() - started)

    async def endpoint(self, request: Request) -> Response:
        started = perf_counter()
        try:
            try:
                status, answer = self._respond(await read_body(request, self._limit))
            except WireError as exc:
                status, answer = self._bad_request(exc)
            return json_response(answer, status)
        finally:
            self._metrics.observe(perf_counter() - started)


def always_200(
    ctx: VerbContext,
    verb: str,
    parse: Callable[[bytes], Args],
    answer: Callable[[VerbContext, VerbMetrics, Args], bytes],
    encode_bad_request: Callable[[str], bytes],
) -> VerbHandler[Args]:
    """The handler of a verb whose every answer to a well-formed request is a 200 (filter's
    and preempt's failures are answers in the verb's own shape), ``answer`` given ``ctx``."""
    return VerbHandler(
        ctx, verb, parse, lambda m, args: (200, answer(ctx, m, args)), encode_bad_request
    )
