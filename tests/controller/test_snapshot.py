"""The loop's snapshot shares task objects with the cache: deciding on it must change none of
them and decide what a deep copy would. And the loop copies nothing until a waiting pod has
failed kube-scheduler's Filter."""

from __future__ import annotations

from scheduler_core.cache.objects import collect
from scheduler_core.cache.state import ClusterState
from scheduler_core.controller.decision import decide
from scheduler_core.controller.snapshot import anything_unschedulable, sharing_tasks
from tests.builders import node, pod, podgroup, snapshot
from tests.controller.test_decision import LIVE, WITH_PREEMPT, filled_by_q1, one_queue_low_then_high


def test_deciding_on_the_shared_copy_changes_no_task_and_decides_as_a_deep_copy() -> None:
    for objs, conf in ((filled_by_q1(), LIVE), (one_queue_low_then_high(), WITH_PREEMPT)):
        source = snapshot(objs)
        tasks = {t.uid: t for job in source.jobs.values() for t in job.tasks.values()}
        seen = {uid: (t.status, t.node_name) for uid, t in tasks.items()}
        shared = decide(sharing_tasks(source), conf)
        assert shared.evictions
        assert all(e.preemptor_node for e in shared.evictions)
        assert {uid: (t.status, t.node_name) for uid, t in tasks.items()} == seen
        assert all(source.jobs[t.job].tasks[uid] is t for uid, t in tasks.items())
        deep = decide(snapshot(objs), conf)
        assert [(e.victim.key, e.node, e.action) for e in shared.evictions] == [
            (e.victim.key, e.node, e.action) for e in deep.evictions
        ]


def test_the_shared_copy_keeps_a_podgroups_minimum_runtime() -> None:
    objs = filled_by_q1(q2_pods=1)
    group = podgroup("g", 1, queue="q1")
    group["metadata"]["annotations"] = {"kube-queue-extender.io/min-runtime": "1000000h"}
    objs.append(group)
    for obj in objs:
        if obj["kind"] == "Pod" and obj["metadata"]["name"].startswith("a"):
            obj["metadata"]["annotations"]["scheduling.k8s.io/group-name"] = "g"
    assert decide(sharing_tasks(snapshot(objs)), LIVE).evictions == []


def test_a_cycle_runs_only_once_kube_scheduler_found_a_waiting_pod_unschedulable() -> None:
    state = ClusterState()
    state.apply_objects(collect([node("n1", cpu="1"), pod("busy", cpu="1", node_name="n1")]))
    assert not anything_unschedulable(state)
    state.upsert("Pod", pod("new", cpu="1"))  # kube-scheduler has not tried it yet
    assert not anything_unschedulable(state)
    gated = pod("gated", cpu="1", spec={"schedulingGates": [{"name": "wait"}]})
    gated["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
    ]
    state.upsert("Pod", gated)
    assert not anything_unschedulable(state)
    state.upsert("Pod", pod("new", cpu="1", unschedulable=True))
    assert anything_unschedulable(state)
    state.upsert("Pod", pod("new", cpu="1", node_name="n1"))  # bound after all: no longer waits
    assert not anything_unschedulable(state)
    state.upsert("Pod", pod("member", cpu="1", group="g", unschedulable=True))
    assert not anything_unschedulable(state)  # its PodGroup has not arrived: no job's yet
    state.upsert("PodGroup", podgroup("g", 1))
    assert anything_unschedulable(state)
    state.delete("Pod", "ns/member")
    assert not anything_unschedulable(state)
