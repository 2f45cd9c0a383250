"""A refused preemption is told by the replica that answered the verb, leader or not."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from app.backend.engine import BackendOptions, EngineBackend
from scheduler_core.cache.objects import collect
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import default_configuration
from scheduler_core.controller.events import EventRecorder
from scheduler_core.controller.runtime import ControllerOptions
from tests.builders import node, pod, priority_class, queue


class FakeRest:
    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def post(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        with self.lock:
            self.posts.append(body)
        return body

    def merge_patch(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        return body


@dataclass
class StandInController:
    """What ``_report_refusals`` reads of the controller: its options and its recorder."""

    recorder: EventRecorder
    options: ControllerOptions = field(default_factory=ControllerOptions)


def full_cluster_of_an_unreclaimable_queue() -> ClusterState:
    objects = [
        priority_class("low", 1),
        priority_class("high", 100),
        node("n1", cpu="2", memory="4Gi"),
        queue("q1"),
        queue("q2", reclaimable=False),
        pod("hog", cpu="2", memory="1Gi", node_name="n1", queue="q2", priority_class="low"),
    ]
    state = ClusterState()
    state.apply_objects(collect(objects))
    return state


def telling_backend(
    state: ClusterState, rest: FakeRest, instance: str = "r", leader: bool = True
) -> tuple[EngineBackend, EventRecorder]:
    """A backend whose preempt refusals go, as events, to ``rest`` (started recorder)."""
    recorder = EventRecorder(
        rest,  # type: ignore[arg-type]
        instance,
        lambda: leader,
        registry=CollectorRegistry(),
    ).start()
    backend = EngineBackend(
        state,
        default_configuration(),
        BackendOptions(scheduler_names=("queue-scheduler",)),
        controller=StandInController(recorder),  # type: ignore[arg-type]
    )
    return backend, recorder


@pytest.mark.parametrize("leader", [True, False])
def test_a_refused_preemption_is_an_event_from_the_answering_replica_leader_or_not(
    leader: bool,
) -> None:
    rest = FakeRest()
    backend, recorder = telling_backend(
        full_cluster_of_an_unreclaimable_queue(), rest, "replica-b", leader
    )
    claim = pod("claim", cpu="2", memory="1Gi", queue="q1", priority_class="high", priority=100)
    try:
        answer = backend.preempt(claim, {"n1": ["ns-hog"]})
        assert recorder.flush()
    finally:
        recorder.stop()
    assert answer == {}
    [event] = rest.posts
    assert (event["reason"], event["action"], event["type"]) == (
        "NotReclaimable",
        "Preempt",
        "Warning",
    )
    assert event["regarding"]["name"] == "claim"
    assert event["reportingInstance"] == "replica-b"


def test_write_status_false_tells_nothing() -> None:
    rest = FakeRest()
    recorder = EventRecorder(rest, "r", lambda: True, registry=CollectorRegistry())  # type: ignore[arg-type]
    backend = EngineBackend(
        full_cluster_of_an_unreclaimable_queue(),
        default_configuration(),
        controller=StandInController(recorder, ControllerOptions(write_status=False)),  # type: ignore[arg-type]
    )
    backend.preempt(pod("claim", cpu="2", queue="q1", priority=100), {"n1": ["ns-hog"]})
    assert recorder.flush(timeout=1.0)
    assert rest.posts == []


def test_a_preemptor_tried_again_before_its_victim_goes_is_told_why_it_gets_none() -> None:
    """kube-scheduler retried the pod while the victim chosen for it is still terminating:
    no victim elsewhere, and an event on the pod saying so."""
    objects = [
        priority_class("low", 1),
        priority_class("high", 100),
        node("n1", cpu="2", memory="4Gi"),
        node("n2", cpu="2", memory="4Gi"),
        queue("q1"),
        pod("v1", cpu="2", memory="1Gi", node_name="n1", queue="q1", priority_class="low"),
        pod("v2", cpu="2", memory="1Gi", node_name="n2", queue="q1", priority_class="low"),
    ]
    state = ClusterState()
    state.apply_objects(collect(objects))
    rest = FakeRest()
    backend, recorder = telling_backend(state, rest)
    claim = pod("claim", cpu="2", memory="1Gi", queue="q1", priority_class="high", priority=100)
    try:
        first = backend.preempt(claim, {"n1": ["ns-v1"]})
        again = backend.preempt(claim, {"n2": ["ns-v2"]})
        assert recorder.flush()
    finally:
        recorder.stop()
    assert {n: v.uids for n, v in first.items()} == {"n1": ["ns-v1"]}
    assert again == {}
    [event] = rest.posts
    assert (event["reason"], event["action"], event["type"]) == (
        "PreemptionInProgress",
        "Preempt",
        "Warning",
    )
    assert "being evicted on n1 (1 victim)" in event["note"]
