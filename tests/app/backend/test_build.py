"""The composition root's record: what ``serve`` runs, stopped once and in order."""

from __future__ import annotations

import pytest

from app.backend.build import BuildOptions, Built, ClusterSource, build_backend

from ..fake_backend import FakeBackend


class Part:
    def __init__(self, name: str, log: list[str], fails: bool = False) -> None:
        self.name, self.log, self.fails = name, log, fails

    def stop(self) -> None:
        self.log.append(self.name)
        if self.fails:
            raise RuntimeError(f"{self.name} would not stop")


def test_close_resigns_first_then_stops_the_parts_last_started_first() -> None:
    log: list[str] = []
    parts = tuple(Part(n, log) for n in ("informers", "controller", "loop", "watcher"))
    Built(FakeBackend(), resign=lambda: log.append("resign"), parts=parts).close()
    assert log == ["resign", "watcher", "loop", "controller", "informers"]


def test_a_part_that_fails_to_stop_does_not_keep_the_others_running(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log: list[str] = []
    parts = (Part("informers", log), Part("loop", log, fails=True), Part("watcher", log))
    Built(FakeBackend(), parts=parts).close()
    assert log == ["watcher", "loop", "informers"]
    assert "would not stop" in caplog.text


def test_the_record_is_frozen() -> None:
    built = Built(FakeBackend())
    with pytest.raises(AttributeError):
        built.resign = lambda: None


def test_a_static_cluster_runs_no_thread_and_has_no_leader() -> None:
    built = build_backend(BuildOptions(source=ClusterSource(demo=True)))
    assert built.parts == () and built.resign is None and built.api_client is None
    assert built.evictions is None and built.registry is None
    assert built.assumptions is not None and built.assumptions().assumed == 0
    built.close()  # nothing to stop: still fine


def test_no_source_is_refused_with_one_line() -> None:
    with pytest.raises(ValueError, match="no cluster source"):
        build_backend(BuildOptions(source=ClusterSource()))
