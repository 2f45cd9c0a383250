"""The explain flow step by step, on the debugging cases of the preemption guide: a
high-priority job that cannot preempt, a queue at its share, reclaim from an overused queue,
a closed queue, an invalid gang."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.extender.filter_verb import filter_pod
from scheduler_core.insight.explain import Explanation, explain_cached_pod, explain_podgroup
from scheduler_core.insight.lookup import NotFoundError
from tests.builders import GANG_CONF, accounting, node, pod, podgroup, priority_class, queue
from tests.insight.conftest import fingerprint

PCS = [priority_class("low", 1), priority_class("high", 100)]
FLOW = ["job-exists", "job-valid", "queue-open", "enqueue", "queue-share", "gang-room", "nodes"]


def member(name: str, group: str, cpu: str, node_name: str = "", high: bool = False) -> Any:
    return pod(
        name,
        group=group,
        cpu=cpu,
        node_name=node_name,
        priority=100 if high else 1,
        priority_class="high" if high else "low",
    )


def steps(answer: Explanation) -> dict[str, Any]:
    return {s.name: s for s in answer.steps}


def guide_case(gang_min: int) -> list[Any]:
    """Job-A (priority 100) pending in queue-1; Job-B (priority 1) of the same queue fills n1;
    n2 is tainted (it counts in the cluster's total, so the queue's share has room)."""
    return [
        node("n1", cpu="4"),
        node("n2", cpu="4", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
        queue("queue-1"),
        *PCS,
        podgroup("job-b", gang_min, queue="queue-1", priority_class="low"),
        member("b0", "job-b", "2", "n1"),
        member("b1", "job-b", "2", "n1"),
        podgroup("job-a", 1, queue="queue-1", priority_class="high", phase="Inqueue"),
        member("a0", "job-a", "2", high=True),
    ]


def test_high_priority_job_can_preempt_a_lower_priority_job_of_its_queue() -> None:
    acct, _ = accounting(guide_case(gang_min=1))
    answer = explain_cached_pod(acct, "ns", "a0")
    assert [s.name for s in answer.steps] == [*FLOW, "preempt", "reclaim"]
    by = steps(answer)
    assert [by[name].verdict for name in FLOW[:-1]] == ["pass"] * 3 + ["skip"] + ["pass"] * 2
    assert by["nodes"].verdict == "fail"
    assert by["nodes"].numbers["rejections"]["Insufficient cpu"] == 1
    assert by["nodes"].numbers["fitting"] == 0
    assert by["preempt"].verdict == "pass"
    assert answer.victims[0].node == "n1"
    assert answer.victims[0].mode == "preempt"
    assert len(answer.victims[0].victims) == 1  # one 2-CPU victim is enough
    assert answer.filter == "pass"
    assert "preempt could make room on n1" in answer.summary


def test_a_gang_at_its_minimum_protects_its_pods_from_preemption() -> None:
    """The guide's 'victim protected by gang': Job-B runs exactly minMember pods."""
    conf = GANG_CONF.format(actions="allocate, preempt", configurations="")
    acct, _ = accounting(guide_case(gang_min=2), conf)
    answer = explain_cached_pod(acct, "ns", "a0")
    by = steps(answer)
    assert by["preempt"].verdict == "fail"
    assert by["preempt"].detail == "no node has a valid set of same-queue victims"
    assert answer.victims == []


def test_a_queue_at_its_share_holds_the_pod_with_filters_own_reason() -> None:
    objs = [
        node("n1", cpu="8"),
        queue("a", capability={"cpu": "2"}),
        queue("b"),
        podgroup("run", 1, queue="a"),
        pod("r", group="run", cpu="2", node_name="n1"),
        podgroup("more", 1, queue="a", phase="Inqueue"),
        pod("m", group="more", cpu="1"),
    ]
    acct, _ = accounting(objs)
    answer = explain_cached_pod(acct, "ns", "m")
    by = steps(answer)
    failed = [s.name for s in answer.steps if s.verdict == "fail"]
    assert failed[0] == "queue-share"
    assert by["queue-share"].rule == "proportion.Allocatable"
    assert by["queue-share"].numbers["allocated"]["cpu"] == 2.0
    assert answer.code == "queue-overused"
    # the reason is the one the filter verb gives kube-scheduler for the same pod
    verb = filter_pod(acct, objs[-1], ["n1"])
    assert answer.reason == verb.failed["n1"].message
    assert answer.reason in by["queue-share"].detail


def queue_b_above_its_share() -> list[Any]:
    """Queue b holds the whole node; pod ns/f of queue a waits for its share."""
    return [
        node("n1", cpu="4"),
        queue("a"),
        queue("b"),
        *PCS,
        podgroup("greedy", 1, queue="b", priority_class="low"),
        *[member(f"g{i}", "greedy", "1", "n1") for i in range(4)],
        podgroup("fair", 1, queue="a", priority_class="low", phase="Inqueue"),
        member("f", "fair", "1"),
    ]


