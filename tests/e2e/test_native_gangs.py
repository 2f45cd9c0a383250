"""Kubernetes' own PodGroups (the Workload API) through the real kube-scheduler: its gangs are
gangs in our queues, a group that cannot fit leaks no share, and the accounting is the same
as for a Volcano PodGroup of the same shape."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Stack
from tests.e2e.controlplane import WORKLOAD_GATES, ControlPlane, Extender, wait_for
from tests.e2e.kube import Kube
from tests.e2e.test_reclaim_loop import (
    events,
    fill,
    reclaim_args,
    reclaimer,
    running_by_queue,
    two_nodes,
)

__all__ = ["reclaimer"]  # the fixture, shared with the reclaim loop's tests


def queue_view(extender: Extender, name: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{extender.url}/api/v1/queues/{name}", timeout=10) as answer:
        doc: dict[str, Any] = json.loads(answer.read())
        return doc


def explain_podgroup(extender: Extender, namespace: str, name: str) -> dict[str, Any]:
    url = f"{extender.url}/api/v1/podgroups/{namespace}/{name}/explain"
    with urllib.request.urlopen(url, timeout=10) as answer:
        doc: dict[str, Any] = json.loads(answer.read())
        return doc


def metric(extender: Extender, name: str) -> float:
    for line in extender.metrics().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def cpu(amounts: dict[str, Any] | None) -> float:
    return float((amounts or {}).get("cpu") or 0.0)


@pytest.fixture
def native(kube: Kube) -> Kube:
    """The suite's cluster, when its API server serves native PodGroups (the control plane
    turns the Workload API on; binaries too old to have it skip these cases)."""
    if not kube.native_served():
        pytest.skip("kube-apiserver does not serve scheduling.k8s.io/v1alpha2 PodGroups")
    return kube


@pytest.fixture
def long_ttl(stack: Stack) -> Iterator[Extender]:
    """The stack's extender with an assumption TTL and group window far longer than the
    test: whatever is released in time was released by the group's failure being seen."""
    stack.extender.process.stop()
    stack.extender = stack.cp.start_extender(
        port=stack.port,
        args=["--assume-ttl", "300", "--group-window", "300", "--refresh-interval", "0"],
    ).wait_ready()
    try:
        yield stack.extender
    finally:
        stack.restart_extender()


def test_a_native_gang_of_four_binds_whole_and_counts_in_its_queue(
    native: Kube, stack: Stack
) -> None:
    kube = native
    ns = kube.namespace("native")
    kube.node("native-n1", cpu="2")
    kube.node("native-n2", cpu="2")
    kube.queue("native-q1")
    kube.native_podgroup(ns, "four", 4, queue="native-q1")
    for i in range(4):
        kube.pod(ns, f"four-{i}", cpu="1", scheduling_group="four")
    wait_for(lambda: len(kube.bound(ns)) == 4, 60, "all four members to bind")
    kube.wait_running(ns, [f"four-{i}" for i in range(4)])

    def counted() -> dict[str, Any] | None:
        view = queue_view(stack.extender, "native-q1")
        return view if cpu(view["allocated"]) == 4 and view["assumedPods"] == 0 else None

    view = wait_for(counted, 30, "native-q1 to hold the four members")
    assert view["jobs"] == 1
    explained = explain_podgroup(stack.extender, ns, "four")
    assert explained["source"] == "native"
    assert explained["queue"] == "native-q1"


