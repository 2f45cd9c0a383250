"""The network topology fed from a real cluster: HyperNodes read through the informers (the
CRD is served), a PodGroup's networkTopology reaching the engine, and a HyperNode edited to
refer to itself refused with an event on it while the last good tree keeps serving."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from kubernetes import client

from tests.e2e.conftest import Stack
from tests.e2e.controlplane import wait_for
from tests.e2e.kube import Kube


def topology(stack: Stack) -> dict[str, Any]:
    with urllib.request.urlopen(f"{stack.extender.url}/api/v1/topology", timeout=10) as answer:
        doc: dict[str, Any] = json.loads(answer.read())
        return doc


def domains(doc: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {d["name"]: (d["tier"], d["nodeCount"]) for t in doc["tiers"] for d in t["domains"]}


def refusal_events(kube: Kube, name: str) -> list[Any]:
    events = client.EventsV1Api(kube.api).list_namespaced_event(
        "default", field_selector=f"regarding.name={name}"
    )
    return [
        e
        for e in events.items
        if e.reporting_controller == "kube-queue-extender" and e.reason == "TopologyRefused"
    ]


def test_a_self_referring_hypernode_is_refused_with_an_event_and_the_tree_keeps_serving(
    kube: Kube, stack: Stack
) -> None:
    for i in range(4):
        kube.node(f"topo-src-n{i}")
    kube.hypernode("topo-src-leaf-a", 1, nodes=["topo-src-n0", "topo-src-n1"], tier_name="leaf")
    kube.hypernode("topo-src-leaf-b", 1, nodes=["topo-src-n2", "topo-src-n3"], tier_name="leaf")
    kube.hypernode(
        "topo-src-spine", 2, hypernodes=["topo-src-leaf-a", "topo-src-leaf-b"], tier_name="spine"
    )
    expected = {
        "topo-src-leaf-a": (1, 2),
        "topo-src-leaf-b": (1, 2),
        "topo-src-spine": (2, 4),
    }
    good = wait_for(
        lambda: (doc := topology(stack)) and domains(doc) == expected and doc,
        30,
        "the HyperNodes to reach the extender's tree",
        interval=0.3,
    )
    assert good["source"] == "hypernodes" and good["refusal"] is None

    kube.hypernode(
        "topo-src-spine",
        2,
        hypernodes=["topo-src-leaf-a", "topo-src-leaf-b", "topo-src-spine"],
        tier_name="spine",
    )
    refused = wait_for(
        lambda: (doc := topology(stack))["refusal"] and doc,
        30,
        "the self-referring HyperNode to be refused",
        interval=0.3,
    )
    assert refused["refusal"]["problems"] == {
        "topo-src-spine": "cycle: topo-src-spine → topo-src-spine"
    }
    assert domains(refused) == expected  # the last good tree keeps serving
    event = wait_for(
        lambda: refusal_events(kube, "topo-src-spine"),
        30,
        "a TopologyRefused event on the HyperNode",
        interval=0.5,
    )[0]
    assert event.type == "Warning"
    assert event.regarding.kind == "HyperNode"
    assert "cycle: topo-src-spine → topo-src-spine" in event.note

    kube.hypernode("topo-src-spine", 2, hypernodes=["topo-src-leaf-a"], tier_name="spine")
    healed = wait_for(
        lambda: (doc := topology(stack))["refusal"] is None and doc,
        30,
        "the mended HyperNode to be accepted",
        interval=0.3,
    )
    assert domains(healed)["topo-src-spine"] == (2, 2)
