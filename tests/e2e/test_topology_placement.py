"""A gang that asks for one network domain lands in one, behind the real kube-scheduler:
the leaf switch that holds every member (HyperNodes, then node-label levels with no HyperNode
CRD installed), and with a hard request that no leaf holds, no member at all, each told why."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from scheduler_core.conf import DEFAULT_CONF
from scheduler_core.controller.podgroup_status import TOPOLOGY_DOMAIN_ANNOTATION
from tests.e2e.conftest import Stack
from tests.e2e.controlplane import ControlPlane, Extender, Process, wait_for
from tests.e2e.kube import GROUP, VERSION, Kube

HARD_LEAF = {"mode": "hard", "highestTierAllowed": 1}


def tree(url: str) -> dict[str, int]:
    """Domain name → node count, as the extender's tree has it now."""
    with urllib.request.urlopen(f"{url}/api/v1/topology", timeout=10) as answer:
        doc: dict[str, Any] = json.loads(answer.read())
    return {d["name"]: d["nodeCount"] for t in doc["tiers"] for d in t["domains"]}


def switches(kube: Kube, prefix: str, **labels_of: dict[str, str]) -> tuple[list[str], list[str]]:
    """Eight 4-CPU nodes, ``{prefix}-a0..a3`` in switch A and ``{prefix}-b0..b3`` in B,
    labelled as ``labels_of[a|b]`` says."""
    a = [kube.node(f"{prefix}-a{i}", "4", "16Gi", 110, **labels_of.get("a", {})) for i in range(4)]
    b = [kube.node(f"{prefix}-b{i}", "4", "16Gi", 110, **labels_of.get("b", {})) for i in range(4)]
    return a, b


def annotation(kube: Kube, namespace: str, name: str) -> str | None:
    pg = kube.custom.get_namespaced_custom_object(GROUP, VERSION, namespace, "podgroups", name)
    value = (pg["metadata"].get("annotations") or {}).get(TOPOLOGY_DOMAIN_ANNOTATION)
    return str(value) if value is not None else None


def test_a_four_pod_gang_lands_in_the_switch_with_room_for_all_of_it(
    kube: Kube, stack: Stack
) -> None:
    a, b = switches(kube, "topo-pl")
    kube.hypernode("topo-pl-leaf-a", 1, nodes=a, tier_name="leaf")
    kube.hypernode("topo-pl-leaf-b", 1, nodes=b, tier_name="leaf")
    wait_for(
        lambda: {"topo-pl-leaf-a", "topo-pl-leaf-b"} <= set(tree(stack.extender.url)),
        30,
        "both switches in the extender's tree",
        interval=0.3,
    )
    ns = kube.namespace("topo-pl")
    kube.queue("topo-pl-q")
    # one node of switch A is busy: switch A holds 3 of the 4 members, switch B all 4
    kube.pod(ns, "busy", cpu="1", node=a[1], scheduler="default-scheduler")
    kube.wait_running(ns, ["busy"])
    time.sleep(1)  # the extender's cache sees the busy pod before the gang is filtered
    kube.podgroup(ns, "train", 4, "topo-pl-q", network_topology=HARD_LEAF)
    for i in range(4):
        kube.pod(ns, f"train-{i}", cpu="4", group="train")
    wait_for(
        lambda: len({n: v for n, v in kube.bound(ns).items() if n != "busy"}) == 4,
        60,
        "all four members to bind",
    )
    placed = {n: v for n, v in kube.bound(ns).items() if n != "busy"}
    assert set(placed.values()) == set(b), placed
    assert wait_for(
        lambda: annotation(kube, ns, "train"), 30, "the PodGroup to carry its domain"
    ) == ("topo-pl-leaf-b")


def test_a_hard_gang_no_switch_holds_stays_pending_whole_and_is_told_why(
    kube: Kube, stack: Stack
) -> None:
    a, b = switches(kube, "topo-none")
    kube.hypernode("topo-none-leaf-a", 1, nodes=a, tier_name="leaf")
    kube.hypernode("topo-none-leaf-b", 1, nodes=b, tier_name="leaf")
    wait_for(
        lambda: {"topo-none-leaf-a", "topo-none-leaf-b"} <= set(tree(stack.extender.url)),
        30,
        "both switches in the extender's tree",
        interval=0.3,
    )
    ns = kube.namespace("topo-none")
    kube.queue("topo-none-q")
    # five members of 4 CPU: a switch of four 4-CPU nodes holds four
    kube.podgroup(ns, "wide", 5, "topo-none-q", network_topology=HARD_LEAF)
    for i in range(5):
        kube.pod(ns, f"wide-{i}", cpu="4", group="wide")
    message = kube.wait_message(ns, "wide-0", "asks for one network domain", timeout=60)
    assert "needs 5 pods" in message, message
    assert "the most any tier-1 domain holds is 4" in message, message
    time.sleep(3)
    assert kube.bound(ns) == {}, "no member may start when no switch holds the whole gang"


# --- the HyperNode CRD installed while the extender runs -----------------------------------


