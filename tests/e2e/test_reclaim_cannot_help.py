"""A starving pod that no eviction could place, behind the real kube-scheduler with the
reclaim loop on: nothing is evicted, and within the loop's period plus 5 s of kube-scheduler
finding no node for it, the pod has a ``ReclaimCannotHelp`` event naming what is missing.

The cluster is the loop tests' own: two 2-cpu nodes filled by four 1-cpu pods of q1; q2
(same weight) submits one 1-cpu pod, which an eviction would place were it not for what the
case takes away. (The device case, a class no node publishes, sits beside the missing-class
case in ``test_reclaim_volumes.py``.)
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

from tests.e2e import test_reclaim_loop as loops
from tests.e2e import test_reclaim_volumes as volumes
from tests.e2e.conftest import Stack
from tests.e2e.kube import Kube
from tests.e2e.test_reclaim_loop import (
    QUIET,
    first_queue_fills_two_nodes,
    metric,
    told_cannot_help,
)
from tests.e2e.test_reclaim_volumes import claim, pod_with_claim

#: The fixtures of the loop and volume tests, here by name.
reclaimer = loops.reclaimer
storage = volumes.storage

ZONE = "topology.kubernetes.io/zone"


def nothing_evicted(kube: Kube, loop: Any, ns: str, names: list[str]) -> None:
    time.sleep(QUIET / 2)
    assert metric(loop, "queue_extender_reclaim_evictions_total", result="ok") == 0
    assert sorted(kube.bound(ns)) == sorted(names)


def explained(url: str, ns: str, name: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/api/v1/pods/{ns}/{name}/explain", timeout=10) as answer:
        doc: dict[str, Any] = json.loads(answer.read())
        return doc


def test_a_node_selector_no_node_matches_is_told_and_nothing_is_evicted(
    kube: Kube, reclaimer: Any, stack: Stack
) -> None:
    """Also asked of another replica (the stack's extender, which does not run this loop):
    its explain answer says what the loop's event says."""
    ns, _tag, _q1, q2, names = first_queue_fills_two_nodes(kube)
    loop = reclaimer()
    kube.pod(ns, "b0", queue=q2, node_selector={"disk": "ssd"})
    note = told_cannot_help(kube, ns, "b0")
    assert "no eviction can help this pod: no node matches its node selector or affinity" in note
    assert "2 node(s) didn't match Pod's node affinity/selector" in note
    nothing_evicted(kube, loop, ns, names)
    steps = {step["name"]: step for step in explained(stack.extender.url, ns, "b0")["steps"]}
    assert note == f"ReclaimCannotHelp: {steps['eviction-helps']['detail']}"


def test_a_volume_bound_in_another_zone_is_told_and_nothing_is_evicted(
    kube: Kube, reclaimer: Any, storage: Any, api: Any
) -> None:
    ns, tag, _q1, q2, names = first_queue_fills_two_nodes(kube)
    for i in range(2):
        kube.core.patch_node(f"{tag}-n{i}", {"metadata": {"labels": {ZONE: "a"}}})
    storage.local_volume(f"{tag}-pv", "b", ns, "data", key=ZONE)
    claim(api, ns, "data", storage_class="", volume=f"{tag}-pv")
    loop = reclaimer()
    pod_with_claim(api, ns, "b0", q2, "data")
    note = told_cannot_help(kube, ns, "b0")
    assert "its volumes are bound where no node can reach them" in note
    assert "2 node(s) had volume node affinity conflict" in note
    nothing_evicted(kube, loop, ns, names)
