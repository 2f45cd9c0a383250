"""The composition root's record: what ``serve`` runs, stopped once and in order."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from app.backend.build import (
    BuildOptions,
    Built,
    ClusterSource,
    StartedWhenWatched,
    build_backend,
)

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


class _Informers:
    """Tells a waiter of a kind when the test says discovery found it."""

    def __init__(self) -> None:
        self.waiting: list[Callable[[str], None]] = []

    def when_watched(self, kind: str, callback: Callable[[str], None]) -> None:
        self.waiting.append(callback)

    def found(self, version: str) -> None:
        for callback in self.waiting:
            callback(version)


class _Part:
    def __init__(self, version: str) -> None:
        self.version = version
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


def test_a_part_waiting_for_a_kind_starts_once_it_is_watched_and_stops_with_the_rest() -> None:
    informers = _Informers()
    waiting = StartedWhenWatched(informers, "NativePodGroup", _Part)
    assert waiting.part is None
    informers.found("scheduling.k8s.io/v1beta1")
    part = waiting.part
    assert isinstance(part, _Part) and part.version == "scheduling.k8s.io/v1beta1"
    waiting.stop()
    assert part.stopped


def test_a_part_stopped_before_its_kind_is_watched_never_starts() -> None:
    informers = _Informers()
    waiting = StartedWhenWatched(informers, "NativePodGroup", _Part)
    waiting.stop()
    informers.found("scheduling.k8s.io/v1beta1")
    assert waiting.part is None
