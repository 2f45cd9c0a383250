"""ClusterState tells its usage history what each queue holds, from its own pod events."""

from __future__ import annotations

from scheduler_core.api.usage_history import (
    USAGE_HISTORY_ANNOTATION,
    UsageHistory,
    UsageRecord,
    accrual,
    encode_record,
)
from scheduler_core.cache.state import ClusterState
from tests.builders import Obj, node, pod, podgroup, queue

H = 100.0


class Clocks:
    def __init__(self) -> None:
        self.mono = 0.0
        self.server = 1_800_000_000.0


def measured_state() -> tuple[ClusterState, UsageHistory, Clocks]:
    clocks = Clocks()
    history = UsageHistory(H, monotonic=lambda: clocks.mono, server_now=lambda: clocks.server)
    state = ClusterState()
    state.usage_history = history
    for obj in (node("n1", cpu="8"), queue("q1"), podgroup("pg", queue="q1")):
        state.upsert(obj["kind"], obj)
    return state, history, clocks


def put(state: ClusterState, obj: Obj) -> None:
    state.upsert(obj["kind"], obj)


def cpu_usage(history: UsageHistory, queue_name: str) -> float:
    record = history.export(queue_name)
    return record.usage.get("cpu", 0.0) if record is not None else 0.0


def test_a_bound_pod_counts_from_when_the_cluster_shows_it_until_it_goes() -> None:
    state, history, clocks = measured_state()
    put(state, pod("p", cpu="2", group="pg"))  # pending: holds nothing
    clocks.mono = 10
    put(state, pod("p", cpu="2", group="pg", node_name="n1"))  # bound and running
    clocks.mono = 30
    state.delete("Pod", "ns/p")
    clocks.mono = 30
    assert cpu_usage(history, "q1") == accrual(20, H) * 2000


def test_a_pending_pod_never_counts() -> None:
    state, history, clocks = measured_state()
    put(state, pod("p", cpu="2", group="pg"))
    clocks.mono = 50
    assert cpu_usage(history, "q1") == 0.0


def test_a_fork_reads_the_history_but_never_feeds_it() -> None:
    state, history, clocks = measured_state()
    fork = state.fork()
    put(fork, pod("p", cpu="2", group="pg", node_name="n1"))
    clocks.mono = 50
    assert cpu_usage(history, "q1") == 0.0
    assert fork.snapshot().usage_history is history


def test_a_queue_takes_up_its_persisted_usage_once_on_first_sight() -> None:
    state, history, clocks = measured_state()
    record = UsageRecord(clocks.server, H, {"cpu": 500.0})
    annotated = queue("q2")
    annotated["metadata"]["annotations"] = {USAGE_HISTORY_ANNOTATION: encode_record(record)}
    put(state, annotated)
    assert cpu_usage(history, "q2") == 500.0
    put(state, annotated)  # an update (the leader's own write) is not added again
    assert cpu_usage(history, "q2") == 500.0
    assert state.usage_refusals == {}


def test_a_corrupt_annotation_is_refused_and_the_queue_starts_from_zero() -> None:
    state, history, _ = measured_state()
    corrupt = queue("q2")
    corrupt["metadata"]["annotations"] = {USAGE_HISTORY_ANNOTATION: '{"at": "now"}'}
    put(state, corrupt)
    assert cpu_usage(history, "q2") == 0.0
    assert "q2" in state.queues()  # the queue itself is fine
    assert "RFC 3339" in state.usage_refusals["q2"]


def test_the_leaders_write_of_a_history_moves_no_decision() -> None:
    state, _, clocks = measured_state()
    before = state.decision_version
    rewritten = queue("q1")
    record = UsageRecord(clocks.server, H, {"cpu": 1.0})
    rewritten["metadata"]["annotations"] = {USAGE_HISTORY_ANNOTATION: encode_record(record)}
    put(state, rewritten)
    assert state.decision_version == before
    put(state, queue("q1", weight=3))  # a real change still counts
    assert state.decision_version > before
