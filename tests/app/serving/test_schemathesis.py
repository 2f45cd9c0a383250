"""Property-based requests generated from the app's own OpenAPI schema.

All of schemathesis' default checks run, not only "no 5xx": the schema must describe exactly
what the handlers accept (valid data answered 2xx, invalid data 400) and answer.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings

from app.serving.server import create_app

from ..fake_backend import FakeBackend

schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(FakeBackend()))


@schema.parametrize()
@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_no_server_error_for_any_generated_request(case: schemathesis.Case[Any]) -> None:
    case.call_and_validate()