def test_hypernodes_whose_crd_is_installed_after_the_extender_started_are_read(
    control_plane: ControlPlane, kube: Kube, stack: Stack
) -> None:
    """An extender started on a cluster without the HyperNode CRD is ready without it, and
    asks discovery again (every `--discovery-interval`, here 2 s): once the CRD is installed,
    it watches HyperNodes and its tree holds them, with no restart."""
    control_plane.delete_crd("hypernodes.topology.volcano.sh")
    try:
        extender = control_plane.start_extender(
            "late-crd-extender",
            ["--scheduler-names", "late-crd-scheduler", "--discovery-interval", "2"],
        ).wait_ready()
        try:
            control_plane.install_crds()
            a, _ = switches(kube, "topo-late")
            kube.hypernode("topo-late-leaf-a", 1, nodes=a, tier_name="leaf")
            wait_for(
                lambda: tree(extender.url).get("topo-late-leaf-a") == 4,
                60,
                "the HyperNode in the tree of an extender started before its CRD",
                interval=1,
            )
        finally:
            extender.process.stop()
    finally:
        control_plane.install_crds()


# --- label levels, no HyperNode CRD --------------------------------------------------------

LABELS_SCHEDULER = "topo-labels-scheduler"


@pytest.fixture
def labels_stack(control_plane: ControlPlane, stack: Stack, tmp_path: Path) -> Iterator[Extender]:
    """The HyperNode CRD removed, and an extender of its own that builds the tree from node
    labels (``topo-spine`` → ``topo-leaf``), behind a kube-scheduler profile of its own."""
    control_plane.delete_crd("hypernodes.topology.volcano.sh")
    conf = tmp_path / "labels.conf"
    conf.write_text(
        DEFAULT_CONF + "networkTopology:\n  labelLevels: [topo-spine, topo-leaf]\n",
        encoding="utf-8",
    )
    processes: list[Process] = []
    try:
        extender = control_plane.start_extender(
            "labels-extender",
            ["--conf", str(conf), "--scheduler-names", LABELS_SCHEDULER],
        ).wait_ready()
        processes.append(extender.process)
        processes.append(
            control_plane.start_scheduler(
                "labels-scheduler", [LABELS_SCHEDULER], extender.url + "/"
            )
        )
        yield extender
    finally:
        for process in reversed(processes):
            process.stop()
        control_plane.install_crds()


def lands_in_switch_b(
    kube: Kube, extender: Extender, prefix: str, make_gang: Callable[[str, str], None]
) -> None:
    """Two label-levelled switches of four 4-CPU nodes, one CPU taken on a node of switch A;
    ``make_gang(namespace, queue)`` makes a 4-member gang of 4-CPU pods (each needs a whole
    node) behind the label-levels scheduler: all four bind, and all in switch B."""
    a, b = switches(
        kube,
        prefix,
        a={"topo-spine": "s", "topo-leaf": f"{prefix}-a"},
        b={"topo-spine": "s", "topo-leaf": f"{prefix}-b"},
    )
    wait_for(
        lambda: {f"s/{prefix}-a", f"s/{prefix}-b"} <= set(tree(extender.url)),
        30,
        "both switches in the label-built tree",
        interval=0.3,
    )
    ns = kube.namespace(prefix)
    kube.queue(f"{prefix}-q")
    kube.pod(ns, "busy", cpu="1", node=a[2], scheduler="default-scheduler")
    kube.wait_running(ns, ["busy"])
    time.sleep(1)
    make_gang(ns, f"{prefix}-q")
    wait_for(
        lambda: len({n: v for n, v in kube.bound(ns).items() if n != "busy"}) == 4,
        60,
        "all four members to bind",
    )
    placed = {n: v for n, v in kube.bound(ns).items() if n != "busy"}
    assert set(placed.values()) == set(b), placed


def test_the_same_placement_from_node_label_levels_without_the_hypernode_crd(
    kube: Kube, labels_stack: Extender
) -> None:
    def volcano_gang(ns: str, queue: str) -> None:
        kube.podgroup(ns, "train", 4, queue, network_topology=HARD_LEAF)
        for i in range(4):
            kube.pod(ns, f"train-{i}", cpu="4", group="train", scheduler=LABELS_SCHEDULER)

    lands_in_switch_b(kube, labels_stack, "topo-lbl", volcano_gang)


def test_a_native_podgroups_topology_key_naming_a_level_keeps_the_gang_in_one_switch(
    kube: Kube, labels_stack: Extender
) -> None:
    """A Kubernetes PodGroup asks with ``schedulingConstraints.topology``: its key is one of
    the label levels, so the gang is placed as a Volcano PodGroup's hard request would be."""
    if not kube.native_served():
        pytest.fail("the control plane does not serve scheduling.k8s.io/v1alpha2 PodGroups")

    def native_gang(ns: str, queue: str) -> None:
        kube.native_podgroup(ns, "train", 4, queue=queue, topology_keys=["topo-leaf"])
        for i in range(4):
            kube.pod(
                ns, f"train-{i}", cpu="4", scheduling_group="train", scheduler=LABELS_SCHEDULER
            )

    lands_in_switch_b(kube, labels_stack, "topo-nat", native_gang)
