"""ClusterState applies events one at a time and always agrees with a fresh build."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import scheduler_core.plugins  # noqa: F401 - registers proportion
from scheduler_core.api.resource import Resource
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.types import TaskStatus
from scheduler_core.api.usage import JobUsage, job_usage
from scheduler_core.cache.builder import build_snapshot
from scheduler_core.cache.objects import collect
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import load_configuration
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.statement import Statement
from tests.builders import node, pod, podgroup, queue

PROPORTION = load_configuration("tiers:\n- plugins: [{name: proportion}]\n")


def key_of(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


def summary(snap: ClusterSnapshot) -> dict[str, Any]:
    """What sessions see: jobs with their tasks and statuses, node usage."""
    return {
        "jobs": {
            uid: (
                j.queue,
                j.min_available,
                sorted((t.uid, int(t.status)) for t in j.tasks.values()),
                j.allocated.milli_cpu,
            )
            for uid, j in snap.jobs.items()
        },
        "nodes": {
            n: (v.idle.milli_cpu, v.used.milli_cpu, sorted(v.tasks)) for n, v in snap.nodes.items()
        },
        "queues": sorted(snap.queues),
    }


def test_pods_before_their_node_and_podgroup_are_placed_when_those_arrive() -> None:
    state = ClusterState()
    state.upsert("Pod", pod("a", group="g", node_name="n1"))
    assert summary(state.snapshot())["jobs"] == {}  # no PodGroup yet: not a job
    state.upsert("Queue", queue("q"))
    state.upsert("PodGroup", podgroup("g", queue="q"))
    state.upsert("Node", node("n1"))
    snap = state.snapshot()
    assert list(snap.jobs["ns/g"].tasks) == ["ns-a"]
    assert snap.nodes["n1"].used.milli_cpu == 1000


def test_update_and_delete_touch_only_the_pod() -> None:
    state = ClusterState()
    for obj in (node("n1"), queue("q"), podgroup("g", 2, queue="q")):
        state.upsert(obj["kind"], obj)
    state.upsert("Pod", pod("a", group="g"))
    assert state.snapshot().jobs["ns/g"].tasks["ns-a"].status == TaskStatus.PENDING
    v = state.version
    state.upsert("Pod", pod("a", group="g", node_name="n1"))  # bound and running
    assert state.version == v + 1
    snap = state.snapshot()
    assert snap.jobs["ns/g"].tasks["ns-a"].status == TaskStatus.RUNNING
    assert snap.nodes["n1"].idle.milli_cpu == 3000
    state.delete("Pod", "ns/a")
    snap = state.snapshot()
    assert snap.jobs["ns/g"].tasks == {} and snap.nodes["n1"].idle.milli_cpu == 4000


def test_deleting_a_podgroup_keeps_its_pods_on_their_nodes() -> None:
    state = ClusterState()
    for obj in (
        node("n1"),
        queue("q"),
        podgroup("g", queue="q"),
        pod("a", group="g", node_name="n1"),
    ):
        state.upsert(obj["kind"], obj)
    state.delete("PodGroup", "ns/g")
    snap = state.snapshot()
    assert "ns/g" not in snap.jobs and snap.nodes["n1"].used.milli_cpu == 1000
    state.upsert("PodGroup", podgroup("g", queue="q"))
    assert list(state.snapshot().jobs["ns/g"].tasks) == ["ns-a"]


def test_node_replaced_keeps_its_tasks_and_a_deleted_node_gives_them_back_later() -> None:
    state = ClusterState()
    for obj in (node("n1"), pod("a", node_name="n1")):
        state.upsert(obj["kind"], obj)
    state.upsert("Node", node("n1", cpu="8"))
    assert state.snapshot().nodes["n1"].idle.milli_cpu == 7000
    state.delete("Node", "n1")
    assert "n1" not in state.snapshot().nodes
    state.upsert("Node", node("n1"))
    assert state.snapshot().nodes["n1"].used.milli_cpu == 1000


def test_priority_class_sets_the_job_priority_whenever_it_arrives() -> None:
    state = ClusterState()
    pg = podgroup("g", queue="default")
    pg["spec"]["priorityClassName"] = "high"
    state.upsert("PodGroup", pg)
    assert state.snapshot().jobs["ns/g"].priority == 0
    state.upsert(
        "PriorityClass", {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    )
    assert state.snapshot().jobs["ns/g"].priority == 1000


def test_an_unusable_object_is_rejected_and_changes_nothing() -> None:
    state = ClusterState()
    state.upsert("Node", node("n1"))
    before = summary(state.snapshot())
    bad = pod("a", node_name="n1")
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "many"
    state.upsert("Pod", bad)
    assert state.rejected["Pod"] == 1
    assert summary(state.snapshot()) == before


def test_snapshot_is_private_to_the_session() -> None:
    state = ClusterState()
    for obj in (node("n1"), pod("a", node_name="n1")):
        state.upsert(obj["kind"], obj)
    snap = state.snapshot()
    snap.nodes["n1"].tasks["ns-a"].status = TaskStatus.RELEASING
    assert state.snapshot().nodes["n1"].tasks["ns-a"].status == TaskStatus.RUNNING


def test_whatif_session_decisions_never_reach_the_cache() -> None:
    state = ClusterState()
    for obj in (
        node("n1"),
        node("n2"),
        queue("q"),
        podgroup("g", queue="q"),
        pod("a", group="g", node_name="n1"),
        pod("b", group="g", node_name="n2"),
    ):
        state.upsert(obj["kind"], obj)
    before = summary(state.snapshot())
    snap = state.whatif_snapshot(["n1"])
    assert snap.nodes["n1"] is not state.snapshot().nodes["n1"]
    ssn = open_session(snap, load_configuration(""), clone=False)
    stmt = Statement(ssn)
    victim = ssn.jobs["ns/g"].tasks["ns-a"]
    stmt.evict(victim, "preempt")
    stmt.commit()
    assert ssn.nodes["n1"].releasing.milli_cpu == 1000
    assert summary(state.snapshot()) == before


def test_a_fork_shares_pods_and_its_sessions_change_only_their_own_copies() -> None:
    state = ClusterState()
    for obj in (
        node("n1"),
        queue("q"),
        podgroup("g", queue="q"),
        pod("a", group="g", node_name="n1"),
    ):
        state.upsert(obj["kind"], obj)
    before = summary(state.snapshot())
    live = state.task("ns/a")
    fork = state.fork()
    assert fork.task("ns/a") is live  # shared, not cloned
    fork.upsert("Pod", pod("b", group="g", node_name="n1"))
    fork.delete("Pod", "ns/a")
    assert summary(state.snapshot()) == before

    fork = state.fork()
    ssn = open_session(
        fork.shared_snapshot(), load_configuration(""), clone=False, shared_tasks=True
    )
    stmt = Statement(ssn)
    stmt.evict(ssn.nodes["n1"].tasks["ns-a"], "preempt")
    mine = ssn.jobs["ns/g"].tasks["ns-a"]
    assert mine is not live and mine.status == TaskStatus.RELEASING
    assert ssn.nodes["n1"].tasks["ns-a"] is mine
    stmt.discard()
    assert mine.status == TaskStatus.RUNNING
    assert live is not None and live.status == TaskStatus.RUNNING
    assert summary(state.snapshot()) == before


# --- property: incremental == from scratch ----------------------------------------------

NAMES = ["a", "b", "c", "d"]
EVENT = st.one_of(
    st.tuples(
        st.just("pod"),
        st.sampled_from(NAMES),
        st.sampled_from([None, "g1", "g2"]),
        st.sampled_from(["", "n1", "n2"]),
        st.sampled_from(["1", "2"]),
        st.booleans(),  # kube-scheduler found it unschedulable
    ),
    st.tuples(st.just("del-pod"), st.sampled_from(NAMES)),
    st.tuples(st.just("node"), st.sampled_from(["n1", "n2"]), st.sampled_from(["4", "8"])),
    st.tuples(st.just("del-node"), st.sampled_from(["n1", "n2"])),
    st.tuples(
        st.just("pg"),
        st.sampled_from(["g1", "g2"]),
        st.sampled_from(["q1", "q2"]),
        st.integers(1, 3),
        st.sampled_from(["Pending", "Inqueue", "Running"]),
        st.sampled_from([None, "1", "3"]),
    ),
    st.tuples(st.just("del-pg"), st.sampled_from(["g1", "g2"])),
    st.tuples(st.just("queue"), st.sampled_from(["q1", "q2"])),
    st.tuples(st.just("del-queue"), st.sampled_from(["q1", "q2"])),
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(EVENT, max_size=25))
def test_incremental_state_equals_a_fresh_build_of_the_final_objects(
    events: list[tuple[Any, ...]],
) -> None:
    state = ClusterState()
    live: dict[tuple[str, str], dict[str, Any]] = {}
    for event in events:
        op = event[0]
        if op == "pod":
            obj = pod(
                event[1], group=event[2], node_name=event[3], cpu=event[4], unschedulable=event[5]
            )
        elif op == "node":
            obj = node(event[1], event[2])
        elif op == "pg":
            obj = podgroup(event[1], event[3], queue=event[2])
            obj["status"] = {"phase": event[4]}  # admitted / running jobs reserve (inqueue)
            if event[5] is not None:
                obj["spec"]["minResources"] = {"cpu": event[5]}
        elif op == "queue":
            obj = queue(event[1])
        else:
            kind = {
                "del-pod": "Pod",
                "del-node": "Node",
                "del-pg": "PodGroup",
                "del-queue": "Queue",
            }[op]
            key = f"ns/{event[1]}" if kind in ("Pod", "PodGroup") else event[1]
            state.delete(kind, key)
            live.pop((kind, key), None)
            continue
        state.upsert(obj["kind"], obj)
        live[(obj["kind"], key_of(obj))] = obj
    fresh = build_snapshot(collect(live.values()))
    assert summary(state.snapshot()) == summary(fresh)
    kept = state.shared_snapshot().total_allocatable
    assert kept is not None
    assert kept.milli_cpu == sum(n.allocatable.milli_cpu for n in fresh.nodes.values())
    assert_queue_sums_match(state)
    waiting = [t for job in fresh.jobs.values() for t in job.tasks.values()]
    unschedulable = any(t.unschedulable and t.status == TaskStatus.PENDING for t in waiting)
    with state.locked():
        assert state.any_unschedulable() == unschedulable
    assert state.fork().any_unschedulable() == unschedulable


def amounts(r: Resource) -> dict[str, float]:
    return {k: q for k, q in r.to_quantities().items() if q}


def assert_queue_sums_match(state: ClusterState) -> None:
    """The cache's running per-queue sums equal summing the jobs now, and a proportion
    session built from them has exactly the attributes of one that walks the jobs."""
    with state.locked():
        shared = state.shared_snapshot()
        assert shared.queue_usage is not None
        expected: dict[str, JobUsage] = {}
        for job in shared.jobs.values():
            job_usage(job).add_to(expected.setdefault(job.queue, JobUsage.empty()))
        assert {
            q: [amounts(r) for r in (u.allocated, u.request, u.inqueue, u.elastic)]
            for q, u in shared.queue_usage.items()
        } == {
            q: [amounts(r) for r in (u.allocated, u.request, u.inqueue, u.elastic)]
            for q, u in expected.items()
        }
        fast = open_session(shared, PROPORTION, clone=False)
        walked = state.shared_snapshot()
        walked.queue_usage = None
        slow = open_session(walked, PROPORTION, clone=False)
    for name, attr in slow.plugins["proportion"].queue_opts.items():  # type: ignore[attr-defined]
        other = fast.plugins["proportion"].queue_opts[name]  # type: ignore[attr-defined]
        for field in ("deserved", "allocated", "request", "inqueue", "elastic"):
            assert amounts(getattr(attr, field)) == amounts(getattr(other, field)), (name, field)
        assert attr.share == other.share
    assert list(slow.plugins["proportion"].queue_opts) == list(  # type: ignore[attr-defined]
        fast.plugins["proportion"].queue_opts  # type: ignore[attr-defined]
    )
