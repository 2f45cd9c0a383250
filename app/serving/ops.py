"""Operational endpoints: liveness, readiness, metrics and the benchmark's no-op floor."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from prometheus_client import CollectorRegistry
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from app.http.body import Endpoint
from app.http.errors import one_line
from app.telemetry.metrics import METRICS_CONTENT_TYPE, render
from app.verbs.ports import ExtenderBackend

log = logging.getLogger(__name__)


async def healthz(request: Request) -> Response:
    """Alive while the process serves: the kubelet restarts us only if this stops answering."""
    return PlainTextResponse("ok")


def make_readyz(
    backend: ExtenderBackend, config_warnings: Callable[[], Sequence[str]] = tuple
) -> Endpoint:
    """503 with the backend's reason until its caches have synced (kube-scheduler must not
    get answers from an empty cluster view).

    Configuration warnings do not make the service unready (Volcano runs on without the
    skipped plugin), but the detail names each one: it is where an operator looks first."""

    async def readyz(request: Request) -> Response:
        try:
            ready, reason = backend.readiness()
        except Exception as exc:
            log.warning("readiness check failed: %s", exc)
            return PlainTextResponse(
                f"not ready: readiness check failed: {one_line(str(exc))}", 503
            )
        detail = _warnings_detail(config_warnings())
        if ready:
            return PlainTextResponse("ok" + detail)
        return PlainTextResponse(f"not ready: {one_line(reason)}{detail}", 503)

    return readyz


def _warnings_detail(warnings: Sequence[str]) -> str:
    if not warnings:
        return ""
    return f"; {len(warnings)} configuration warning(s): " + "; ".join(
        one_line(w) for w in warnings
    )


def make_metrics(registries: Sequence[CollectorRegistry]) -> Endpoint:
    async def metrics(request: Request) -> Response:
        return Response(render(registries), media_type=METRICS_CONTENT_TYPE)

    return metrics


async def noop(request: Request) -> Response:
    """Reads the body and answers `{}`: the server's floor, for bench/ to subtract."""
    await request.body()
    return Response(b"{}", media_type="application/json")
