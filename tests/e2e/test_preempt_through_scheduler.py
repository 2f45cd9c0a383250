"""preempt as kube-scheduler calls it: the engine's victims, not kube-scheduler's; reclaim
across queues; queues and gangs protected; a gang preempts only when it can complete."""

from __future__ import annotations

import time

from tests.e2e.controlplane import wait_for
from tests.e2e.kube import Kube

NOT_PREEMPTABLE = {"volcano.sh/preemptable": "false"}


def _priorities(kube: Kube, tag: str) -> tuple[str, str]:
    return kube.priority_class(f"{tag}-low", 10), kube.priority_class(f"{tag}-high", 1000)


def test_intra_queue_preemption_evicts_the_engines_victim_and_the_preemptor_binds(
    kube: Kube,
) -> None:
    """kube-scheduler alone would take the newest victim (`fresh`); it is not preemptable,
    so the engine names `old` instead, and the preemptor binds in its place."""
    ns = kube.namespace()
    low, high = _priorities(kube, "intra")
    kube.node("intra-n1", cpu="2")
    kube.node("intra-n2", cpu="2")
    kube.queue("intra-q")
    kube.pod(ns, "old", cpu="2", queue="intra-q", priority_class=low)
    kube.wait_running(ns, ["old"])
    time.sleep(1.1)  # start times have one-second resolution
    kube.pod(ns, "fresh", cpu="2", queue="intra-q", priority_class=low, annotations=NOT_PREEMPTABLE)
    kube.wait_running(ns, ["fresh"])
    old_node = kube.get_pod(ns, "old").spec.node_name
    kube.pod(ns, "urgent", cpu="2", queue="intra-q", priority_class=high)
    kube.wait_gone(ns, "old")
    assert kube.wait_bound(ns, "urgent", timeout=20) == old_node
    assert kube.get_pod(ns, "fresh") is not None


def test_reclaim_through_preempt_takes_from_the_overused_queue(kube: Kube) -> None:
    ns = kube.namespace()
    low, high = _priorities(kube, "recl")
    kube.node("recl-n1", cpu="2")
    kube.node("recl-n2", cpu="2")
    kube.queue("recl-full")
    kube.queue("recl-starved")
    kube.pod(ns, "hog-0", cpu="2", queue="recl-full", priority_class=low)
    kube.pod(ns, "hog-1", cpu="2", queue="recl-full", priority_class=low)
    kube.wait_running(ns, ["hog-0", "hog-1"])
    kube.pod(ns, "claim", cpu="2", queue="recl-starved", priority_class=high)
    node = kube.wait_bound(ns, "claim", timeout=30)
    pods = kube.pods(ns)
    assert len([n for n in ("hog-0", "hog-1") if n in pods]) == 1, "exactly one victim"
    assert node in ("recl-n1", "recl-n2")


def test_a_queue_that_is_not_reclaimable_is_left_alone(kube: Kube) -> None:
    ns = kube.namespace()
    low, high = _priorities(kube, "keep")
    kube.node("keep-n1", cpu="2")
    kube.queue("keep-full", reclaimable=False)
    kube.queue("keep-starved")
    kube.pod(ns, "hog", cpu="2", queue="keep-full", priority_class=low)
    kube.wait_running(ns, ["hog"])
    kube.pod(ns, "claim", cpu="2", queue="keep-starved", priority_class=high)
    kube.wait_message(ns, "claim", "preemption")
    time.sleep(6)
    assert kube.get_pod(ns, "hog") is not None
    assert kube.get_pod(ns, "claim").spec.node_name is None


def test_a_gangs_min_member_is_protected_when_choosing_victims(kube: Kube) -> None:
    """kube-scheduler would take a member of the newer gang; that would leave the gang
    below minMember, so the engine takes the lone pod on the other node."""
    ns = kube.namespace()
    low, high = _priorities(kube, "gprot")
    kube.node("gprot-n1", cpu="2")
    kube.node("gprot-n2", cpu="2")
    kube.queue("gprot-q")
    kube.pod(ns, "lone", cpu="2", queue="gprot-q", priority_class=low)
    kube.wait_running(ns, ["lone"])
    lone_node = kube.get_pod(ns, "lone").spec.node_name
    time.sleep(1.1)
    kube.podgroup(ns, "pair", 2, "gprot-q", priority_class=low)
    kube.pod(ns, "pair-0", cpu="1", group="pair", priority_class=low)
    kube.pod(ns, "pair-1", cpu="1", group="pair", priority_class=low)
    kube.wait_running(ns, ["pair-0", "pair-1"])
    kube.pod(ns, "urgent", cpu="1", queue="gprot-q", priority_class=high)
    kube.wait_gone(ns, "lone")
    assert kube.wait_bound(ns, "urgent", timeout=20) == lone_node
    pods = kube.pods(ns)
    assert "pair-0" in pods and "pair-1" in pods


def test_no_victim_is_evicted_for_a_gang_that_cannot_complete(kube: Kube) -> None:
    """A gang of four where idle capacity plus preemptable pods make room for three: every
    eviction would be wasted, so none happens."""
    ns = kube.namespace()
    low, high = _priorities(kube, "futile")
    for i in range(4):
        kube.node(f"futile-n{i}", cpu="1")
    kube.queue("futile-q")
    kube.pod(ns, "victim-a", cpu="1", queue="futile-q", priority_class=low)
    kube.pod(ns, "victim-b", cpu="1", queue="futile-q", priority_class=low)
    kube.pod(
        ns, "keeper", cpu="1", queue="futile-q", priority_class=low, annotations=NOT_PREEMPTABLE
    )
    kube.wait_running(ns, ["victim-a", "victim-b", "keeper"])
    kube.podgroup(ns, "four", 4, "futile-q", priority_class=high)
    for i in range(4):
        kube.pod(ns, f"four-{i}", cpu="1", group="four", priority_class=high)
    kube.wait_message(ns, "four-0", "gang")
    time.sleep(10)
    pods = kube.pods(ns)
    assert {"victim-a", "victim-b", "keeper"} <= set(pods), "no eviction may be wasted"
    assert not any(pods[f"four-{i}"].spec.node_name for i in range(4))


def test_a_gang_preempts_for_min_member_only_and_its_nominated_members_bind(
    kube: Kube,
) -> None:
    """A PodGroup of four pods with minMember 2 in a full cluster: two victims, not four;
    the two preemptors bind on the nodes freed for them (each offered only its own node);
    the other two wait without evicting more."""
    ns = kube.namespace()
    low, high = _priorities(kube, "minm")
    for i in range(4):
        kube.node(f"minm-n{i}", cpu="1")
    kube.queue("minm-q")
    victims = [f"victim-{i}" for i in range(4)]
    for name in victims:
        kube.pod(ns, name, cpu="1", queue="minm-q", priority_class=low)
    kube.wait_running(ns, victims)
    kube.podgroup(ns, "job", 2, "minm-q", priority_class=high)
    members = [f"job-{i}" for i in range(4)]
    for name in members:
        kube.pod(ns, name, cpu="1", group="job", priority_class=high)
    wait_for(
        lambda: sum(1 for m in members if kube.bound(ns).get(m)) >= 2,
        40,
        "two members of the gang to bind",
    )
    time.sleep(8)
    pods = kube.pods(ns)
    assert sum(1 for v in victims if v in pods) == 2, "exactly two victims for minMember 2"
    assert sum(1 for m in members if pods[m].spec.node_name) == 2
