"""The loop's snapshot shares task objects with the cache: deciding on it must change none of
them and decide what a deep copy would."""

from __future__ import annotations

from scheduler_core.controller.decision import decide
from scheduler_core.controller.snapshot import sharing_tasks
from tests.builders import podgroup, snapshot
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
