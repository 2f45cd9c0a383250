"""GET /api/v1/queues, /api/v1/queues/{name}, /api/v1/queues/{name}/pending."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Path, Query
from starlette.responses import Response

from app.api.common import BAD_REQUEST, JSON, NAME_PATTERN, not_found
from app.api.models import ApiError, PendingPage, Queue, QueueList, QueueListView, answer
from app.api.port import InsightBackend
from scheduler_core.insight.lookup import NotFoundError
from scheduler_core.insight.pending import DEFAULT_LIMIT, MAX_LIMIT

QueueName = Path(pattern=NAME_PATTERN, max_length=253, description="the Queue's name")


def make_router(backend: InsightBackend) -> APIRouter:
    router = APIRouter(prefix="/api/v1", tags=["queues"])
    missing: dict[int | str, dict[str, Any]] = {
        **BAD_REQUEST,
        404: {"model": ApiError, "description": "No such queue"},
    }

    @router.get(
        "/queues",
        response_model=QueueList,
        responses=BAD_REQUEST,
        summary="Every queue, with its fair share",
    )
    async def list_queues() -> Response:
        return Response(answer(QueueList, QueueListView(backend.queues())), media_type=JSON)

    @router.get(
        "/queues/{name}",
        response_model=Queue,
        responses=missing,
        summary="One queue, with the derivation of its deserved share",
    )
    async def get_queue(name: str = QueueName) -> Response:
        try:
            return Response(answer(Queue, backend.queue(name)), media_type=JSON)
        except NotFoundError as exc:
            return not_found(exc)

    @router.get(
        "/queues/{name}/pending",
        response_model=PendingPage,
        responses=missing,
        summary="The queue's pending jobs in the order the engine serves them, with reasons",
    )
    async def pending(
        name: str = QueueName,
        limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="page size"),
    ) -> Response:
        try:
            page = backend.pending(name, limit)
        except NotFoundError as exc:
            return not_found(exc)
        return Response(answer(PendingPage, page), media_type=JSON)

    return router