def test_a_native_gang_that_cannot_fit_leaks_no_share_and_another_queue_binds_meanwhile(
    native: Kube, long_ttl: Extender
) -> None:
    """Four 1-CPU members and three nodes of 1.5 CPU: the sum fits, so our filter passes
    (and assumes) every member kube-scheduler asks about, but only three pack, so the group
    fails and is retried. The members' assumptions end with the failure (not after the
    300-second TTL), so the queue never shows them held for long, and another queue's pod
    binds while the group keeps failing."""
    kube = native
    ns = kube.namespace("native")
    for i in range(3):
        kube.node(f"nofit-n{i}", cpu="1500m")
    kube.queue("nofit-q1")
    kube.queue("nofit-q2")
    kube.native_podgroup(ns, "toobig", 4, queue="nofit-q1")
    for i in range(4):
        kube.pod(ns, f"toobig-{i}", cpu="1", scheduling_group="toobig")

    def tried() -> bool:
        return any(
            "FailedScheduling" in m
            for i in range(4)
            for m in kube.scheduling_messages(ns, f"toobig-{i}")
        )

    wait_for(tried, 60, "kube-scheduler to fail the group")
    assert metric(long_ttl, "queue_extender_group_assumptions_released_total") > 0
    kube.pod(ns, "other", cpu="1", queue="nofit-q2")
    kube.wait_bound(ns, "other", timeout=30)
    assert all(n == "other" for n in kube.bound(ns)), kube.bound(ns)

    def released() -> bool:
        view = queue_view(long_ttl, "nofit-q1")
        return bool(view["assumedPods"] == 0 and cpu(view["allocated"]) == 0)

    wait_for(released, 30, "nofit-q1 to hold nothing for the failed group")
    time.sleep(5)  # retries of the group come and fail again: still nothing held
    assert released()
    assert kube.bound(ns) == {"other": kube.bound(ns)["other"]}


def test_the_reclaim_loop_gives_a_starving_native_gang_its_deserved_share(
    native: Kube, reclaimer: Any
) -> None:
    """q1 holds both nodes; a native gang of two in q2 (equal weight) starves. The loop
    reclaims for it as for a Volcano gang: two of q1's pods go, and the gang binds whole."""
    kube = native
    ns = kube.namespace("reclaim")
    tag = "r" + ns.replace("reclaim-", "")
    two_nodes(kube, tag)
    q1, q2 = kube.queue(f"{tag}-q1"), kube.queue(f"{tag}-q2")
    fill(kube, ns, q1, 4, "a")
    reclaimer()
    kube.native_podgroup(ns, "pair", 2, queue=q2)
    for i in range(2):
        kube.pod(ns, f"pair-{i}", cpu="1", scheduling_group="pair")
    wait_for(
        lambda: {"pair-0", "pair-1"} <= set(kube.bound(ns)), 90, "the native gang to bind whole"
    )
    assert running_by_queue(kube, ns).get(q1, 0) >= 2
    reclaimed = [m for n in ("a0", "a1", "a2", "a3") for m in events(kube, ns, n)]
    assert any(m.startswith("Reclaimed: ") and f"queue {q1} is overused" in m for m in reclaimed)


WAP_SCHEDULER = "wap-scheduler"


@pytest.fixture
def wap(control_plane: ControlPlane) -> Iterator[Extender]:
    """A kube-scheduler with workload-aware preemption on, for profile ``wap-scheduler``, and
    an extender leading a lease of its own (so its watch is one that judges).

    The scheduler has no extender: kube-scheduler 1.36 runs no workload-aware preemption in a
    profile that has one (a pod group's preemption cannot ask extenders, so it is not made).
    What preempts behind the queue rules is then another profile or scheduler, as here."""
    lease = f"e2e-wap-{int(time.time())}"
    extender = control_plane.start_extender(
        "wap-extender",
        args=[
            "--scheduler-names",
            WAP_SCHEDULER,
            *reclaim_args(lease, "--reclaim-dry-run"),
        ],
    ).wait_ready()
    scheduler = control_plane.start_scheduler(
        "wap-kube-scheduler",
        [WAP_SCHEDULER],
        None,
        feature_gates=WORKLOAD_GATES + ",WorkloadAwarePreemption=true",
    )
    try:
        wait_for(lambda: metric(extender, "queue_extender_leader") == 1.0, 30, "leadership")
        yield extender
    finally:
        scheduler.stop()
        extender.process.stop()


