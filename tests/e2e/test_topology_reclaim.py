"""Reclaim and preemption for a gang with a network topology request, behind the real
kube-scheduler: queue q1's gang needs one whole switch (a tier-1 HyperNode); queue q2, over
its share, holds pods in both switches. The loop evicts in one switch only, the one that
then holds the whole gang, and the gang lands there; when no switch could hold it even
after reclaim, nothing is evicted and each member is told why. kube-scheduler's own
preemption gets victims from the preempt verb in one switch only."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Stack
from tests.e2e.controlplane import ControlPlane, Extender, wait_for
from tests.e2e.kube import Kube
from tests.e2e.test_reclaim_loop import events, metric, queue_of, reclaim_args


@pytest.fixture
def topology_reclaimer(control_plane: ControlPlane) -> Iterator[Extender]:
    """A second extender running the reclaim loop (its own lease)."""
    lease = f"e2e-topology-reclaim-{int(time.time())}"
    extender = control_plane.start_extender(
        "topology-reclaimer", args=reclaim_args(lease)
    ).wait_ready()
    yield extender
    extender.process.stop()


def switches(extender: Extender) -> set[str]:
    """The tier-1 domains of the extender's tree."""
    with urllib.request.urlopen(f"{extender.url}/api/v1/topology", timeout=10) as answer:
        doc: dict[str, Any] = json.loads(answer.read())
    return {d["name"] for t in doc["tiers"] if t["tier"] == 1 for d in t["domains"]}


