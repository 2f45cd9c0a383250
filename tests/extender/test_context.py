"""A pod the cache has not seen yet is judged in a one-off session that starts from the cache's
per-queue sums; its queue attributes equal those of a session that walks every job. A pod
kube-scheduler sends at a version the cache has converted is the cache's task, copied, and
that copy is exactly what converting the pod again would give."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.cache.convert import (
    GROUP_NAME_ANNOTATION,
    pod_job_id,
    pod_to_task,
    two_groups,
)
from scheduler_core.engine import open_session
from scheduler_core.extender.context import PodContext, pod_groups
from scheduler_core.report import queue_attrs
from tests.builders import (
    accounting,
    node,
    pod,
    podgroup,
    priority_class,
    queue,
    with_resource_claims,
)


def cluster() -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [node("n1", cpu="8"), node("n2", cpu="8")]
    objs += [queue("a", 2), queue("b", 1)]
    objs += [podgroup("gang", 3, queue="a", phase="Inqueue")]
    objs += [pod("g0", group="gang", node_name="n1"), pod("g1", group="gang")]
    objs += [pod(f"b{i}", queue="b", node_name="n2", cpu="2") for i in range(3)]
    return objs


def amounts(resource: Any) -> dict[str, float]:
    return {k: round(v, 3) for k, v in resource.to_quantities().items()}


@pytest.mark.parametrize(
    "newcomer",
    [
        pod("g2", group="gang"),  # a new member of a PodGroup the cache knows
        pod("lone", queue="b", cpu="3"),  # a job of one the cache has never seen
    ],
    ids=["member-of-known-gang", "new-lone-pod"],
)
def test_one_off_session_sums_equal_a_walk_over_every_job(newcomer: dict[str, Any]) -> None:
    acct, _ = accounting(cluster())
    ctx = PodContext(acct, newcomer)
    assert ctx.ssn is not acct.session(), "the pod is not in the cache: a one-off session"
    walked = ctx.ssn.snapshot
    walked.queue_usage = None
    slow = open_session(walked, acct.conf, clone=False)
    fast_attrs, slow_attrs = queue_attrs(ctx.ssn), queue_attrs(slow)
    assert set(fast_attrs) == set(slow_attrs)
    for name, attr in slow_attrs.items():
        other = fast_attrs[name]
        for field in ("deserved", "allocated", "request", "inqueue", "elastic"):
            assert amounts(getattr(attr, field)) == amounts(getattr(other, field)), (name, field)


def test_a_one_off_session_leaves_the_cache_sums_as_they_were() -> None:
    """The snapshot shares the cache's per-queue sums; the one adjusted for the newcomer's
    job is a copy, so the next session (and the cache) see the cluster as it is."""
    acct, _ = accounting(cluster())
    before = {q: amounts(u.request) for q, u in acct.state.shared_snapshot().queue_usage.items()}
    ctx = PodContext(acct, pod("g2", group="gang", cpu="3"))
    assert ctx.ssn is not acct.session()
    assert ctx.ssn.snapshot.queue_usage is not None
    assert amounts(ctx.ssn.snapshot.queue_usage["a"].request) != before["a"]
    after = {q: amounts(u.request) for q, u in acct.state.shared_snapshot().queue_usage.items()}
    assert after == before


@pytest.mark.parametrize(
    "newcomer",
    [pod("g2", group="gang", cpu="3"), pod("lone", queue="b", cpu="3")],
    ids=["member-of-known-gang", "new-lone-pod"],
)
def test_accounting_with_an_unseen_assumed_pod_keeps_the_cache_sums_and_equals_a_walk(
    newcomer: dict[str, Any],
) -> None:
    """After filter passes a pod the cache has not shown yet, the next accounting session
    counts it through its queue's sum (no walk over every job) and agrees with a walk."""
    acct, _ = accounting(cluster())
    before = {q: amounts(u.request) for q, u in acct.state.shared_snapshot().queue_usage.items()}
    ctx = PodContext(acct, newcomer)
    assert ctx.job is not None
    acct.assume(ctx.task, ctx.job)
    ssn = acct.session()
    assert ssn.snapshot.queue_usage is not None, "the rebuild kept the per-queue sums"
    assert ctx.task.uid in ssn.jobs[ctx.job.uid].tasks
    walked = ssn.snapshot
    walked.queue_usage = None
    slow = open_session(walked, acct.conf, clone=False)
    acct.replay_assumptions(slow)
    fast_attrs, slow_attrs = queue_attrs(ssn), queue_attrs(slow)
    assert set(fast_attrs) == set(slow_attrs)
    for name, attr in slow_attrs.items():
        for field in ("deserved", "allocated", "request", "inqueue", "elastic"):
            assert amounts(getattr(attr, field)) == amounts(getattr(fast_attrs[name], field)), (
                name,
                field,
            )
    after = {q: amounts(u.request) for q, u in acct.state.shared_snapshot().queue_usage.items()}
    assert after == before, "the cache's own sums are untouched"


# --- the cache's task for a pod at a version it has converted ---------------------------------


def stored(p: dict[str, Any], version: str = "7") -> dict[str, Any]:
    """``p`` as the API server stored it: with a resourceVersion."""
    p["metadata"]["resourceVersion"] = version
    return p


def task_fields(task: TaskInfo) -> dict[str, Any]:
    """Every field of a task, requests by their amounts (a Resource has no value equality)."""
    out = {}
    for f in dataclasses.fields(task):
        value = getattr(task, f.name)
        out[f.name] = value.to_quantities() if isinstance(value, Resource) else value
    return out


