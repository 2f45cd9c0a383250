"""explain says, from any replica, what the reclaim loop's ``ReclaimCannotHelp`` event says:
what is missing for a pod no eviction could place; a pod an eviction would help gets the
preempt and reclaim steps instead."""

from __future__ import annotations

from scheduler_core.controller.decision import decide
from scheduler_core.insight.explain import explain_cached_pod
from tests.builders import accounting, node, pod, queue, snapshot
from tests.controller.reclaim_world import reclaim_conf
from tests.insight.test_explain import steps


def cluster(selector: dict[str, str] | None) -> list[dict[str, object]]:
    return [
        node("n0", cpu="2"),
        node("n1", cpu="2"),
        queue("q1"),
        queue("q2"),
        *[pod(f"a{i}", queue="q1", node_name=f"n{i // 2}") for i in range(4)],
        pod("b0", queue="q2", node_selector=selector, unschedulable=True),
    ]


def test_explain_says_what_the_loop_event_says_and_skips_the_eviction_steps() -> None:
    objs = cluster({"disk": "ssd"})
    acct, _ = accounting(objs)
    answer = explain_cached_pod(acct, "ns", "b0")
    by = steps(answer)
    step = by["eviction-helps"]
    assert step.verdict == "fail" and step.rule == "ReclaimCannotHelp"
    assert step.numbers["kind"] == "placement"
    [(_, verdict)] = decide(snapshot(objs), reclaim_conf()).cannot_help.values()
    assert step.detail == verdict.note
    assert by["preempt"].verdict == "skip" and by["reclaim"].verdict == "skip"
    assert by["reclaim"].detail == verdict.note
    assert answer.summary.endswith(verdict.note)


def test_a_pod_an_eviction_would_help_has_no_such_step() -> None:
    acct, _ = accounting(cluster(None))
    by = steps(explain_cached_pod(acct, "ns", "b0"))
    assert "eviction-helps" not in by
    assert by["reclaim"].verdict == "pass"
