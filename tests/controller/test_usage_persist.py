"""The leader's usage history write-back: round trip through the Queue's annotation, at most
once per interval, only while leading, and a refused record reported as an event."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from scheduler_core.api.resource import Resource
from scheduler_core.api.usage_history import USAGE_HISTORY_ANNOTATION, UsageHistory
from scheduler_core.cache.state import ClusterState
from scheduler_core.controller.rest import ApiError
from scheduler_core.controller.runtime import Controller
from scheduler_core.controller.usage_persist import REFUSED_REASON, UsagePersister
from tests.builders import Obj, queue

H = 3600.0


@dataclass
class FakeRest:
    """Merge-PATCH of Queue metadata on the test's own objects."""

    queues: dict[str, Obj]
    patches: list[str] = field(default_factory=list)

    def merge_patch(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        assert resource == "queues"
        name = path.rsplit("/", 1)[1]
        obj = self.queues.get(name)
        if obj is None:
            raise ApiError(404, "NotFound", path)
        notes = obj["metadata"].setdefault("annotations", {})
        notes.update(body["metadata"]["annotations"])
        self.patches.append(name)
        return obj


@dataclass
class FakeRecorder:
    events: list[tuple[str, str, str, str]] = field(default_factory=list)

    def record(self, ref: Any, event_type: str, reason: str, note: str, **_: Any) -> None:
        self.events.append((ref.name, event_type, reason, note))


@dataclass
class FakeController:
    rest: FakeRest
    recorder: FakeRecorder = field(default_factory=FakeRecorder)
    leading: bool = True

    def is_leader(self) -> bool:
        return self.leading


class Clocks:
    def __init__(self) -> None:
        self.mono = 0.0
        self.server = 1_800_000_000.0

    def wait(self, seconds: float) -> None:
        self.mono += seconds
        self.server += seconds


def live_state(clocks: Clocks, objs: list[Obj]) -> tuple[ClusterState, UsageHistory]:
    history = UsageHistory(H, monotonic=lambda: clocks.mono, server_now=lambda: clocks.server)
    state = ClusterState()
    state.usage_history = history
    for obj in objs:
        state.upsert(obj["kind"], obj)
    return state, history


def persister(
    controller: FakeController, state: ClusterState, history: UsageHistory, clocks: Clocks
) -> UsagePersister:
    def refusals() -> dict[str, str]:
        taken, state.usage_refusals = state.usage_refusals, {}
        return taken

    return UsagePersister(
        cast(Controller, controller),
        history,
        state.queues,
        refusals,
        lambda: 300.0,
        clock=lambda: clocks.mono,
    )


def cpu_usage(history: UsageHistory, name: str) -> float:
    record = history.export(name)
    return record.usage.get("cpu", 0.0) if record is not None else 0.0


def test_a_restarted_process_continues_from_what_the_leader_wrote() -> None:
    clocks = Clocks()
    objs = {"q1": queue("q1"), "q2": queue("q2")}
    state, history = live_state(clocks, list(objs.values()))
    history.held("q1", Resource(4000, 0))
    clocks.wait(H)
    controller = FakeController(FakeRest(objs))
    persister(controller, state, history, clocks).tick()
    assert controller.rest.patches == ["q1"]  # q2 has no usage to keep
    written = cpu_usage(history, "q1")
    assert written > 0

    clocks.wait(H)  # down for one half-life: what was written is halved, nothing minted
    restarted, again = live_state(clocks, list(objs.values()))
    assert cpu_usage(again, "q1") == pytest.approx(written / 2, rel=1e-6)
    assert restarted.usage_refusals == {}


def test_writes_at_most_once_per_interval_and_only_while_leading() -> None:
    clocks = Clocks()
    objs = {"q1": queue("q1")}
    state, history = live_state(clocks, list(objs.values()))
    history.held("q1", Resource(1000, 0))
    controller = FakeController(FakeRest(objs), leading=False)
    writer = persister(controller, state, history, clocks)
    clocks.wait(10)
    writer.tick()
    assert controller.rest.patches == []
    controller.leading = True
    writer.tick()
    clocks.wait(299)
    writer.tick()
    assert controller.rest.patches == ["q1"]
    clocks.wait(1)
    writer.tick()
    assert controller.rest.patches == ["q1", "q1"]


def test_a_corrupt_record_gets_an_event_and_the_queue_starts_from_zero() -> None:
    clocks = Clocks()
    corrupt = queue("q1")
    corrupt["metadata"]["annotations"] = {USAGE_HISTORY_ANNOTATION: '{"usage": {"cpu": 1e99}}'}
    state, history = live_state(clocks, [corrupt])
    assert cpu_usage(history, "q1") == 0.0
    controller = FakeController(FakeRest({"q1": corrupt}))
    writer = persister(controller, state, history, clocks)
    writer.tick()
    writer.tick()
    [(name, kind, reason, note)] = controller.recorder.events
    assert (name, kind, reason) == ("q1", "Warning", REFUSED_REASON)
    assert "'at' must be an RFC 3339 time" in note
    assert note.endswith("its usage history starts from zero")
    assert not math.isnan(cpu_usage(history, "q1"))
