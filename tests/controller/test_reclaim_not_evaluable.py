"""The reclaim loop never evicts for a waiting pod the engine cannot judge (a claim not
bound, a device claim not allocated, a volume type it does not model) and says so on the
pod with a ``NotEvaluable`` event; a pod whose bound volume pins it to a node is judged, and
evictions happen only on that node."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.builders import (
    Obj,
    claim_volume,
    node,
    pod,
    pv,
    pvc,
    queue,
    resource_claim,
    storage_class,
    with_resource_claims,
    with_volumes,
)
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
        "device claim not allocated",
        [resource_claim("gpu")],
        lambda p: with_resource_claims(p, "gpu"),
        "ResourceClaim ns/gpu is not allocated",
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
