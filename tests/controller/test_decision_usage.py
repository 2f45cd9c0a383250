"""The reclaim loop's decision with usage history on: the eviction's rule says when past
usage moved the victim queue's deserved share, and a cycle is never skipped as settled."""

from __future__ import annotations

from scheduler_core.api.resource import Resource
from scheduler_core.api.usage_history import UsageHistory
from scheduler_core.controller.decision import decide, live_configuration
from tests.builders import HELM_CONF, Obj, configuration, node, pod, queue, snapshot

WEEK = 7 * 86400.0
USAGE_CONF = HELM_CONF.replace(
    "  - name: proportion\n",
    "  - name: usagehistory\n    arguments:\n      usage.halfLife: 168h\n  - name: proportion\n",
)
LIVE = live_configuration(configuration(USAGE_CONF, "enqueue, allocate, reclaim"))
PLAIN = live_configuration(configuration(HELM_CONF, "enqueue, allocate, reclaim"))


def filled_by_q1() -> list[Obj]:
    """Four 2-cpu nodes full of q1's pods; q2 (equal weight) submits as many."""
    objs: list[Obj] = [node(f"n{i}", cpu="2", memory="8Gi") for i in range(4)]
    objs += [queue("q1"), queue("q2")]
    objs += [
        pod(f"a{i}", queue="q1", cpu="1", node_name=f"n{i // 2}", started="2024-01-01T00:00:00Z")
        for i in range(8)
    ]
    objs += [pod(f"b{i}", queue="q2", cpu="1") for i in range(8)]
    return objs


def q1_held_the_cluster_for_a_week() -> UsageHistory:
    now = [0.0]
    history = UsageHistory(WEEK, monotonic=lambda: now[0])
    history.held("q1", Resource(8000, 0))
    now[0] = WEEK
    return history


def test_history_takes_more_from_the_queue_that_used_more_and_says_so() -> None:
    plain = decide(snapshot(filled_by_q1()), PLAIN)
    snap = snapshot(filled_by_q1())
    snap.usage_history = q1_held_the_cluster_for_a_week()
    adjusted = decide(snap, LIVE)
    assert len(adjusted.evictions) > len(plain.evictions) == 4
    assert {e.victim_queue for e in adjusted.evictions} == {"q1"}
    assert adjusted.evictions[0].rule == (
        "queue q1 is overused (allocated cpu 8 > deserved cpu 2 (weighted cpu 4, reduced by "
        "its usage over the last 7d (half-life))); reclaimed for ns/b0 of queue q2"
    )
    assert adjusted.time_sensitive and not plain.time_sensitive
