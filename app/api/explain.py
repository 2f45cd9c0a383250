"""GET /api/v1/pods/{namespace}/{name}/explain and the same for a PodGroup."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Path
from starlette.responses import Response

from app.api.common import NAME_PATTERN, found, missing
from app.api.models import Explanation
from app.api.port import InsightBackend

Namespace = Path(pattern=NAME_PATTERN, max_length=63, description="namespace")
Name = Path(pattern=NAME_PATTERN, max_length=253, description="object name")


def _explainer(explain: Callable[[str, str], object]) -> Callable[..., Awaitable[Response]]:
    """The route of one kind: the engine's explanation of the named object, or 404."""

    async def endpoint(namespace: str = Namespace, name: str = Name) -> Response:
        return found(Explanation, lambda: explain(namespace, name))

    return endpoint


def make_router(backend: InsightBackend) -> APIRouter:
    router = APIRouter(prefix="/api/v1", tags=["explain"])
    kinds = (
        (
            "pods",
            "explain_pod",
            backend.explain_pod,
            "Why is this pod pending: each check with its verdict, numbers and rule",
            "The engine does not know the pod",
        ),
        (
            "podgroups",
            "explain_podgroup",
            backend.explain_podgroup,
            "Why is this PodGroup pending (its first pending pod's checks)",
            "The engine does not know it",
        ),
    )
    for kind, name, explain, summary, unknown in kinds:
        router.add_api_route(
            f"/{kind}/{{namespace}}/{{name}}/explain",
            _explainer(explain),
            methods=["GET"],
            name=name,
            response_model=Explanation,
            responses=missing(unknown),
            summary=summary,
        )
    return router
