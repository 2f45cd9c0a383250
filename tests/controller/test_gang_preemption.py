"""kube-scheduler's preemption for a pod group, which asks no extender, caught afterwards: a
victim whose eviction broke a queue rule gets Warning events and a count, once."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from scheduler_core.cache.objects import collect
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import default_configuration
from scheduler_core.controller.events import ObjectRef
from scheduler_core.controller.gang_preemption import (
    RULE_CAPABILITY,
    RULE_DESERVED,
    RULE_MIN_MEMBER,
    GangPreemptionWatch,
)
from tests.builders import native_podgroup, node, pod, podgroup, queue


class World:
    def __init__(self, objects: list[dict[str, Any]], *, leader: bool = True) -> None:
        self.state = ClusterState()
        self.state.apply_objects(collect(objects))
        self.approved: set[str] = set()
        self.events: list[tuple[ObjectRef, str, str, str]] = []
        self.leader = leader
        self.registry = CollectorRegistry()
        self.watch = GangPreemptionWatch(
            self.state,
            default_configuration,
            lambda: self.approved,
            lambda ref, kind, reason, note: self.events.append((ref, kind, reason, note)),
            lambda: self.leader,
            registry=self.registry,
        )

    def mark(self, victim: dict[str, Any]) -> None:
        victim["status"]["conditions"] = [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ]
        self.state.upsert("Pod", victim)

    def count(self, rule: str) -> float:
        value = self.registry.get_sample_value(
            "queue_extender_gang_preemption_rule_breaks_total", {"rule": rule}
        )
        return value or 0.0

    def regarding(self) -> list[tuple[str, str, str]]:
        return sorted((ref.kind, ref.name, ref.api_version) for ref, *_ in self.events)


def gang_preempting_for(
    q: str, *, capability: dict[str, str] | None = None, cpu: str = "1"
) -> list[Any]:
    """Two 4-CPU nodes; queue q2 runs two 1-CPU lone pods on n1; a native gang of two in
    ``q`` waits with its members nominated onto n1."""
    return [
        node("n1", cpu="4"),
        node("n2", cpu="4"),
        queue("q1", capability=capability),
        queue("q2"),
        native_podgroup("g", 2, queue=q),
        pod("g-0", cpu=cpu, scheduling_group="g", nominated="n1"),
        pod("g-1", cpu=cpu, scheduling_group="g", nominated="n1"),
        pod("v0", cpu="1", queue="q2", node_name="n1"),
        pod("v1", cpu="1", queue="q2", node_name="n1"),
    ]


def test_a_victim_of_a_queue_within_its_share_is_reported_on_the_groups_and_the_queue() -> None:
    world = World(gang_preempting_for("q1"))
    world.mark(pod("v0", cpu="1", queue="q2", node_name="n1"))
    [bypass] = world.watch.tick()
    assert [rule for rule, _ in bypass.broken] == [RULE_DESERVED]
    assert "queue q2 was within its deserved share" in bypass.note()
    assert "for pod group ns/g (queue q1)" in bypass.note()
    assert world.regarding() == [
        ("PodGroup", "g", "scheduling.k8s.io/v1alpha2"),
        ("Queue", "q2", "scheduling.volcano.sh/v1beta1"),
    ]
    assert {kind for _, kind, _, _ in world.events} == {"Warning"}
    assert world.count(RULE_DESERVED) == 1


def test_each_victim_is_judged_once() -> None:
    world = World(gang_preempting_for("q1"))
    world.mark(pod("v0", cpu="1", queue="q2", node_name="n1"))
    world.watch.tick()
    world.state.upsert("Pod", pod("other", cpu="1", queue="q2"))
    assert world.watch.tick() == []
    assert world.count(RULE_DESERVED) == 1


def test_a_victim_the_preempt_verb_handed_out_is_not_reported() -> None:
    world = World(gang_preempting_for("q1"))
    world.approved.add("ns-v0")
    world.watch.tick()
    world.approved.clear()  # (the grant ended; the victim is still remembered as ours)
    world.mark(pod("v0", cpu="1", queue="q2", node_name="n1"))
    assert world.watch.tick() == [] and world.events == []


def test_a_follower_reports_nothing() -> None:
    world = World(gang_preempting_for("q1"), leader=False)
    world.mark(pod("v0", cpu="1", queue="q2", node_name="n1"))
    assert world.watch.tick() == [] and world.events == []


def test_preemption_inside_the_victims_own_queue_breaks_no_share_rule() -> None:
    world = World(gang_preempting_for("q2"))
    world.mark(pod("v0", cpu="1", queue="q2", node_name="n1"))
    assert world.watch.tick() == []


def test_taking_from_a_queue_above_its_share_breaks_nothing() -> None:
    """q2 holds 6 CPU of 8 while q1 asks 4: q2 deserves 4, and is above it."""
    objects = gang_preempting_for("q1", cpu="2")
    objects += [pod(f"w{i}", cpu="1", queue="q2", node_name="n2") for i in range(4)]
    world = World(objects)
    world.mark(pod("v0", cpu="1", queue="q2", node_name="n1"))
    assert world.watch.tick() == []


def test_a_preemptor_queue_over_its_capability_is_reported() -> None:
    world = World(gang_preempting_for("q1", capability={"cpu": "1"}))
    world.mark(pod("v0", cpu="1", queue="q2", node_name="n1"))
    [bypass] = world.watch.tick()
    assert RULE_CAPABILITY in [rule for rule, _ in bypass.broken]
    assert world.count(RULE_CAPABILITY) == 1


@pytest.mark.parametrize(("min_member", "reported"), [(2, True), (1, False)])
def test_a_victim_gang_left_below_its_min_member_is_reported_without_a_preemptor(
    min_member: int, reported: bool
) -> None:
    objects = [
        node("n1", cpu="4"),
        queue("q2"),
        podgroup("vg", min_member, queue="q2"),
        pod("m0", cpu="1", group="vg", node_name="n1"),
        pod("m1", cpu="1", group="vg", node_name="n1"),
    ]
    world = World(objects)
    world.mark(pod("m0", cpu="1", group="vg", node_name="n1"))
    found = world.watch.tick()
    assert bool(found) == reported
    if reported:
        [bypass] = found
        assert [rule for rule, _ in bypass.broken] == [RULE_MIN_MEMBER]
        assert "for a preemptor the extender cannot name" in bypass.note()
        assert world.regarding() == [
            ("PodGroup", "vg", "scheduling.volcano.sh/v1beta1"),
            ("Queue", "q2", "scheduling.volcano.sh/v1beta1"),
        ]


def test_a_victim_already_gone_when_the_leader_looks_is_still_judged() -> None:
    """kube-scheduler deletes its victims right after marking them: the mark is kept as it
    was seen, not looked for later among the pods that are left."""
    objects = [
        node("n1", cpu="4"),
        queue("q2"),
        podgroup("vg", 2, queue="q2"),
        pod("m0", cpu="1", group="vg", node_name="n1"),
        pod("m1", cpu="1", group="vg", node_name="n1"),
    ]
    world = World(objects)
    world.mark(pod("m0", cpu="1", group="vg", node_name="n1"))
    world.state.delete("Pod", "ns/m0")
    [bypass] = world.watch.tick()
    assert [rule for rule, _ in bypass.broken] == [RULE_MIN_MEMBER]
    assert "(1 placed members left)" in bypass.note()
