"""Each queue's usage kept as its jobs change, and the history it feeds: one job's
contribution replaced per event, and a fork that reads the history without feeding it."""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.job import JobInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.usage_history import UsageHistory
from scheduler_core.cache.queue_sums import QueueSums
from scheduler_core.cache.state import ClusterState
from tests.builders import node, pod, podgroup, queue, task


def running_job(queue: str, *cpus: float) -> JobInfo:
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue=queue)
    for i, cpu in enumerate(cpus):
        job.add_task_info(task(f"p{i}", cpu, job="ns/j"))
    return job


def allocated_cpu(sums: QueueSums, queue: str) -> float:
    usage = sums.queue_usage.get(queue)
    return usage.allocated.milli_cpu if usage is not None else 0.0


def test_a_jobs_contribution_is_replaced_not_added_again() -> None:
    sums = QueueSums()
    sums.touch("ns/j", running_job("q1", 1000))
    sums.touch("ns/j", running_job("q1", 1000, 500))
    assert allocated_cpu(sums, "q1") == 1500
    assert sums.queue_jobs["q1"] == 1


def test_a_job_that_changes_queue_leaves_nothing_behind() -> None:
    sums = QueueSums()
    sums.touch("ns/j", running_job("q1", 1000))
    sums.touch("ns/j", running_job("q2", 1000))
    assert "q1" not in sums.queue_usage and "q1" not in sums.queue_jobs
    assert allocated_cpu(sums, "q2") == 1000


def test_a_gone_job_takes_its_queues_sum_with_it() -> None:
    sums = QueueSums()
    sums.touch("ns/j", running_job("q1", 1000))
    sums.touch("ns/j", None)
    assert sums.queue_usage == {} and sums.job_usage == {} and not sums.queue_jobs


def test_a_fork_reads_the_history_and_never_feeds_it() -> None:
    clock = [0.0]
    history = UsageHistory(100.0, monotonic=lambda: clock[0], server_now=lambda: 1.8e9)
    untouched = UsageHistory(100.0, monotonic=lambda: clock[0], server_now=lambda: 1.8e9)
    live = QueueSums()
    live.usage_history = history
    live.touch("ns/j", running_job("q1", 1000))
    untouched.held("q1", running_job("q1", 1000).allocated)
    fork = live.fork()
    clock[0] = 50.0
    fork.touch("ns/j", running_job("q1", 8000))
    clock[0] = 100.0
    assert fork.usage_history is history
    assert allocated_cpu(live, "q1") == 1000  # the fork's sums are its own
    fed, expected = history.export("q1"), untouched.export("q1")
    assert fed is not None and expected is not None
    assert fed.usage == expected.usage


def test_a_history_set_late_is_told_what_a_queue_holds_at_the_next_change_of_it() -> None:
    clock = [0.0]
    history = UsageHistory(100.0, monotonic=lambda: clock[0], server_now=lambda: 1.8e9)
    sums = QueueSums()
    sums.touch("ns/j", running_job("q1", 1000))
    sums.usage_history = history
    waiting = JobInfo(uid="ns/k", name="k", namespace="ns", queue="q1")
    sums.touch("ns/k", waiting)  # moves nothing q1 holds, yet the history hears of it
    sums.touch("ns/k", waiting)
    clock[0] = 100.0
    record = history.export("q1")
    assert record is not None and record.usage["cpu"] > 0


# --- property: the shortcuts give the full path's state ------------------------------------

POD_NAMES = ["a", "b", "c"]
POD_EVENT = st.one_of(
    st.tuples(
        st.just("pod"),
        st.sampled_from(POD_NAMES),
        st.sampled_from(["", "q1", "q2"]),  # a lone pod's queue annotation
        st.sampled_from([None, "g1"]),
        st.sampled_from(["1", "2", "500m"]),
        st.sampled_from(["", "n1", "n2"]),
    ),
    st.tuples(st.just("bind"), st.sampled_from(POD_NAMES), st.sampled_from(["n1", "n2"])),
    st.tuples(st.just("finish"), st.sampled_from(POD_NAMES), st.sampled_from(["Succeeded"])),
    st.tuples(st.just("label"), st.sampled_from(POD_NAMES), st.sampled_from(["x", "y"])),
    st.tuples(st.just("resync"), st.sampled_from(POD_NAMES)),
    st.tuples(st.just("delete"), st.sampled_from(POD_NAMES)),
    st.tuples(
        st.just("pg"), st.sampled_from(["q1", "q2"]), st.sampled_from(["Inqueue", "Running"])
    ),
    st.tuples(st.just("del-pg")),
    st.tuples(st.just("wait"), st.integers(1, 3600)),
)