def test_the_loop_frees_one_switch_for_a_topology_gang_and_the_gang_lands_there(
    kube: Kube, topology_reclaimer: Extender
) -> None:
    ns = kube.namespace("topo-reclaim")
    tag = "tr" + ns.rsplit("-", 2)[1] + ns.rsplit("-", 1)[1]
    nodes = [kube.node(f"{tag}-n{i}", cpu="2", memory="8Gi") for i in range(8)]
    switch_a, switch_b = set(nodes[:4]), set(nodes[4:])
    kube.hypernode(f"{tag}-sw-a", 1, nodes=sorted(switch_a), tier_name="switch")
    kube.hypernode(f"{tag}-sw-b", 1, nodes=sorted(switch_b), tier_name="switch")
    q1, q2 = kube.queue(f"{tag}-q1"), kube.queue(f"{tag}-q2")
    # q2 holds 12 of the 16 cpus: both nodes of switch a it is on, and all of switch b.
    # Free room is left only on n2 and n3 (switch a).
    q2_nodes = [nodes[0], nodes[1], *nodes[4:]]
    q2_pods = {
        kube.pod(ns, f"b{i}", queue=q2, node=q2_nodes[i // 2]): q2_nodes[i // 2]
        for i in range(2 * len(q2_nodes))
    }
    kube.wait_running(ns, list(q2_pods), timeout=60)
    loop = topology_reclaimer
    wait_for(
        lambda: {f"{tag}-sw-a", f"{tag}-sw-b"} <= switches(loop),
        30,
        "the loop's tree to hold both switches",
        interval=0.3,
    )

    # q1's gang: 4 pods of 2 cpu, all inside one switch. q1 deserves 8 cpus, so q2 may
    # give back 4: switch a freed whole (n0 and n1's pods) holds the gang; switch b would
    # need 8 cpus evicted.
    kube.podgroup(ns, "gang", 4, q1, network_topology={"mode": "hard", "highestTierAllowed": 1})
    gang = [kube.pod(ns, f"g{i}", cpu="2", queue=q1, group="gang") for i in range(4)]
    placed = wait_for(
        lambda: (bound := kube.bound(ns)) and all(g in bound for g in gang) and bound,
        120,
        "the whole gang to be bound",
        interval=0.5,
    )
    assert {placed[g] for g in gang} <= switch_a

    # Victims in switch a only: every q2 pod of switch b still runs, those of n0, n1 left.
    left = {name: node for name, node in kube.bound(ns).items() if name in q2_pods}
    assert {n for n, node in q2_pods.items() if node in switch_b} <= set(left)
    assert all(node in switch_b for node in left.values())
    evicted = [n for n, node in q2_pods.items() if node in switch_a]
    notes = [m for n in evicted for m in events(kube, ns, n)]
    assert any(m.startswith("Reclaimed: ") and f"queue {q2}" in m for m in notes)
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == len(evicted)
    assert all(queue_of(kube.get_pod(ns, g)) == q1 for g in gang)


def test_when_no_switch_can_hold_the_gang_even_after_reclaim_nothing_is_evicted_and_it_is_said(
    kube: Kube, topology_reclaimer: Extender
) -> None:
    ns = kube.namespace("topo-reclaim")
    tag = "tn" + ns.rsplit("-", 2)[1] + ns.rsplit("-", 1)[1]
    nodes = [kube.node(f"{tag}-n{i}", cpu="2", memory="8Gi") for i in range(8)]
    kube.hypernode(f"{tag}-sw-a", 1, nodes=nodes[:4], tier_name="switch")
    kube.hypernode(f"{tag}-sw-b", 1, nodes=nodes[4:], tier_name="switch")
    q1, q2 = kube.queue(f"{tag}-q1"), kube.queue(f"{tag}-q2")
    # q2 holds three nodes of each switch (12 cpus); it may give back 4 cpus: a switch
    # freed whole would cost 6, and victims in both switches would be in vain.
    q2_nodes = [*nodes[0:3], *nodes[4:7]]
    q2_pods = [kube.pod(ns, f"b{i}", queue=q2, node=q2_nodes[i // 2]) for i in range(12)]
    kube.wait_running(ns, q2_pods, timeout=60)
    loop = topology_reclaimer
    wait_for(
        lambda: {f"{tag}-sw-a", f"{tag}-sw-b"} <= switches(loop),
        30,
        "the loop's tree to hold both switches",
        interval=0.3,
    )
    kube.podgroup(ns, "gang", 4, q1, network_topology={"mode": "hard", "highestTierAllowed": 1})
    gang = [kube.pod(ns, f"g{i}", cpu="2", queue=q1, group="gang") for i in range(4)]
    note = kube.wait_message(ns, "g0", "ReclaimCannotHelp: ", timeout=60)
    assert "no single domain can hold the gang even after reclaim" in note
    assert "the most any tier-1 domain holds is 3" in note
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == 0
    assert sorted(kube.bound(ns)) == sorted(q2_pods)
    assert all(not kube.get_pod(ns, g).spec.node_name for g in gang)
    assert all(queue_of(kube.get_pod(ns, b)) == q2 for b in q2_pods)


def test_kube_schedulers_preemption_for_a_topology_gang_evicts_in_one_switch_only(
    kube: Kube, stack: Stack
) -> None:
    """One queue, every node busy with a low-priority pod, one of switch b's not
    preemptable: only switch a can be freed whole. kube-scheduler alone would preempt for
    each member on any node; the preempt verb offers victims in switch a only."""
    ns = kube.namespace("topo-preempt")
    tag = "tp" + ns.rsplit("-", 2)[1] + ns.rsplit("-", 1)[1]
    low = kube.priority_class(f"{tag}-low", 10)
    high = kube.priority_class(f"{tag}-high", 1000)
    nodes = [kube.node(f"{tag}-n{i}", cpu="1", memory="8Gi") for i in range(8)]
    switch_a = set(nodes[:4])
    kube.hypernode(f"{tag}-sw-a", 1, nodes=nodes[:4], tier_name="switch")
    kube.hypernode(f"{tag}-sw-b", 1, nodes=nodes[4:], tier_name="switch")
    q = kube.queue(f"{tag}-q")
    busy = {
        kube.pod(
            ns,
            f"low{i}",
            queue=q,
            priority_class=low,
            node=node,
            annotations={"volcano.sh/preemptable": "false"} if i == 4 else None,
        ): node
        for i, node in enumerate(nodes)
    }
    kube.wait_running(ns, list(busy), timeout=60)
    wait_for(
        lambda: {f"{tag}-sw-a", f"{tag}-sw-b"} <= switches(stack.extender),
        30,
        "the extender's tree to hold both switches",
        interval=0.3,
    )
    kube.podgroup(
        ns,
        "gang",
        4,
        q,
        priority_class=high,
        network_topology={"mode": "hard", "highestTierAllowed": 1},
    )
    gang = [kube.pod(ns, f"g{i}", queue=q, group="gang", priority_class=high) for i in range(4)]
    placed = wait_for(
        lambda: (bound := kube.bound(ns)) and all(g in bound for g in gang) and bound,
        120,
        "the whole gang to be bound",
        interval=0.5,
    )
    assert {placed[g] for g in gang} == switch_a
    pods = kube.pods(ns)
    assert all(name in pods for name, node in busy.items() if node not in switch_a)
