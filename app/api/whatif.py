"""POST /api/v1/whatif: a dry-run session over a copy of the live state.

The verbs must never wait for a what-if: the copy is taken on the event loop under the
state's lock (a few dict copies: see ``ClusterState.fork``), and the session runs on a
worker thread while the loop goes on serving kube-scheduler. One what-if runs at a time;
another one asked meanwhile is answered 429 at once (with Retry-After) rather than queued,
so a burst of them can neither pile up threads nor hold memory for copies.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Request
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from app.api.common import JSON, answered, bad_request
from app.api.models import ApiError, WhatIfIn, WhatIfOut
from app.api.port import InsightBackend
from app.http.body import read_body
from app.http.errors import WireError, encode_error, one_line
from scheduler_core.insight.whatif import WhatIfError

#: A what-if body is a handful of manifests, not a cluster.
MAX_WHATIF_BYTES = 1024 * 1024
BUSY = "another what-if is running; one runs at a time, retry when it has answered"


def request_schema() -> tuple[dict[str, Any], dict[str, Any]]:
    """The body's ``$ref`` and the definitions to add to the schema's components."""
    schema = WhatIfIn.model_json_schema(ref_template="#/components/schemas/{model}")
    defs = schema.pop("$defs", {})
    defs[WhatIfIn.__name__] = schema
    return {"$ref": f"#/components/schemas/{WhatIfIn.__name__}"}, defs


def make_router(backend: InsightBackend, max_bytes: int = MAX_WHATIF_BYTES) -> APIRouter:
    router = APIRouter(prefix="/api/v1", tags=["what-if"])
    ref, _ = request_schema()
    one_at_a_time = asyncio.Lock()

    @router.post(
        "/whatif",
        response_model=WhatIfOut,
        responses={
            400: {"model": ApiError, "description": "Malformed or unusable request"},
            413: {"model": ApiError, "description": f"Body over {max_bytes} bytes"},
            429: {"model": ApiError, "description": "Another what-if is running"},
        },
        summary="What would be placed and evicted if these objects were submitted",
        openapi_extra={
            "requestBody": {"required": True, "content": {"application/json": {"schema": ref}}}
        },
    )
    async def whatif(request: Request) -> Response:
        try:
            body = await read_body(request, max_bytes)
        except WireError as exc:
            return Response(encode_error(str(exc)), status_code=exc.status, media_type=JSON)
        try:
            parsed = WhatIfIn.model_validate_json(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "body"
            return bad_request(one_line(f"{where}: {first['msg']}"))
        ask = parsed.request()
        if one_at_a_time.locked():
            return Response(
                encode_error(BUSY),
                status_code=429,
                media_type=JSON,
                headers={"Retry-After": "1"},
            )
        async with one_at_a_time:
            try:
                dry_run = backend.whatif(ask)
                result = await run_in_threadpool(dry_run)
            except WhatIfError as exc:
                return bad_request(str(exc))
        return answered(WhatIfOut, result)

    return router
