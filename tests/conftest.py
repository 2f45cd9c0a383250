"""Shared test fixtures."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from scheduler_core.framework import registry
from scheduler_core.framework.registry import AnyPlugin
from tests.fakeapi import FakeApiServer

RegisterPlugin = Callable[[type[AnyPlugin]], None]


@pytest.fixture
def fake_api() -> Iterator[FakeApiServer]:
    """A started stand-in API server on a free loopback port, stopped after the test."""
    server = FakeApiServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def register_plugin() -> Iterator[RegisterPlugin]:
    """Registers test-only plugins for one test; they are gone again afterwards, so no test
    sees another's plugins and no test plugin can shadow a real one."""
    added: list[str] = []

    def register(cls: type[AnyPlugin]) -> None:
        assert registry.plugin_builder(cls.name) is None, f"plugin {cls.name} already exists"
        registry.register_plugin(cls)
        added.append(cls.name)

    yield register
    for name in added:
        registry._PLUGINS.pop(name, None)
