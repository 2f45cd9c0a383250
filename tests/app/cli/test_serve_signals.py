"""A stopping serve resigns leadership when the signal arrives, and returns from serving so
that what it built is closed."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest
import uvicorn

from app.cli.serve import ResigningServer, return_from_serving_on_sigterm


def config() -> uvicorn.Config:
    return uvicorn.Config(app=lambda scope, receive, send: None, host="127.0.0.1", port=0)


def test_the_signal_resigns_before_the_listener_shuts_down() -> None:
    seen: list[bool] = []
    server = ResigningServer(config(), lambda: seen.append(server.should_exit))
    server.handle_exit(signal.SIGTERM, None)
    assert seen == [False], "resigned before the shutdown began"
    assert server.should_exit


def test_a_failing_resign_does_not_stop_the_shutdown() -> None:
    def broken() -> None:
        raise RuntimeError("boom")

    server = ResigningServer(config(), broken)
    server.handle_exit(signal.SIGTERM, None)
    assert server.should_exit


@pytest.fixture
def restore_sigterm() -> Iterator[None]:
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


def test_sigterm_re_raised_after_the_shutdown_returns_instead_of_killing(
    restore_sigterm: None,
) -> None:
    return_from_serving_on_sigterm()
    signal.raise_signal(signal.SIGTERM)  # what uvicorn does once it has shut down
    # Still here: the process returns from serving and closes what it built.
