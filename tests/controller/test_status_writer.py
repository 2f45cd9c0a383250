"""The status writer's cycle against a stand-in API server: PodGroup phases and Queue counters
derived in one pass, whatever order the cluster's events come in."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.actions.enqueue import Enqueue
from scheduler_core.api.topology import NetworkTopologyRequest, TopologyMode
from scheduler_core.controller import status_pass
from scheduler_core.controller.podgroup_status import TOPOLOGY_DOMAIN_ANNOTATION
from scheduler_core.controller.queue_status import COUNTERS
from scheduler_core.framework.session import Session
from tests.builders import Obj, native_podgroup, node, pod, podgroup, queue, with_min_resources
from tests.controller.status_world import StatusWorld


def group(name: str, min_member: int, min_cpu: int | None) -> Obj:
    pg = podgroup(name, min_member, queue="q", phase="Pending")
    return with_min_resources(pg, {"cpu": str(min_cpu)}) if min_cpu is not None else pg


def member(name: str, job: str, node_name: str = "") -> Obj:
    return pod(name, group=job, cpu="1", memory=None, node_name=node_name)


def counters_match_phases(world: StatusWorld) -> None:
    [q] = world.of_kind("Queue")
    phases = Counter(world.phase(pg["metadata"]["name"]) for pg in world.of_kind("PodGroup"))
    status = q.get("status") or {}
    assert {f: status.get(f, 0) for f in COUNTERS} == {f: phases[p] for f, p in COUNTERS.items()}


def test_a_job_is_not_admitted_beside_a_running_one_its_queue_cannot_hold_with_it() -> None:
    # Capability 1 cpu; j2 (no minResources) runs its 1-cpu pod, then j2x asks for 1 cpu.
    world = StatusWorld(
        [node("n0", cpu="8"), queue("q", capability={"cpu": "1"}), group("j2", 1, None)]
    )
    world.objects.append(member("j2-0", "j2", node_name="n0"))
    world.objects += [group("j2x", 1, 1), member("j2x-0", "j2x")]
    world.cycle()
    assert (world.phase("j2"), world.phase("j2x")) == ("Running", "Pending")
    counters_match_phases(world)
    # j2 finishes: now j2x fits and is admitted.
    world.objects = [o for o in world.objects if o["metadata"]["name"] != "j2-0"]
    world.changed()
    world.cycle()
    assert world.phase("j2x") == "Inqueue"
    counters_match_phases(world)


def test_two_jobs_that_fit_one_at_a_time_are_admitted_one_at_a_time() -> None:
    world = StatusWorld([node("n0", cpu="8"), queue("q", capability={"cpu": "2"})])
    world.objects += [group("a", 2, 2), group("b", 2, 2)]
    world.objects += [member(f"{j}-{i}", j) for j in "ab" for i in range(2)]
    world.cycle()
    assert sorted([world.phase("a"), world.phase("b")]) == ["Inqueue", "Pending"]
    counters_match_phases(world)


def test_counters_count_a_podgroup_whose_write_was_refused_in_the_phase_it_still_has() -> None:
    # The first PodGroup is written, the second waits for the budget, the Queue is written.
    world = StatusWorld(
        [node("n0", cpu="8"), queue("q", capability={"cpu": "4"})], tokens=[True, False, True]
    )
    world.objects += [group("a", 1, 1), group("b", 1, 1), member("a-0", "a"), member("b-0", "b")]
    world.cycle()
    assert sorted([world.phase("a"), world.phase("b")]) == ["Inqueue", "Pending"]
    counters_match_phases(world)


# --- what the pass costs the verbs ------------------------------------------------------


def _count_enqueues(monkeypatch: pytest.MonkeyPatch, world: StatusWorld) -> list[int]:
    """Each run of the enqueue action, as the state's lock depth it ran at."""
    seen: list[int] = []
    execute = Enqueue.execute

    def counted(self: Enqueue, ssn: Session) -> None:
        seen.append(world.lock_depth)
        execute(self, ssn)

    monkeypatch.setattr(Enqueue, "execute", counted)
    return seen


