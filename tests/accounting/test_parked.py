"""Pods filter rejected are remembered and offered back once their queue would take them."""

from __future__ import annotations

from scheduler_core.extender.filter_verb import filter_pod, parked_pods_to_retry
from tests.builders import accounting, node, pod, queue


def test_a_rejected_pod_is_retried_once_its_queue_capability_grows_and_not_before() -> None:
    first, second = pod("p1", queue="q"), pod("p2", queue="q")
    acct, clock = accounting([node("n1"), queue("q", capability={"cpu": "1"}), first, second])
    assert filter_pod(acct, first, ["n1"]).passed == ["n1"]
    assert filter_pod(acct, second, ["n1"]).passed == []
    assert [p.key for p in acct.parked] == ["ns/p2"]
    assert parked_pods_to_retry(acct, min_interval=5) == []
    acct.state.upsert("Queue", queue("q", capability={"cpu": "2"}))
    assert parked_pods_to_retry(acct, min_interval=5) == ["ns/p2"]
    assert parked_pods_to_retry(acct, min_interval=5) == [], "one nudge per interval"
    clock.now += 5
    assert parked_pods_to_retry(acct, min_interval=5) == ["ns/p2"]
    assert filter_pod(acct, second, ["n1"]).passed == ["n1"]
    assert len(acct.parked) == 0


def test_a_parked_pod_the_cache_shows_bound_or_deleted_is_forgotten() -> None:
    waiting = pod("p", queue="closed")
    closed = queue("closed", state="Closed")
    acct, _ = accounting([node("n1"), closed, waiting])
    filter_pod(acct, waiting, ["n1"])
    assert len(acct.parked) == 1
    acct.state.delete("Pod", "ns/p")
    assert parked_pods_to_retry(acct, min_interval=0) == []
    assert len(acct.parked) == 0
