"""Shared test fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakeapi import FakeApiServer


@pytest.fixture
def fake_api() -> Iterator[FakeApiServer]:
    """A started stand-in API server on a free loopback port, stopped after the test."""
    server = FakeApiServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
