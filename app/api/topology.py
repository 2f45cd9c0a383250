"""GET /api/v1/topology: the network topology gangs are placed in, and its refusal."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from app.api.common import BAD_REQUEST, answered
from app.api.models import Topology
from app.api.port import InsightBackend


def make_router(backend: InsightBackend) -> APIRouter:
    router = APIRouter(prefix="/api/v1", tags=["topology"])

    @router.get(
        "/topology",
        response_model=Topology,
        responses=BAD_REQUEST,
        summary="The network topology: its source, its domains by tier, why it is refused",
    )
    async def get_topology() -> Response:
        return answered(Topology, backend.topology())

    return router
