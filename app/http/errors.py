"""A request that cannot be meant, and how an error is written on the wire."""

from __future__ import annotations

import orjson
from pydantic import BaseModel


class WireError(ValueError):
    """A request a client could not have meant: answered with HTTP ``status``."""

    status = 400


class BodyTooLarge(WireError):
    """A body over the listener's cap: 413, so a client can tell "too big" from "malformed"
    (and never retry the same body hoping for another answer)."""

    status = 413


def one_line(text: str) -> str:
    """Messages end up in kube-scheduler events and in one log line: keep them on one line."""
    return " ".join(text.split())


def encode_error(message: str) -> bytes:
    """The body of an error answer (kube-scheduler only reads the status code; people and
    scripts read the message)."""
    return orjson.dumps({"Error": one_line(message)})


class ErrorModel(BaseModel):
    """A one-line error message (the OpenAPI description of ``encode_error``'s body)."""

    Error: str
