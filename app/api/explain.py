"""GET /api/v1/pods/{namespace}/{name}/explain and the same for a PodGroup."""

from __future__ import annotations

from fastapi import APIRouter, Path
from starlette.responses import Response

from app.api.common import BAD_REQUEST, JSON, NAME_PATTERN, not_found
from app.api.models import ApiError, Explanation, answer
from app.api.port import InsightBackend
from scheduler_core.insight.lookup import NotFoundError

Namespace = Path(pattern=NAME_PATTERN, max_length=63, description="namespace")
Name = Path(pattern=NAME_PATTERN, max_length=253, description="object name")


def make_router(backend: InsightBackend) -> APIRouter:
    router = APIRouter(prefix="/api/v1", tags=["explain"])

    @router.get(
        "/pods/{namespace}/{name}/explain",
        response_model=Explanation,
        responses={
            **BAD_REQUEST,
            404: {"model": ApiError, "description": "The engine does not know the pod"},
        },
        summary="Why is this pod pending: each check with its verdict, numbers and rule",
    )
    async def explain_pod(namespace: str = Namespace, name: str = Name) -> Response:
        try:
            found = backend.explain_pod(namespace, name)
        except NotFoundError as exc:
            return not_found(exc)
        return Response(answer(Explanation, found), media_type=JSON)

    @router.get(
        "/podgroups/{namespace}/{name}/explain",
        response_model=Explanation,
        responses={
            **BAD_REQUEST,
            404: {"model": ApiError, "description": "The engine does not know it"},
        },
        summary="Why is this PodGroup pending (its first pending pod's checks)",
    )
    async def explain_podgroup(namespace: str = Namespace, name: str = Name) -> Response:
        try:
            found = backend.explain_podgroup(namespace, name)
        except NotFoundError as exc:
            return not_found(exc)
        return Response(answer(Explanation, found), media_type=JSON)

    return router
