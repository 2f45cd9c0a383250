"""What every room that answers HTTP shares: the error shapes and the capped body reader."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.requests import Request

from app.http.body import read_body
from app.http.errors import BodyTooLarge, WireError, encode_error, one_line


@given(st.text())
def test_an_error_body_is_one_line_of_the_message(message: str) -> None:
    doc = orjson.loads(encode_error(message))
    assert set(doc) == {"Error"}
    assert "\n" not in doc["Error"] and "\r" not in doc["Error"]
    assert doc["Error"] == one_line(message)


def test_too_large_is_a_bad_request_a_client_can_tell_apart() -> None:
    assert WireError("x").status == 400
    assert BodyTooLarge("x").status == 413 and isinstance(BodyTooLarge("x"), WireError)


def _request(chunks: list[bytes], headers: dict[str, str]) -> Request:
    pending = [*chunks]

    async def receive() -> dict[str, object]:
        body = pending.pop(0) if pending else b""
        return {"type": "http.request", "body": body, "more_body": bool(pending)}

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    return Request(scope, receive)


@pytest.mark.parametrize(
    ("chunks", "headers", "error"),
    [
        ([b"12345"], {"content-length": "5"}, None),
        ([b"123456"], {"content-length": "6"}, BodyTooLarge),  # declared: refused at once
        ([b"123", b"456"], {}, BodyTooLarge),  # chunked: refused while streaming
        ([b"1"], {"content-length": "one"}, WireError),
    ],
)
def test_the_body_is_read_within_its_cap(
    chunks: list[bytes], headers: dict[str, str], error: type[WireError] | None
) -> None:
    read = read_body(_request(chunks, headers), limit=5)
    if error is None:
        assert asyncio.run(read) == b"".join(chunks)
    else:
        with pytest.raises(error):
            asyncio.run(read)