def as_judged(p: dict[str, Any], priorities: dict[str, int]) -> dict[str, Any]:
    """What converting ``p`` now gives, as a verb judges it: waiting, on no node."""
    fresh = pod_to_task(p, priorities)
    fresh.status, fresh.node_name = TaskStatus.PENDING, ""
    return task_fields(fresh)


def live_accounting(*objs: dict[str, Any]) -> Any:
    acct, _ = accounting([node("n1", cpu="8"), queue("a", 1), priority_class("high", 100)])
    for obj in objs:
        acct.state.upsert(str(obj["kind"]), obj)
    return acct


def test_a_stored_pod_at_the_cached_version_is_the_cache_task_copied() -> None:
    p = stored(pod("p", queue="a", priority_class="high", unschedulable=True))
    acct = live_accounting(p)
    cached = acct.state.task("ns/p")
    ctx = PodContext(acct, p, as_stored=True)
    assert ctx.task is not cached, "a copy: the verb changes its status and node"
    assert ctx.task.resreq is cached.resreq, "copied from the cache, not converted again"
    assert cached.status == TaskStatus.PENDING and ctx.task.status == TaskStatus.PENDING
    assert task_fields(ctx.task) == as_judged(p, acct.state.priority_values())


@pytest.mark.parametrize(
    "change",
    [
        "another-version",
        "another-uid",
        "no-version",
        "priority-class-changed",
        "priority-class-deleted",
        "resource-claims",
        "not-as-stored",
        "not-in-cache",
    ],
)
def test_the_pod_is_converted_again_unless_the_cache_holds_this_very_version(change: str) -> None:
    p = stored(pod("p", queue="a", priority_class="high"))
    if change == "resource-claims":
        with_resource_claims(p, "gpu-claim")
    acct = live_accounting(p) if change != "not-in-cache" else live_accounting()
    asked = dict(p, metadata=dict(p["metadata"]))
    if change == "another-version":
        asked["metadata"]["resourceVersion"] = "8"
    elif change == "another-uid":
        asked["metadata"]["uid"] = "recreated"
    elif change == "no-version":
        del asked["metadata"]["resourceVersion"]
    elif change == "priority-class-changed":
        acct.state.upsert("PriorityClass", priority_class("high", 5))
    elif change == "priority-class-deleted":
        acct.state.delete("PriorityClass", "high")
    ctx = PodContext(acct, asked, as_stored=change != "not-as-stored")
    cached = acct.state.task("ns/p")
    assert cached is None or ctx.task.resreq is not cached.resreq
    assert task_fields(ctx.task) == as_judged(asked, acct.state.priority_values())


@settings(max_examples=150, deadline=None)
@given(
    priority=st.none() | st.integers(-5, 5),
    class_name=st.sampled_from(["", "high", "low", "absent"]),
    node_name=st.sampled_from(["", "n1"]),
    phase=st.sampled_from([None, "Pending", "Running", "Succeeded"]),
    flags=st.fixed_dictionaries(
        {
            "unschedulable": st.booleans(),
            "disruption_target": st.booleans(),
            "deleting": st.booleans(),
            "preemptable": st.none() | st.booleans(),
        }
    ),
    classes_change=st.sampled_from(["none", "raise-low", "delete-high", "add-absent"]),
    ask_version=st.sampled_from(["7", "8"]),
)
def test_a_verb_task_always_equals_converting_the_pod_now(
    priority: int | None,
    class_name: str,
    node_name: str,
    phase: str | None,
    flags: dict[str, Any],
    classes_change: str,
    ask_version: str,
) -> None:
    """Whatever the pod, whatever happened to the PriorityClasses since the cache converted
    it, and whether or not kube-scheduler asks at the cached version: the task a verb
    judges is the pod converted now."""
    shape: dict[str, Any] = {
        "queue": "a",
        "priority": priority,
        "priority_class": class_name,
        "node_name": node_name,
        "phase": phase,
        **flags,
    }
    p = stored(pod("p", **shape))
    acct = live_accounting(priority_class("low", 1), p)
    if classes_change == "raise-low":
        acct.state.upsert("PriorityClass", priority_class("low", 50))
    elif classes_change == "delete-high":
        acct.state.delete("PriorityClass", "high")
    elif classes_change == "add-absent":
        acct.state.upsert("PriorityClass", priority_class("absent", 9))
    asked = stored(pod("p", **shape), ask_version)  # a fresh copy, at either version
    ctx = PodContext(acct, asked, as_stored=True)
    assert task_fields(ctx.task) == as_judged(asked, acct.state.priority_values())


_odd = st.one_of(st.none(), st.integers(), st.text(max_size=3), st.lists(st.integers(), max_size=1))
_names = st.one_of(st.text(max_size=6), _odd)
_annotations = st.one_of(
    _odd,
    st.dictionaries(
        st.sampled_from([GROUP_NAME_ANNOTATION, "scheduling.volcano.sh/queue-name", "other"]),
        _names,
        max_size=2,
    ),
)
_meta = st.one_of(
    _odd,
    st.fixed_dictionaries(
        {},
        optional={
            "name": _names,
            "namespace": _names,
            "uid": _names,
            "annotations": _annotations,
        },
    ),
)
_spec = st.one_of(
    _odd,
    st.fixed_dictionaries(
        {},
        optional={
            "schedulingGroup": st.one_of(
                _odd, st.fixed_dictionaries({}, optional={"podGroupName": _names})
            ),
            "schedulerName": st.just("queue-scheduler"),
        },
    ),
)


@settings(max_examples=400, deadline=None)
@given(pod=st.fixed_dictionaries({}, optional={"metadata": _meta, "spec": _spec}))
def test_a_pods_groups_read_in_one_pass_equal_reading_each_field_apart(
    pod: dict[str, Any],
) -> None:
    assert pod_groups(pod) == (two_groups(pod), *pod_job_id(pod))