def plain(value: Any) -> Any:
    """A value as plain data, for an exact comparison of two caches (a node's stamp, drawn
    from one counter for every node of the process, left out)."""
    if isinstance(value, Resource):
        return ("Resource", value.milli_cpu, value.memory, value.scalars, value.max_task_num)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name != "stamp"
        }
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def cache_state(state: ClusterState) -> dict[str, Any]:
    store = state._store
    sums = store.sums
    return {
        "tasks": plain(store.tasks),
        "jobs": plain(store.jobs),
        "nodes": plain(store.nodes),
        "job_usage": plain(sums.job_usage),
        "queue_usage": plain(sums.queue_usage),
        "queue_jobs": dict(sums.queue_jobs),
        "digests": dict(state._digests),
        "converted": dict(store.converted),
        "version": state.version,
        "changes": (state.changes.version, state.changes.since(0)),
    }


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(POD_EVENT, max_size=30))
def test_the_sums_shortcuts_leave_the_cache_as_the_full_path_does(
    events: list[tuple[Any, ...]],
) -> None:
    clock = [0.0]
    states = []
    for incremental in (True, False):
        state = ClusterState()
        state._store.sums.incremental = incremental
        state.usage_history = UsageHistory(3600.0, monotonic=lambda: clock[0])
        for obj in (node("n1", "8"), node("n2", "8"), queue("q1"), queue("q2")):
            state.upsert(obj["kind"], obj)
        states.append(state)
    pods: dict[str, dict[str, Any]] = {}
    version = 0

    def apply(kind: str, obj: dict[str, Any]) -> None:
        nonlocal version
        version += 1
        obj["metadata"]["resourceVersion"] = str(version)
        for state in states:
            state.upsert(kind, copy.deepcopy(obj))

    for event in events:
        op, args = event[0], event[1:]
        if op == "wait":
            clock[0] += args[0]
        elif op == "pod":
            name, queue_name, group, cpu, node_name = args
            pods[name] = pod(name, queue=queue_name, group=group, cpu=cpu, node_name=node_name)
            apply("Pod", pods[name])
        elif op == "pg":
            obj = podgroup("g1", queue=args[0], phase=args[1])
            obj["spec"]["minResources"] = {"cpu": "1"}
            apply("PodGroup", obj)
        elif op == "del-pg":
            for state in states:
                state.delete("PodGroup", "ns/g1")
        elif args[0] not in pods:
            continue
        elif op == "delete":
            del pods[args[0]]
            for state in states:
                state.delete("Pod", f"ns/{args[0]}")
        else:
            obj = pods[args[0]]
            if op == "bind":
                obj["spec"]["nodeName"] = args[1]
                obj["status"]["phase"] = "Running"
            elif op == "finish":
                obj["status"]["phase"] = args[1]
            elif op == "label":
                obj["metadata"]["labels"] = {"v": args[1]}
            apply("Pod", obj)
    shortcut, full = states
    assert cache_state(shortcut) == cache_state(full)
    clock[0] += 60.0
    readings = [s.usage_history.reading().usage for s in states if s.usage_history]
    assert readings[0].keys() == readings[1].keys()
    for queue_name, usage in readings[0].items():
        other = readings[1][queue_name]
        assert usage.keys() == other.keys()
        # The history is told of a change the full path tells it again only when the
        # amount held moved: the same integral, cut into fewer steps.
        for dimension, amount in usage.items():
            assert math.isclose(amount, other[dimension], rel_tol=1e-9), queue_name
