"""Kubernetes' own PodGroups: conversion of both served versions and how the
cluster state makes them jobs (queue, priority, membership) exactly as Volcano's (their
discovery: tests/cache/test_discovery.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.job import NATIVE_SOURCE
from scheduler_core.api.topology import NetworkTopologyRequest, TopologyMode
from scheduler_core.api.types import PodGroupPhase
from scheduler_core.cache.convert import ConversionError, pod_job_id, two_groups
from scheduler_core.cache.native import (
    NATIVE_KIND,
    native_pod_group_kind,
    native_podgroup_to_info,
)
from scheduler_core.cache.objects import collect
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import default_configuration
from tests.builders import native_podgroup, node, pod, podgroup, priority_class, queue, run

VERSIONS = ("v1alpha2", "v1beta1")


@pytest.mark.parametrize("version", VERSIONS)
def test_a_gang_policy_gives_min_member_and_the_labelled_queue(version: str) -> None:
    info = native_podgroup_to_info(
        native_podgroup("train", 4, version=version, queue="q1", topology=["rack"])
    )
    assert (info.min_member, info.queue, info.queue_named) == (4, "q1", True)
    assert info.source == NATIVE_SOURCE and info.uid == "ns/native:train"
    assert info.topology_keys == ("rack",)
    assert info.network_topology == NetworkTopologyRequest(
        TopologyMode.HARD, highest_tier_name="rack", from_constraint=True
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_a_basic_policy_is_a_group_of_independent_pods(version: str) -> None:
    info = native_podgroup_to_info(native_podgroup("web", None, version=version))
    assert info.min_member == 1


@pytest.mark.parametrize(
    ("queue_on", "queue_name", "expected", "named"),
    [
        ("labels", "q1", "q1", True),
        ("annotations", "q2", "q2", True),
        ("labels", "", "default", False),
    ],
)
def test_the_queue_is_read_from_a_label_or_an_annotation(
    queue_on: str, queue_name: str, expected: str, named: bool
) -> None:
    info = native_podgroup_to_info(native_podgroup("g", 2, queue=queue_name, queue_on=queue_on))
    assert (info.queue, info.queue_named) == (expected, named)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"schedulingPolicy": {}}, "names neither gang nor basic"),
        ({"schedulingPolicy": {"gang": {"minCount": 0}}}, "minCount must be >= 1"),
        ({"schedulingPolicy": {"gang": {"minCount": "4"}}}, "expected an integer"),
        ({"schedulingPolicy": {"basic": {}}, "priority": "high"}, "spec.priority"),
    ],
)
def test_a_bad_native_podgroup_is_refused_naming_the_field(spec: Any, message: str) -> None:
    pg = native_podgroup("bad", 2)
    pg["spec"] = spec
    with pytest.raises(ConversionError, match=message) as caught:
        native_podgroup_to_info(pg)
    assert "PodGroup ns/bad (scheduling.k8s.io)" in str(caught.value)


def test_the_watched_kind_is_apart_from_volcanos_podgroup() -> None:
    spec = native_pod_group_kind("v1alpha2")
    assert spec.kind == NATIVE_KIND != "PodGroup"
    assert spec.list_path("ns") == "/apis/scheduling.k8s.io/v1alpha2/namespaces/ns/podgroups"


# --- pods as members ----------------------------------------------------------------------


def test_a_pod_naming_a_native_group_is_its_member() -> None:
    assert pod_job_id(pod("p", scheduling_group="train")) == ("ns/native:train", False)


def test_a_pod_naming_both_kinds_of_group_is_told_why() -> None:
    both = pod("p", group="vc", scheduling_group="train")
    sentence = two_groups(both)
    assert "Volcano PodGroup vc" in sentence and "Kubernetes PodGroup train" in sentence
    assert two_groups(pod("p", group="vc")) == two_groups(pod("p", scheduling_group="t")) == ""


def _state(*objects: dict[str, Any]) -> ClusterState:
    state = ClusterState()
    state.apply_objects(collect(objects))
    return state


def test_a_native_gang_and_a_volcano_podgroup_of_the_same_name_are_two_jobs() -> None:
    state = _state(
        queue("q1"),
        queue("q2"),
        podgroup("train", 2, queue="q2"),
        native_podgroup("train", 3, queue="q1"),
        pod("v", group="train"),
        pod("k", scheduling_group="train"),
    )
    jobs = state.snapshot().jobs
    native, volcano = jobs["ns/native:train"], jobs["ns/train"]
    assert (native.queue, native.min_available, native.source) == ("q1", 3, "native")
    assert (volcano.queue, volcano.min_available, volcano.source) == ("q2", 2, "volcano")
    assert list(native.tasks) == ["ns-k"] and list(volcano.tasks) == ["ns-v"]


@pytest.mark.parametrize(
    ("pg_priority", "pg_class", "expected"),
    [(50, "high", 50), (None, "high", 1000), (None, "", 0)],
    ids=["own-priority", "class-value", "none"],
)
def test_the_job_priority_is_the_groups_own_else_its_class(
    pg_priority: int | None, pg_class: str, expected: int
) -> None:
    state = _state(
        priority_class("high", 1000),
        native_podgroup("g", 2, priority=pg_priority, priority_class=pg_class),
    )
    assert state.snapshot().jobs["ns/native:g"].priority == expected


def test_a_group_naming_no_queue_takes_its_members_whatever_order_they_come_in() -> None:
    """Members name the queue; the first by key wins when they disagree, so the outcome does
    not depend on the order events arrived in."""
    members = [
        pod("b", scheduling_group="g", labels={"scheduling.volcano.sh/queue-name": "qb"}),
        pod("a", scheduling_group="g", queue="qa"),
    ]
    for order in (members, members[::-1]):
        state = _state(queue("qa"), queue("qb"), native_podgroup("g", 2))
        for member in order:
            state.upsert("Pod", member)
        assert state.snapshot().jobs["ns/native:g"].queue == "qa"
    state.delete("Pod", "ns/a")
    assert state.snapshot().jobs["ns/native:g"].queue == "qb"
    state.delete("Pod", "ns/b")
    assert state.snapshot().jobs["ns/native:g"].queue == "default"


def test_the_groups_own_queue_wins_over_its_members() -> None:
    state = _state(
        queue("q1"),
        native_podgroup("g", 2, queue="q1"),
        pod("a", scheduling_group="g", queue="other"),
    )
    assert state.snapshot().jobs["ns/native:g"].queue == "q1"


def test_members_arriving_before_their_group_wait_for_it() -> None:
    state = _state(queue("q1"), node("n1"))
    state.upsert("Pod", pod("a", scheduling_group="g"))
    assert "ns/native:g" not in state.snapshot().jobs
    state.upsert(NATIVE_KIND, native_podgroup("g", 2, queue="q1"))
    job = state.snapshot().jobs["ns/native:g"]
    assert list(job.tasks) == ["ns-a"] and job.queue == "q1"
    state.delete(NATIVE_KIND, "ns/g")
    assert "ns/native:g" not in state.snapshot().jobs


def test_a_native_gang_runs_once_min_member_are_placed() -> None:
    state = _state(queue("q1"), node("n1", cpu="8"), native_podgroup("g", 2, queue="q1"))
    state.upsert("Pod", pod("a", scheduling_group="g", node_name="n1"))
    assert state.snapshot().jobs["ns/native:g"].phase == PodGroupPhase.PENDING
    state.upsert("Pod", pod("b", scheduling_group="g", node_name="n1"))
    assert state.snapshot().jobs["ns/native:g"].phase == PodGroupPhase.RUNNING


# --- the same workload from either source --------------------------------------------------


def _workload(gangs: list[tuple[int, int, int, str]], native: bool) -> list[dict[str, Any]]:
    """Gangs as (size, minMember, cpu, queue), each as a Volcano or a native PodGroup."""
    objects: list[dict[str, Any]] = [
        node("n1", cpu="4"),
        node("n2", cpu="4"),
        node("n3", cpu="2"),
        queue("q1"),
        queue("q2", weight=2),
    ]
    for g, (size, min_member, cpu, queue_name) in enumerate(gangs):
        name = f"g{g}"
        if native:
            objects.append(native_podgroup(name, min_member, queue=queue_name))
        else:
            objects.append(podgroup(name, min_member, queue=queue_name, phase="Pending"))
        for i in range(size):
            member = {"scheduling_group": name} if native else {"group": name}
            objects.append(pod(f"{name}-{i}", cpu=str(cpu), memory="1Gi", **member))
    return objects


def _outcome(gangs: list[tuple[int, int, int, str]], native: bool) -> Any:
    ssn = run(_workload(gangs, native), default_configuration())
    allocated: dict[str, float] = {}
    for job in ssn.jobs.values():
        allocated[job.queue] = allocated.get(job.queue, 0.0) + job.allocated.milli_cpu
    return sorted((t.key, t.node_name) for t in ssn.bound), allocated


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.sampled_from(["q1", "q2"])
        ).map(lambda t: (t[0], min(t[0], t[1]), t[2], t[3])),
        min_size=1,
        max_size=4,
    )
)
def test_a_workload_is_placed_and_counted_alike_as_volcano_or_native_podgroups(
    gangs: list[tuple[int, int, int, str]],
) -> None:
    assert _outcome(gangs, native=True) == _outcome(gangs, native=False)


def test_the_topology_keys_are_kept_on_the_job() -> None:
    state = _state(queue("q1"), native_podgroup("g", 2, queue="q1", topology=["rack"]))
    assert state.snapshot().jobs["ns/native:g"].topology_keys == ("rack",)


def test_the_state_counts_volcano_and_native_podgroups_apart() -> None:
    state = ClusterState()
    state.apply_objects(collect([queue("q"), podgroup("v", 1, queue="q"), native_podgroup("k", 2)]))
    counts = state.counts()
    assert (counts["podgroups"], counts["nativepodgroups"]) == (1, 1)
