"""GET / and /queues/{name}: the status page (HTML)."""

from __future__ import annotations

from fastapi import APIRouter, Path
from starlette.responses import HTMLResponse

from app.api.common import BAD_REQUEST, NAME_PATTERN
from app.api.port import InsightBackend, RecentEvictionsProvider
from app.api.status_page import PENDING_SHOWN, render_index, render_missing, render_queue
from scheduler_core.insight.lookup import NotFoundError
from scheduler_core.insight.queues import held_with_children

HTML = {200: {"content": {"text/html": {"schema": {"type": "string"}}}}}


def make_router(
    backend: InsightBackend, evictions: RecentEvictionsProvider | None = None
) -> APIRouter:
    """The page's routes; ``evictions`` is the reclaim loop's record, None without a loop."""
    router = APIRouter(tags=["status page"])

    @router.get("/", response_class=HTMLResponse, summary="The status page: every queue")
    async def index() -> HTMLResponse:
        views = backend.queues()
        pending = {v.name: backend.pending(v.name, PENDING_SHOWN) for v in views if v.pending_jobs}
        return HTMLResponse(
            render_index(views, pending, list(evictions()) if evictions is not None else None)
        )

    @router.get(
        "/queues/{name}",
        response_class=HTMLResponse,
        responses={
            **BAD_REQUEST,
            404: {"description": "No such queue", "content": {"text/html": {}}},
        },
        summary="The status page of one queue",
    )
    async def queue(name: str = Path(pattern=NAME_PATTERN, max_length=253)) -> HTMLResponse:
        try:
            view = backend.queue(name)
            pending = backend.pending(name, 100)
        except NotFoundError as exc:
            return HTMLResponse(render_missing(str(exc)), status_code=404)
        branch = held_with_children(backend.queues()).get(name) if view.children else None
        return HTMLResponse(render_queue(view, pending, branch))

    return router
