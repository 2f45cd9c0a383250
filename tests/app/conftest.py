"""Fixtures for the HTTP-layer tests: a scripted backend behind a real loopback server."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families

from app.serving.server import ServerSettings, create_app

from .fake_backend import FakeBackend
from .live import join_stopped_servers, serve


@dataclass
class Live:
    """One running service: its URL, scripted backend, app and an HTTP client."""

    url: str
    backend: FakeBackend
    app: FastAPI
    client: httpx.Client

    def metric(self, name: str, **labels: str) -> float:
        """A sample's value from /metrics (0 when the series does not exist yet)."""
        text = self.client.get("/metrics").text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == name and all(
                    sample.labels.get(k) == v for k, v in labels.items()
                ):
                    return float(sample.value)
        return 0.0


LiveFactory = Callable[..., Live]


@pytest.fixture(scope="session", autouse=True)
def _servers_stop_by_the_end() -> Iterator[None]:
    yield
    join_stopped_servers()


@pytest.fixture
def live() -> Iterator[LiveFactory]:
    """`live(settings=None, backend=None)` starts a fresh service for this test."""
    with ExitStack() as stack:

        def start(
            settings: ServerSettings | None = None, backend: FakeBackend | None = None
        ) -> Live:
            backend = backend if backend is not None else FakeBackend()
            app = create_app(backend, settings)
            url = stack.enter_context(serve(app, wait_stop=False))
            client = stack.enter_context(httpx.Client(base_url=url, timeout=10.0))
            return Live(url=url, backend=backend, app=app, client=client)

        yield start


@pytest.fixture
def svc(live: LiveFactory) -> Live:
    """A service with default settings."""
    return live()


@pytest.fixture
def restore_root() -> Iterator[None]:
    """Puts the root logger back as it was (for tests that call `setup_logging`)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in handlers:
            root.addHandler(h)
        root.setLevel(level)
