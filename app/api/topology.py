"""GET /api/v1/topology: the network topology gangs are placed in, and its refusal."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from app.api.common import BAD_REQUEST, JSON
from app.api.port import InsightBackend
from app.api.wire import Topology, dump


def make_router(backend: InsightBackend) -> APIRouter:
    router = APIRouter(prefix="/api/v1", tags=["topology"])

    @router.get(
        "/topology",
        response_model=Topology,
        responses=BAD_REQUEST,
        summary="The network topology: its source, its domains by tier, why it is refused",
    )
    async def get_topology() -> Response:
        return Response(dump(Topology.model_validate(backend.topology())), media_type=JSON)

    return router
