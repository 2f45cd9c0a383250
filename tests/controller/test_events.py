"""The event recorder: client-go's series deduplication, one write per series per interval,
a rate limit, leader-only writes unless told otherwise, and failures that are counted
instead of raised."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from scheduler_core.controller.events import (
    MIN_WRITE_INTERVAL,
    NORMAL,
    SERIES_WINDOW,
    WARNING,
    EventRecorder,
    ObjectRef,
    TokenBucket,
)
from scheduler_core.controller.rest import ApiError

POD = ObjectRef(kind="Pod", name="p1", namespace="team", uid="u1")


class FakeRest:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self.fail_with: ApiError | None = None
        self.lock = threading.Lock()

    def _call(self, verb: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            if self.fail_with is not None:
                raise self.fail_with
            self.calls.append((verb, path, body))
            return body

    def post(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        return self._call("create", path, body)

    def merge_patch(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        return self._call("patch", path, body)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def recorder(
    rest: FakeRest, *, leader: bool = True, clock: Clock | None = None, **kwargs: Any
) -> tuple[EventRecorder, CollectorRegistry]:
    registry = CollectorRegistry()
    r = EventRecorder(
        rest,  # type: ignore[arg-type]
        "replica-1",
        lambda: leader,
        registry=registry,
        clock=clock or Clock(),
        **kwargs,
    )
    return r, registry


def count(registry: CollectorRegistry, result: str) -> float:
    return registry.get_sample_value("queue_extender_events_total", {"result": result}) or 0.0


def test_a_new_event_is_created_with_the_projects_reporting_controller() -> None:
    rest = FakeRest()
    r, _ = recorder(rest)
    r.start()
    r.record(POD, WARNING, "NotReclaimable", "queue q2 is not reclaimable", action="Preempt")
    assert r.flush()
    r.stop()
    [(verb, path, body)] = rest.calls
    assert verb == "create"
    assert path == "/apis/events.k8s.io/v1/namespaces/team/events"
    assert body["reportingController"] == "kube-queue-extender"
    assert body["reportingInstance"] == "replica-1"
    assert body["regarding"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "p1",
        "namespace": "team",
        "uid": "u1",
    }
    assert (body["type"], body["reason"], body["action"]) == (WARNING, "NotReclaimable", "Preempt")
    assert body["note"] == "queue q2 is not reclaimable"
    assert "series" not in body


def test_the_same_event_again_becomes_a_series_count_on_the_first() -> None:
    rest = FakeRest()
    clock = Clock()
    r, registry = recorder(rest, clock=clock)
    r.start()
    r.record(POD, NORMAL, "Inqueue", "admitted")
    assert r.flush()
    clock.now += MIN_WRITE_INTERVAL
    r.record(POD, NORMAL, "Inqueue", "admitted")
    assert r.flush()
    clock.now += MIN_WRITE_INTERVAL
    r.record(POD, NORMAL, "Inqueue", "admitted")
    assert r.flush()
    r.stop()
    verbs = [verb for verb, _, _ in rest.calls]
    assert verbs == ["create", "patch", "patch"]
    name = rest.calls[0][2]["metadata"]["name"]
    assert rest.calls[2][1].endswith(f"/namespaces/team/events/{name}")
    assert rest.calls[1][2]["series"]["count"] == 2
    assert rest.calls[2][2]["series"]["count"] == 3
    assert count(registry, "series") == 2


def test_a_burst_of_one_event_between_two_writes_costs_one_write() -> None:
    rest = FakeRest()
    r, registry = recorder(rest)
    for _ in range(500):  # the worker is not running yet: all of these wait together
        r.record(POD, WARNING, "Unschedulable", "queue q1 is full")
    r.start()
    assert r.flush()
    r.stop()
    [(verb, _, body)] = rest.calls
    assert verb == "create"
    assert body["series"]["count"] == 500
    assert count(registry, "coalesced") == 499


def test_a_different_reason_or_object_or_action_is_a_new_event() -> None:
    rest = FakeRest()
    r, _ = recorder(rest)
    r.start()
    r.record(POD, WARNING, "Unschedulable", "queue q1 is full")
    r.record(POD, WARNING, "GangProtected", "queue q1 is full")
    r.record(POD, WARNING, "GangProtected", "queue q1 is full", action="Preempt")
    r.record(ObjectRef("Pod", "p2", "team"), WARNING, "Unschedulable", "queue q1 is full")
    assert r.flush()
    r.stop()
    assert [verb for verb, _, _ in rest.calls] == ["create"] * 4


def test_the_same_reason_with_another_note_grows_the_first_events_series() -> None:
    rest = FakeRest()
    clock = Clock()
    r, _ = recorder(rest, clock=clock)
    r.start()
    r.record(POD, WARNING, "NotReclaimable", "victims in q2 (not reclaimable)", action="Preempt")
    assert r.flush()
    clock.now += MIN_WRITE_INTERVAL
    r.record(POD, WARNING, "NotReclaimable", "victims in q3 (not reclaimable)", action="Preempt")
    assert r.flush()
    r.stop()
    assert [verb for verb, _, _ in rest.calls] == ["create", "patch"]
    assert rest.calls[0][2]["note"] == "victims in q2 (not reclaimable)"
    assert rest.calls[1][2] == {"series": {"count": 2, "lastObservedTime": ANY_TIME}}


class _AnyTime:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.endswith("Z")


ANY_TIME: Any = _AnyTime()


@pytest.mark.parametrize("repeats", [1, 2, 30])
def test_repeats_within_the_interval_are_one_write_after_it_carrying_their_count(
    repeats: int,
) -> None:
    rest = FakeRest()
    clock = Clock()
    r, registry = recorder(rest, clock=clock)
    r.start()
    r.record(POD, WARNING, "NotReclaimable", "q2", action="Preempt")
    assert r.flush()
    for _ in range(repeats):
        clock.now += 0.5
        r.record(POD, WARNING, "NotReclaimable", "q2", action="Preempt")
    assert not r.flush(timeout=0.4), "a repeat waits out the interval"
    assert [verb for verb, _, _ in rest.calls] == ["create"]
    clock.now += MIN_WRITE_INTERVAL
    assert r.flush()
    r.stop()
    assert [verb for verb, _, _ in rest.calls] == ["create", "patch"]
    assert rest.calls[1][2]["series"]["count"] == 1 + repeats
    assert count(registry, "deferred") == 1
    assert count(registry, "coalesced") == repeats - 1


def test_the_same_event_after_ten_minutes_is_a_new_event() -> None:
    rest = FakeRest()
    clock = Clock()
    r, _ = recorder(rest, clock=clock)
    r.start()
    r.record(POD, NORMAL, "Running", "3 of 3 running")
    assert r.flush()
    clock.now += SERIES_WINDOW + 1
    r.record(POD, NORMAL, "Running", "3 of 3 running")
    assert r.flush()
    r.stop()
    assert [verb for verb, _, _ in rest.calls] == ["create", "create"]


def test_a_follower_writes_nothing() -> None:
    rest = FakeRest()
    r, registry = recorder(rest, leader=False)
    r.start()
    r.record(POD, NORMAL, "Inqueue", "admitted")
    assert r.flush()
    r.stop()
    assert rest.calls == []
    assert count(registry, "not_leader") == 1


def test_a_follower_writes_what_any_replica_must_tell() -> None:
    rest = FakeRest()
    r, registry = recorder(rest, leader=False)
    r.start()
    r.record(POD, WARNING, "NotReclaimable", "q2", action="Preempt", leader_only=False)
    assert r.flush()
    r.stop()
    assert [(verb, body["reason"]) for verb, _, body in rest.calls] == [
        ("create", "NotReclaimable")
    ]
    assert count(registry, "not_leader") == 0


def test_a_failed_write_is_counted_not_raised_and_the_next_one_retries() -> None:
    rest = FakeRest()
    rest.fail_with = ApiError(500, "Internal Server Error", "etcd timeout")
    r, registry = recorder(rest)
    r.start()
    r.record(POD, NORMAL, "Inqueue", "admitted")
    assert r.flush()
    assert count(registry, "failed") == 1
    rest.fail_with = None
    r.record(POD, NORMAL, "Inqueue", "admitted")
    assert r.flush()
    r.stop()
    assert [verb for verb, _, _ in rest.calls] == ["create"]


def test_an_expired_event_is_created_again_instead_of_patched() -> None:
    rest = FakeRest()
    clock = Clock()
    r, _ = recorder(rest, clock=clock)
    r.start()
    r.record(POD, NORMAL, "Inqueue", "admitted")
    assert r.flush()
    rest.fail_with = ApiError(404, "Not Found")
    original = rest.merge_patch

    def patch_then_recover(path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        try:
            return original(path, body, resource)
        finally:
            rest.fail_with = None

    rest.merge_patch = patch_then_recover  # type: ignore[method-assign]
    clock.now += MIN_WRITE_INTERVAL
    r.record(POD, NORMAL, "Inqueue", "admitted")
    assert r.flush()
    r.stop()
    assert [verb for verb, _, _ in rest.calls] == ["create", "create"]
    assert rest.calls[1][2]["series"]["count"] == 2


def test_a_full_queue_drops_the_event_and_counts_it() -> None:
    rest = FakeRest()
    r, registry = recorder(rest, queue_size=1)
    r.record(POD, NORMAL, "A", "one")
    r.record(POD, NORMAL, "B", "two")
    assert count(registry, "dropped") == 1


def test_writes_wait_for_the_rate_limit() -> None:
    rest = FakeRest()
    clock = Clock()
    bucket = TokenBucket(qps=1.0, burst=2, clock=clock)
    r, _ = recorder(rest, clock=clock, bucket=bucket)
    for i in range(5):
        r.record(POD, NORMAL, f"R{i}", "distinct")
    r.start()
    assert not r.flush(timeout=0.5)  # the clock stands still: no token after the burst
    assert len(rest.calls) == 2
    clock.now += 1.0  # one second: one more token
    deadline = time.monotonic() + 10
    while len(rest.calls) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not r.flush(timeout=0.3)
    r.stop()
    assert len(rest.calls) == 3


def test_token_bucket_refills_at_its_rate_up_to_its_burst() -> None:
    clock = Clock()
    bucket = TokenBucket(qps=2.0, burst=3, clock=clock)
    assert [bucket.delay() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.delay() == pytest.approx(0.5)
    clock.now += 100
    assert [bucket.delay() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.delay() > 0


def test_a_long_note_is_cut_to_what_the_api_server_accepts() -> None:
    rest = FakeRest()
    r, _ = recorder(rest)
    r.start()
    r.record(POD, NORMAL, "Long", "x" * 5000)
    assert r.flush()
    r.stop()
    assert len(rest.calls[0][2]["note"]) == 1024
