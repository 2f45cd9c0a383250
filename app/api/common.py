"""What the read-only API's routers share: name rules, error answers, 400 for bad params."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel
from starlette.responses import Response

from app.api.models import ApiError, answer
from app.http.errors import encode_error
from scheduler_core.insight.lookup import NotFoundError

#: A Kubernetes object name or namespace (DNS-1123 subdomain, the loosest of the rules).
NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
JSON = "application/json"


#: Every read-only endpoint answers a malformed name or parameter with this.
BAD_REQUEST: dict[int | str, dict[str, Any]] = {
    400: {"model": ApiError, "description": "Malformed name or parameter"}
}


def drop_validation_422(schema: dict[str, Any]) -> None:
    """FastAPI documents a 422 for every route with parameters; ours answer 400 instead."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses") if isinstance(operation, dict) else None
            if isinstance(responses, dict) and "400" in responses:
                responses.pop("422", None)


def missing(description: str) -> dict[int | str, dict[str, Any]]:
    """The answers documented for a route that looks one object up: 400 for a malformed
    name, 404 (``description``) for an object the engine does not know."""
    return {**BAD_REQUEST, 404: {"model": ApiError, "description": description}}


def answered(model: type[BaseModel], view: object) -> Response:
    """``view`` as ``model`` answers it: camelCase JSON."""
    return Response(answer(model, view), media_type=JSON)


def found(model: type[BaseModel], lookup: Callable[[], object]) -> Response:
    """The view ``lookup`` finds as ``model`` answers it, or 404 with the engine's sentence
    when it raises ``NotFoundError``."""
    try:
        view = lookup()
    except NotFoundError as exc:
        return Response(encode_error(str(exc)), status_code=404, media_type=JSON)
    return answered(model, view)


def bad_request(message: str) -> Response:
    return Response(encode_error(message), status_code=400, media_type=JSON)


def answer_validation_errors_with_400(app: FastAPI) -> None:
    """A malformed name or parameter is the caller's mistake: 400 with one line naming the
    field, as every other endpoint answers, not FastAPI's 422 document."""

    async def handler(request: Request, exc: Exception) -> Response:
        errors = exc.errors() if isinstance(exc, RequestValidationError) else []
        if errors:
            first = errors[0]
            where = ".".join(str(p) for p in first.get("loc", ()))
            return bad_request(f"{where}: {first.get('msg', 'invalid')}")
        return bad_request("invalid request")

    app.add_exception_handler(RequestValidationError, handler)
