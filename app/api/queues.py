"""GET /api/v1/queues, /api/v1/queues/{name}, /api/v1/queues/{name}/pending."""

from __future__ import annotations

from fastapi import APIRouter, Path, Query
from starlette.responses import Response

from app.api.common import BAD_REQUEST, NAME_PATTERN, answered, found, missing
from app.api.models import PendingPage, Queue, QueueList, QueueListView
from app.api.port import InsightBackend
from scheduler_core.insight.pending import DEFAULT_LIMIT, MAX_LIMIT

QueueName = Path(pattern=NAME_PATTERN, max_length=253, description="the Queue's name")


def make_router(backend: InsightBackend) -> APIRouter:
    router = APIRouter(prefix="/api/v1", tags=["queues"])
    unknown = missing("No such queue")

    @router.get(
        "/queues",
        response_model=QueueList,
        responses=BAD_REQUEST,
        summary="Every queue, with its fair share",
    )
    async def list_queues() -> Response:
        return answered(QueueList, QueueListView(backend.queues()))

    @router.get(
        "/queues/{name}",
        response_model=Queue,
        responses=unknown,
        summary="One queue, with the derivation of its deserved share",
    )
    async def get_queue(name: str = QueueName) -> Response:
        return found(Queue, lambda: backend.queue(name))

    @router.get(
        "/queues/{name}/pending",
        response_model=PendingPage,
        responses=unknown,
        summary="The queue's pending jobs in the order the engine serves them, with reasons",
    )
    async def pending(
        name: str = QueueName,
        limit: int = Query(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="page size"),
    ) -> Response:
        return found(PendingPage, lambda: backend.pending(name, limit))

    return router