def test_the_pass_enqueues_outside_the_state_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    # The verbs take the same lock: a pass holding it while it orders every pending job kept
    # each filter waiting for it, once a second while pods were bound.
    world = StatusWorld([node("n0", cpu="8"), queue("q", capability={"cpu": "4"})])
    world.objects += [group("a", 1, 1), member("a-0", "a")]
    seen = _count_enqueues(monkeypatch, world)
    world.cycle()
    assert seen == [0]
    assert world.phase("a") == "Inqueue"


def test_plain_pods_alone_open_no_pass_session(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[object] = []
    open_session = getattr(status_pass, "open_session")  # noqa: B009 (the pass's own name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        opened.append(args[0])
        return open_session(*args, **kwargs)

    monkeypatch.setattr(status_pass, "open_session", counted)
    world = StatusWorld([node("n0", cpu="8")])
    world.objects += [pod(f"plain-{i}", cpu="1", memory=None) for i in range(5)]
    world.cycle()
    assert opened == []
    # A Queue object is something to write: then the pass runs.
    world.objects.append(queue("q"))
    world.changed()
    world.cycle()
    assert len(opened) == 1


def test_enqueue_runs_only_while_a_podgroup_is_pending(monkeypatch: pytest.MonkeyPatch) -> None:
    world = StatusWorld([node("n0", cpu="8"), queue("q", capability={"cpu": "4"})])
    world.objects += [group("a", 1, None), member("a-0", "a", node_name="n0")]
    world.objects += [pod(f"plain-{i}", cpu="1", memory=None) for i in range(3)]
    seen = _count_enqueues(monkeypatch, world)
    world.cycle()
    assert (world.phase("a"), seen) == ("Running", [])
    world.objects += [group("b", 1, 1), member("b-0", "b")]
    world.changed()
    world.cycle()
    assert (world.phase("b"), seen) == ("Inqueue", [0])


# --- random event orders ----------------------------------------------------------------

jobs = st.lists(
    st.tuples(st.integers(1, 2), st.one_of(st.none(), st.integers(1, 3))),
    min_size=1,
    max_size=4,
)


@st.composite
def event_orders(draw: st.DrawFn, spec: list[tuple[int, int | None]]) -> list[Any]:
    """Every job's life (its PodGroup, its pods, their binding) in a random interleaving, with
    pods finishing and quiet cycles thrown in."""
    steps: list[Any] = []
    for j, (min_member, _) in enumerate(spec):
        steps.append(("group", j, 0))
        for i in range(min_member):
            steps += [("pod", j, i), ("bind", j, i)]
    steps += draw(
        st.lists(
            st.tuples(st.sampled_from(("finish", "look")), st.integers(0, 3), st.integers(0, 1)),
            max_size=6,
        )
    )
    return list(draw(st.permutations(steps)))


def held_cpu(world: StatusWorld) -> int:
    return sum(1 for p in world.of_kind("Pod") if p["spec"].get("nodeName"))


def apply(world: StatusWorld, spec: list[tuple[int, int | None]], event: Any, cap: int) -> None:
    kind, j, i = event
    if j >= len(spec):
        return
    job = f"j{j}"
    min_member, min_cpu = spec[j]
    names = {o["metadata"]["name"]: o for o in world.objects}
    pod_name = f"{job}-{i}"
    if kind == "group" and job not in names:
        world.objects.append(group(job, min_member, min_cpu))
    elif kind == "pod" and job in names and pod_name not in names and i < min_member:
        world.objects.append(member(pod_name, job))
    elif kind == "bind" and pod_name in names and not names[pod_name]["spec"].get("nodeName"):
        if held_cpu(world) + 1 <= cap:  # the filter's capability rule: what kube-scheduler binds
            names[pod_name]["spec"]["nodeName"] = "n0"
            names[pod_name]["status"] = {"phase": "Running"}
    elif kind == "finish" and pod_name in names:
        world.objects.remove(names[pod_name])
    world.changed()


@settings(max_examples=80, deadline=None)
@given(cap=st.integers(1, 3), spec=jobs, data=st.data())
def test_no_podgroup_is_admitted_beyond_its_queue_and_counters_follow_phases(
    cap: int, spec: list[tuple[int, int | None]], data: st.DataObject
) -> None:
    order = data.draw(event_orders(spec))
    world = StatusWorld([node("n0", cpu="8"), queue("q", capability={"cpu": str(cap)})])
    for event in order:
        before = {
            pg["metadata"]["name"]: world.phase(pg["metadata"]["name"])
            for pg in world.of_kind("PodGroup")
        }
        if event[0] != "look":
            apply(world, spec, event, cap)
        world.cycle()
        counters_match_phases(world)
        for pg in world.of_kind("PodGroup"):
            name = pg["metadata"]["name"]
            if world.phase(name) == "Inqueue" and before.get(name) != "Inqueue":
                wanted = int((pg["spec"].get("minResources") or {}).get("cpu", 0))
                assert wanted + held_cpu(world) <= cap, (name, wanted, held_cpu(world), cap)


def test_a_native_podgroups_status_is_never_written_but_its_queue_counts_it() -> None:
    """kube-scheduler owns a Kubernetes PodGroup's status: the pass writes nothing into it
    (not even beside a Volcano PodGroup of the same name), and the queue counts its pods."""
    native = native_podgroup("train", 2, queue="q")
    world = StatusWorld([node("n0", cpu="8"), queue("q"), native, group("train", 1, None)])
    world.objects += [
        pod(f"k{i}", scheduling_group="train", cpu="1", memory=None, node_name="n0")
        for i in range(2)
    ]
    world.objects.append(member("v0", "train"))
    world.cycle()
    assert native["status"] == {}
    assert world.phase("train") in ("Inqueue", "Pending")
    [q] = world.of_kind("Queue")
    assert q["status"]["allocated"]["cpu"] == "2"


def test_a_held_native_gang_is_told_about_with_an_event_once_not_a_status() -> None:
    native = native_podgroup("trio", 3, queue="q")
    world = StatusWorld([node("n0", cpu="8"), queue("q"), native])
    world.objects.append(pod("t0", scheduling_group="trio", cpu="1", memory=None))
    world.cycle()
    assert native["status"] == {}
    assert world.recorder.events == [
        ("PodGroup", "trio", "scheduling.k8s.io/v1alpha2", "Warning", "Unschedulable")
    ]
    world.changed()
    world.cycle()
    assert len(world.recorder.events) == 1


def test_a_topology_gang_carries_its_domain_as_an_annotation_until_it_has_none() -> None:
    domains: dict[str, str | None] = {"ns/t": "s/b"}
    world = StatusWorld(
        [node("n0", cpu="8"), queue("q"), group("t", 1, None), group("plain", 1, None)],
        requests={"ns/t": NetworkTopologyRequest(TopologyMode.HARD, highest_tier_allowed=1)},
        domain_of=lambda ssn, job: domains[job.uid],
    )
    world.objects += [member("t-0", "t", node_name="n0"), member("p-0", "plain", node_name="n0")]
    world.cycle()
    annotations = {
        pg["metadata"]["name"]: pg["metadata"].get("annotations") or {}
        for pg in world.of_kind("PodGroup")
    }
    assert annotations["t"] == {TOPOLOGY_DOMAIN_ANNOTATION: "s/b"}
    assert TOPOLOGY_DOMAIN_ANNOTATION not in annotations["plain"]
    domains["ns/t"] = None
    world.changed()
    world.cycle()
    [pg] = [pg for pg in world.of_kind("PodGroup") if pg["metadata"]["name"] == "t"]
    assert TOPOLOGY_DOMAIN_ANNOTATION not in (pg["metadata"].get("annotations") or {})
