"""The reclaim loop never evicts for a waiting pod the engine cannot judge (a claim not
bound, a device claim whose class it does not know, a volume type it does not model) and
says so on the pod with a ``NotEvaluable`` event; a pod whose bound volume pins it to a node
is judged, and evictions happen only on that node."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.controller.decision import decide
from tests.builders import (
    Obj,
    claim_volume,
    node,
    pod,
    pv,
    pvc,
    queue,
    resource_claim,
    snapshot,
    storage_class,
    with_resource_claims,
    with_volumes,
)
from tests.controller.reclaim_world import reclaim_conf
from tests.controller.test_reclaim_loop import Harness

HOST = "kubernetes.io/hostname"


def starving(preemptor: Obj, *extra: Obj) -> list[Obj]:
    """q1 fills n0 and n1 (two pods each); q2's ``preemptor`` waits: reclaim would evict one
    of q1's pods for it, were it judged."""
    objs: list[Obj] = [
        node("n0", cpu="2", labels={HOST: "n0"}),
        node("n1", cpu="2", labels={HOST: "n1"}),
        queue("q1"),
        queue("q2"),
    ]
    objs += [pod(f"a{i}", queue="q1", node_name=f"n{i // 2}") for i in range(4)]
    return [*objs, *extra, preemptor]


UNJUDGED = [
    (
        "unbound claim (WaitForFirstConsumer)",
        [storage_class("fast"), pvc("data", storage_class="fast")],
        lambda p: with_volumes(p, claim_volume("v", "data")),
        "PersistentVolumeClaim ns/data is not bound (storage class fast, WaitForFirstConsumer)",
    ),
    (
        "device claim of a class the cache does not hold",
        [resource_claim("gpu")],
        lambda p: with_resource_claims(p, "gpu"),
        "ResourceClaim ns/gpu: request req: DeviceClass gpu.example.com not in the cache",
    ),
    (
        "inline volume type not modelled",
        [],
        lambda p: with_volumes(p, {"name": "d", "awsElasticBlockStore": {"volumeID": "x"}}),
        "volume d of type awsElasticBlockStore",
    ),
]


@pytest.mark.parametrize(
    ("extra", "shape", "what"), [c[1:] for c in UNJUDGED], ids=[c[0] for c in UNJUDGED]
)
def test_the_loop_never_evicts_for_a_pod_it_cannot_judge_and_says_why(
    extra: list[Obj], shape: Callable[[Obj], Obj], what: str
) -> None:
    h = Harness()
    h.objs = starving(shape(pod("b0", queue="q2")), *extra)
    decision = h.loop.run_once()
    assert decision is not None and decision.evictions == []
    assert h.rest.posts == [] and h.reserved == []
    [(name, reason, note)] = h.recorder.events
    assert (name, reason) == ("b0", "NotEvaluable")
    assert what in note and note.startswith("not evicting for this pod")


def test_the_same_pod_judged_is_evicted_for() -> None:
    """The control: without its volume, the same waiting pod gets its reclaim."""
    h = Harness()
    h.objs = starving(pod("b0", queue="q2"))
    decision = h.loop.run_once()
    assert decision is not None and len(decision.evictions) == 1
    assert all(reason != "NotEvaluable" for _, reason, _ in h.recorder.events)


def test_a_bound_local_volume_limits_evictions_to_its_node() -> None:
    h = Harness()
    h.objs = starving(
        with_volumes(pod("b0", queue="q2"), claim_volume("v", "data")),
        pvc("data", volume="pv-1"),
        pv("pv-1", hostname="n1"),
    )
    decision = h.loop.run_once()
    assert decision is not None and len(decision.evictions) == 1
    [planned] = decision.evictions
    assert planned.node == "n1" and planned.victim.name in {"a2", "a3"}
    assert all(reason != "NotEvaluable" for _, reason, _ in h.recorder.events)


def test_dry_run_also_reports_not_evaluable() -> None:
    h = Harness(dry_run=True)
    h.objs = starving(
        with_volumes(pod("b0", queue="q2"), claim_volume("v", "missing")),
    )
    h.loop.run_once()
    assert [(n, r) for n, r, _ in h.recorder.events] == [("b0", "NotEvaluable")]


# --- the invariant, over generated volume mixes -----------------------------------------------

#: A volume of the waiting pod, and the objects it needs: (pod volume, cluster objects).
VOLUME_KINDS: dict[str, tuple[Obj | None, list[Obj]]] = {
    "emptyDir": ({"name": "e", "emptyDir": {}}, []),
    "configMap": ({"name": "c", "configMap": {"name": "x"}}, []),
    "gcePersistentDisk": ({"name": "g", "gcePersistentDisk": {"pdName": "d"}}, []),
    "unbound": (claim_volume("u", "unbound"), [storage_class("fast"), pvc("unbound")]),
    "missing": (claim_volume("m", "missing"), []),
    "local-n0": (claim_volume("l0", "l0"), [pvc("l0", volume="pv-l0"), pv("pv-l0", hostname="n0")]),
    "local-n1": (claim_volume("l1", "l1"), [pvc("l1", volume="pv-l1"), pv("pv-l1", hostname="n1")]),
    "network": (
        claim_volume("nw", "nw"),
        [pvc("nw", volume="pv-nw"), pv("pv-nw", source={"nfs": {"server": "s", "path": "/"}})],
    ),
    "claim": (None, [resource_claim("gpu")]),  # a device claim, not a volume
}

JUDGED = {"emptyDir", "configMap", "local-n0", "local-n1", "network"}


@settings(max_examples=40, deadline=None)
@given(st.sets(st.sampled_from(sorted(VOLUME_KINDS)), max_size=4))
def test_nothing_is_ever_evicted_for_a_pod_that_is_not_evaluable(kinds: set[str]) -> None:
    """Whatever mix of volumes the waiting pod has: evictions happen only for a pod the
    engine judged, only on a node all its local volumes allow, and a pod it could not judge
    is reported instead."""
    preemptor = pod("b0", queue="q2")
    extra: list[Obj] = []
    volumes: list[Obj] = []
    for kind in sorted(kinds):
        volume, objects = VOLUME_KINDS[kind]
        extra += objects
        if kind == "claim":
            preemptor = with_resource_claims(preemptor, "gpu")
        elif volume is not None:
            volumes.append(volume)
    preemptor = with_volumes(preemptor, *volumes)
    decision = decide(snapshot(starving(preemptor, *extra)), reclaim_conf())
    if kinds <= JUDGED:
        assert "ns/b0" not in decision.not_evaluable
        pinned = {k.removeprefix("local-") for k in kinds if k.startswith("local-")}
        if len(pinned) > 1:
            assert decision.evictions == []  # no node holds both local volumes
        for planned in decision.evictions:
            assert not pinned or {planned.node} == pinned
    else:
        assert decision.evictions == []
        assert "ns/b0" in decision.not_evaluable
