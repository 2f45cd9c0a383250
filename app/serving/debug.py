"""Debug endpoints: the engine's queue state and a per-pod explanation, as JSON."""

from __future__ import annotations

import logging
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from app.http.body import Endpoint, json_response, read_body
from app.http.errors import WireError, encode_error, one_line
from app.telemetry.logs import DEBUG_V
from app.verbs.common import VerbContext
from app.verbs.ports import BadPodError
from app.verbs.protocol import parse_pod
from scheduler_core.logutil import v

log = logging.getLogger(__name__)

_DUMP_OPTIONS = orjson.OPT_NON_STR_KEYS


def _dump(doc: dict[str, Any]) -> bytes:
    """Lenient: debug output must never fail on a set, an enum or a dataclass."""
    return orjson.dumps(doc, default=_fallback, option=_DUMP_OPTIONS)


def _fallback(obj: Any) -> Any:
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    return str(obj)


def _failure(what: str, exc: Exception, ctx: VerbContext) -> Response:
    ctx.metrics.verb(what).error()
    log.error("%s failed in the backend: %s: %s", what, type(exc).__name__, one_line(str(exc)))
    log.log(v(DEBUG_V), "%s failure traceback", what, exc_info=exc)
    return json_response(encode_error(f"{what} failed: {type(exc).__name__}: {exc}"), 500)


def make_debug_queues(ctx: VerbContext) -> Endpoint:
    async def debug_queues(request: Request) -> Response:
        try:
            return json_response(_dump(ctx.backend.debug_state()))
        except Exception as exc:
            return _failure("debug_queues", exc, ctx)

    return debug_queues


def make_debug_explain(ctx: VerbContext) -> Endpoint:
    async def debug_explain(request: Request) -> Response:
        try:
            pod = parse_pod(await read_body(request, ctx.max_body_bytes))
        except WireError as exc:
            ctx.metrics.verb("explain").bad_request()
            return json_response(encode_error(str(exc)), exc.status)
        try:
            return json_response(_dump(ctx.backend.explain(pod)))
        except BadPodError as exc:
            ctx.metrics.verb("explain").bad_request()
            return json_response(encode_error(str(exc)), 400)
        except Exception as exc:
            return _failure("explain", exc, ctx)

    return debug_explain