def test_gang_preemption_that_breaks_a_queue_rule_is_reported(native: Kube, wap: Extender) -> None:
    """Workload-aware preemption evicts for a high-priority native gang without asking the
    extender; the victims are members of Volcano gangs of minMember 2 (deleted at once: no
    grace period), so any eviction leaves one below its minimum: the leader says so on the
    victim's Queue and PodGroup and counts it."""
    kube = native
    ns = kube.namespace("wap")
    tag = "w" + ns.replace("wap-", "")
    kube.priority_class(f"{tag}-low", -10)
    kube.priority_class(f"{tag}-high", 1000)
    for i in range(2):
        kube.node(f"{tag}-n{i}", cpu="2", memory="8Gi")
    q1, q2 = kube.queue(f"{tag}-q1"), kube.queue(f"{tag}-q2")
    victims = []
    for g in range(2):
        kube.podgroup(ns, f"vg{g}", 2, q2)
        for i in range(2):
            victims.append(
                kube.pod(
                    ns,
                    f"vg{g}-{i}",
                    cpu="1",
                    queue=q2,
                    group=f"vg{g}",
                    node=f"{tag}-n{g}",
                    priority_class=f"{tag}-low",
                )
            )
    kube.wait_running(ns, victims, timeout=60)
    kube.native_podgroup(ns, "urgent", 2, queue=q1, priority_class=f"{tag}-high")
    for i in range(2):
        kube.pod(
            ns,
            f"urgent-{i}",
            cpu="1",
            scheduler=WAP_SCHEDULER,
            scheduling_group="urgent",
            priority_class=f"{tag}-high",
        )
    rule = 'queue_extender_gang_preemption_rule_breaks_total{rule="victim-gang-below-min-member"}'
    wait_for(lambda: metric(wap, rule) >= 1, 90, "the broken gang rule to be counted")
    note = kube.wait_message("default", q2, "PreemptionBypassedQueueRules", timeout=30)
    assert "without asking the extender" in note and "below its minMember 2" in note
    groups = [m for g in ("vg0", "vg1") for m in kube.scheduling_messages(ns, g)]
    assert any("PreemptionBypassedQueueRules" in m for m in groups), groups


def test_the_same_gang_as_a_volcano_or_a_native_podgroup_is_placed_and_counted_alike(
    native: Kube, stack: Stack
) -> None:
    """One namespace, two identical sides (nodes, a queue capped at 2 CPU, a gang of three
    1-CPU pods with minMember 2): one side's gang is a Volcano PodGroup named g, the other's a
    Kubernetes PodGroup also named g. Each side binds the same two members on the same kind
    of node, its third held by the cap, and each queue holds the same."""
    kube = native
    ns = kube.namespace("diff")
    placed: dict[str, list[str]] = {}
    for side in ("volcano", "native"):
        kube.node(f"diff-{side}-big", cpu="2", side=side)
        kube.node(f"diff-{side}-small", cpu="1", side=side)
        q = kube.queue(f"diff-{side}-q", capability={"cpu": "2"})
        if side == "volcano":
            kube.podgroup(ns, "g", 2, q)
        else:
            kube.native_podgroup(ns, "g", 2, queue=q)
        member = {"group": "g"} if side == "volcano" else {"scheduling_group": "g"}
        for i in range(3):
            kube.pod(ns, f"{side}-{i}", cpu="1", node_selector={"side": side}, **member)

    def both_placed() -> bool:
        bound = kube.bound(ns)
        for side in ("volcano", "native"):
            placed[side] = sorted(
                node.rsplit("-", 1)[1] for name, node in bound.items() if name.startswith(side)
            )
        return all(len(nodes) == 2 for nodes in placed.values())

    wait_for(both_placed, 60, "two members of each gang to bind")
    time.sleep(3)  # the third members stay held by the cap
    assert both_placed() and placed["volcano"] == placed["native"], placed

    def counted() -> tuple[float, float] | None:
        views = [queue_view(stack.extender, f"diff-{side}-q") for side in ("volcano", "native")]
        alloc = (cpu(views[0]["allocated"]), cpu(views[1]["allocated"]))
        return alloc if alloc == (2.0, 2.0) and not any(v["assumedPods"] for v in views) else None

    wait_for(counted, 30, "both queues to hold their two members")