def test_reclaim_names_the_overused_queue_and_its_victims() -> None:
    objs = queue_b_above_its_share()
    acct, _ = accounting(objs)
    answer = explain_cached_pod(acct, "ns", "f")
    by = steps(answer)
    assert by["reclaim"].verdict == "pass"
    assert by["reclaim"].numbers["reclaimableQueues"] == ["b"]
    assert by["reclaim"].numbers["queuePreemptive"] is True
    assert [v.mode for v in answer.victims] == ["reclaim"]
    assert answer.victims[0].victims[0].startswith("ns/g")
    assert by["reclaim"].numbers["kubeSchedulerFoundNoNode"] is False
    assert "the reclaim loop acts once kube-scheduler has found no node" in by["reclaim"].detail


def test_reclaim_for_a_pod_kube_scheduler_found_no_node_for_says_nothing_of_waiting() -> None:
    objs = queue_b_above_its_share()
    objs[-1]["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    ]
    acct, _ = accounting(objs)
    by = steps(explain_cached_pod(acct, "ns", "f"))
    assert by["reclaim"].verdict == "pass"
    assert by["reclaim"].numbers["kubeSchedulerFoundNoNode"] is True
    assert "kube-scheduler" not in by["reclaim"].detail


def test_a_closed_queue_and_an_invalid_gang_fail_their_own_steps() -> None:
    objs = [
        node("n1"),
        queue("shut", state="Closed"),
        podgroup("x", 1, queue="shut", phase="Inqueue"),
        pod("x0", group="x", cpu="1"),
        queue("a"),
        podgroup("gang", 3, queue="a", phase="Inqueue"),
        pod("g0", group="gang", cpu="1"),
    ]
    acct, _ = accounting(objs)
    closed = explain_cached_pod(acct, "ns", "x0")
    assert steps(closed)["queue-open"].verdict == "fail"
    assert closed.code == "queue-closed"
    gang = explain_cached_pod(acct, "ns", "g0")
    assert steps(gang)["job-valid"].verdict == "fail"
    assert steps(gang)["job-valid"].numbers == {"validTaskNum": 1, "minAvailable": 3}
    assert gang.code == "gang-invalid"


def test_a_podgroup_is_explained_through_its_first_pending_pod() -> None:
    acct, _ = accounting(guide_case(gang_min=1))
    answer = explain_podgroup(acct, "ns", "job-a")
    assert answer.kind == "PodGroup"
    assert answer.pod == "ns/a0"
    running = explain_podgroup(acct, "ns", "job-b")
    assert running.filter == "n/a"
    assert "no pending pods" in running.summary


def test_unknown_pods_and_podgroups_are_not_found_with_a_sentence() -> None:
    acct, _ = accounting(guide_case(gang_min=1))
    with pytest.raises(NotFoundError, match="pod ns/ghost is not in the extender's cache"):
        explain_cached_pod(acct, "ns", "ghost")
    with pytest.raises(NotFoundError, match="PodGroup ns/ghost"):
        explain_podgroup(acct, "ns", "ghost")


def test_explaining_changes_nothing() -> None:
    acct, _ = accounting(guide_case(gang_min=1))
    before = fingerprint(acct)
    for name in ("a0", "b0"):
        explain_cached_pod(acct, "ns", name)
    assert fingerprint(acct) == before


def test_a_running_pod_is_not_pending() -> None:
    acct, _ = accounting(guide_case(gang_min=1))
    answer = explain_cached_pod(acct, "ns", "b0")
    assert answer.filter == "n/a"
    assert answer.summary == "pod ns/b0 is Running on node n1: not pending"


def test_capacity_plugin_names_its_own_rule() -> None:
    text = "actions: 'allocate'\ntiers:\n- plugins:\n  - name: gang\n  - name: capacity\n"
    objs = [
        node("n1", cpu="8"),
        queue("a", deserved={"cpu": "1"}, capability={"cpu": "1"}),
        podgroup("p", 1, queue="a", phase="Inqueue"),
        pod("p0", group="p", cpu="2"),
    ]
    acct, _ = accounting(objs, text)
    by = steps(explain_cached_pod(acct, "ns", "p0"))
    assert by["queue-share"].rule == "capacity.Allocatable"
    assert by["queue-share"].verdict == "fail"


def test_the_nodes_step_names_the_pod_level_predicates_in_kube_schedulers_words() -> None:
    host = "kubernetes.io/hostname"
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": host, "labelSelector": {"matchLabels": {"app": "x"}}}
            ]
        }
    }
    port = {"containerPort": 80, "hostPort": 80}
    objs = [
        node("n1", cpu="4", labels={host: "n1"}),
        node("n2", cpu="4", labels={host: "n2"}),
        node("n3", cpu="4", labels={host: "n3"}),
        queue("q"),
        pod("x", queue="q", node_name="n1", labels={"app": "x"}),
        pod("web", queue="q", node_name="n2", host_ports=[port]),
        pod("p", queue="q", affinity=anti, host_ports=[port]),
    ]
    acct, _ = accounting(objs)
    by = steps(explain_cached_pod(acct, "ns", "p"))
    assert by["nodes"].numbers["examples"] == ["n3"]
    assert by["nodes"].numbers["rejections"] == {
        "node(s) didn't match pod anti-affinity rules": 1,
        "node(s) didn't have free ports for the requested pod ports": 1,
    }
