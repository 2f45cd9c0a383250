"""The leader's events on refused HyperNodes: one per refusal, only while leading."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from scheduler_core.cache.state import HYPERNODE, ClusterState
from scheduler_core.controller.runtime import Controller
from scheduler_core.controller.topology_report import REFUSED_REASON, TopologyReporter
from tests.builders import hypernode, node


@dataclass
class FakeRecorder:
    events: list[tuple[str, str, str, str]] = field(default_factory=list)

    def record(self, ref: Any, event_type: str, reason: str, note: str, **_: Any) -> None:
        self.events.append((ref.kind, ref.name, reason, note))


@dataclass
class FakeController:
    recorder: FakeRecorder = field(default_factory=FakeRecorder)
    leading: bool = True

    def is_leader(self) -> bool:
        return self.leading


def refused_state() -> ClusterState:
    state = ClusterState()
    state.upsert("Node", node("n1"))
    state.upsert(HYPERNODE, hypernode("leaf", 1, nodes=["n1"]))
    state.upsert(HYPERNODE, hypernode("spine", 2, hypernodes=["leaf", "spine"]))
    return state


def reporter(controller: FakeController, state: ClusterState) -> TopologyReporter:
    return TopologyReporter(cast(Controller, controller), state.take_topology_refusals)


def test_the_leader_records_one_event_per_refused_hypernode_once() -> None:
    controller = FakeController()
    state = refused_state()
    report = reporter(controller, state)
    report.tick()
    report.tick()
    assert controller.recorder.events == [
        (
            "HyperNode",
            "spine",
            REFUSED_REASON,
            "HyperNode spine: cycle: spine → spine; the network topology is refused and the "
            "last good one keeps serving",
        )
    ]


def test_a_replica_that_does_not_lead_keeps_the_refusal_for_when_it_leads() -> None:
    controller = FakeController(leading=False)
    state = refused_state()
    report = reporter(controller, state)
    report.tick()
    assert controller.recorder.events == []
    controller.leading = True
    report.tick()
    assert [e[1] for e in controller.recorder.events] == ["spine"]


def test_a_new_refusal_after_a_good_tree_is_reported_again() -> None:
    controller = FakeController()
    state = refused_state()
    report = reporter(controller, state)
    report.tick()
    state.upsert(HYPERNODE, hypernode("spine", 2, hypernodes=["leaf"]))
    report.tick()
    state.upsert(HYPERNODE, hypernode("spine", 2, hypernodes=["leaf", "spine"]))
    report.tick()
    assert [e[1] for e in controller.recorder.events] == ["spine", "spine"]
