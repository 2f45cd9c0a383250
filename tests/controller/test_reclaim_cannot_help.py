"""The reclaim loop tells a starving pod that no eviction can help it, naming what is
missing (``ReclaimCannotHelp``), and evicts nothing; a pod an eviction would help gets its
eviction and no such event."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.controller.decision import decide
from scheduler_core.framework.cannot_help import CANNOT_HELP_REASON, Kind
from tests.builders import (
    Obj,
    claim_volume,
    device_class,
    gpus,
    node,
    pipelined,
    pod,
    podgroup,
    pv,
    pvc,
    queue,
    resource_claim,
    resource_slice,
    run,
    snapshot,
    with_min_resources,
    with_resource_claims,
    with_volumes,
)
from tests.controller.reclaim_world import reclaim_conf
from tests.controller.test_reclaim_loop import Harness

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def starving(preemptor: Obj, *extra: Obj, q2: Obj | None = None) -> list[Obj]:
    """q1 fills n0 and n1 (zone a, two 1-CPU pods on each 2-CPU node); q2's ``preemptor``
    waits: reclaim would evict one of q1's pods for it, were it of any use."""
    objs: list[Obj] = [
        node("n0", cpu="2", labels={ZONE: "a"}),
        node("n1", cpu="2", labels={ZONE: "a"}),
        queue("q1"),
        q2 if q2 is not None else queue("q2"),
    ]
    objs += [pod(f"a{i}", queue="q1", node_name=f"n{i // 2}") for i in range(4)]
    return [*objs, *extra, preemptor]


GPU_CLASS = "gpu.example.com"

#: (case, the waiting pod, more objects, q2 if not the plain one, the kind, words of the note)
CASES: list[tuple[str, Obj, list[Obj], Obj | None, Kind, str]] = [
    (
        "a device class no node publishes",
        with_resource_claims(pod("b0", queue="q2"), "gpu"),
        [resource_claim("gpu"), device_class(GPU_CLASS)],
        None,
        Kind.DEVICES,
        f"ResourceClaim ns/gpu (request req) asks 1 device of class {GPU_CLASS}; "
        "no node publishes one",
    ),
    (
        "more devices than any node publishes",
        with_resource_claims(pod("b0", queue="q2"), "gpu"),
        [
            resource_claim("gpu", count=3),
            device_class(GPU_CLASS),
            resource_slice("n0-gpus", "n0", *gpus(2)),
        ],
        None,
        Kind.DEVICES,
        "asks 3 devices of class gpu.example.com; no node publishes 3 (at most 2 on one node)",
    ),
    (
        "a node selector no node matches",
        pod("b0", queue="q2", node_selector={"disk": "ssd"}),
        [],
        None,
        Kind.PLACEMENT,
        "no node matches its node selector or affinity (2 node(s) didn't match Pod's node "
        "affinity/selector)",
    ),
    (
        "a volume bound in another zone",
        with_volumes(pod("b0", queue="q2"), claim_volume("v", "data")),
        [pvc("data", volume="pv-b"), pv("pv-b", labels={ZONE: "b"})],
        None,
        Kind.VOLUMES,
        "its volumes are bound where no node can reach them (2 node(s) had no available "
        "volume zone)",
    ),
    (
        "a volume bound to a node that is gone",
        with_volumes(pod("b0", queue="q2"), claim_volume("v", "data")),
        [pvc("data", volume="pv-x"), pv("pv-x", hostname="gone")],
        None,
        Kind.VOLUMES,
        "volume node affinity conflict",
    ),
    (
        "a pod larger than any node",
        pod("b0", queue="q2", cpu="3"),
        [],
        None,
        Kind.RESOURCES,
        "no node is large enough for it even when empty (2 Insufficient cpu)",
    ),
    (
        "a taint on every node",
        pod("b0", queue="q2"),
        [],
        None,
        Kind.NODES,
        "no node takes it even with every pod on it evicted",
    ),
    (
        "a pod over its queue's capability alone",
        pod("b0", queue="q2", cpu="1500m"),
        [],
        queue("q2", capability={"cpu": "1"}),
        Kind.CAPABILITY,
        "it asks cpu 1.5 alone, more than queue q2's capability cpu 1",
    ),
]


def _objects(case: tuple[str, Obj, list[Obj], Obj | None, Kind, str]) -> list[Obj]:
    name, preemptor, extra, q2, _, _ = case
    objs = starving(preemptor, *extra, q2=q2)
    if name == "a taint on every node":
        for obj in objs:
            if obj["kind"] == "Node":
                obj["spec"]["taints"] = [{"key": "gpu", "value": "x", "effect": "NoSchedule"}]
        # q1's pods run there already (they tolerate it, or came first): only b0 is judged.
    return objs


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_reason_picked_names_what_is_missing(
    case: tuple[str, Obj, list[Obj], Obj | None, Kind, str],
) -> None:
    decision = decide(snapshot(_objects(case)), reclaim_conf())
    assert decision.evictions == []
    assert "ns/b0" not in decision.not_evaluable
    _, verdict = decision.cannot_help["ns/b0"]
    assert verdict.kind is case[4]
    assert case[5] in verdict.detail


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_loop_evicts_nothing_and_tells_the_pod(
    case: tuple[str, Obj, list[Obj], Obj | None, Kind, str],
) -> None:
    h = Harness()
    h.objs = _objects(case)
    decision = h.loop.run_once()
    assert decision is not None and decision.evictions == []
    assert h.rest.posts == [] and h.reserved == []
    [(name, reason, note)] = h.recorder.events
    assert (name, reason) == ("b0", CANNOT_HELP_REASON)
    assert note.startswith("no eviction can help this pod: ") and case[5] in note


HELPED: list[tuple[str, Callable[[], list[Obj]]]] = [
    ("a plain pod", lambda: starving(pod("b0", queue="q2"))),
    (
        "a node selector one node matches",
        lambda: [
            *starving(pod("b0", queue="q2", node_selector={"disk": "ssd"}))[:-1],
            pod("b0", queue="q2", node_selector={ZONE: "a"}),
        ],
    ),
    (
        "a volume bound in its nodes' zone",
        lambda: starving(
            with_volumes(pod("b0", queue="q2"), claim_volume("v", "data")),
            pvc("data", volume="pv-a"),
            pv("pv-a", labels={ZONE: "a"}),
        ),
    ),
]


@pytest.mark.parametrize("objects", [c[1] for c in HELPED], ids=[c[0] for c in HELPED])
def test_no_such_event_when_an_eviction_would_help(objects: Callable[[], list[Obj]]) -> None:
    h = Harness()
    h.objs = objects()
    decision = h.loop.run_once()
    assert decision is not None and len(decision.evictions) == 1
    assert decision.cannot_help == {}
    assert all(reason != CANNOT_HELP_REASON for _, reason, _ in h.recorder.events)


def test_a_pod_the_queue_rules_block_is_not_told_eviction_cannot_help() -> None:
    """A lender that does not lend is the queue rules' business, not this event's: the pod
    would fit were q1's pods evicted."""
    h = Harness()
    h.objs = [
        *[o for o in starving(pod("b0", queue="q2")) if o["metadata"]["name"] != "q1"],
        queue("q1", reclaimable=False),
    ]
    decision = h.loop.run_once()
    assert decision is not None and decision.evictions == []
    assert decision.cannot_help == {}
    assert h.recorder.events == []


def test_a_job_not_admitted_over_its_queue_capability_is_told() -> None:
    """A gang whose minResources alone pass its queue's capability is never admitted: no
    eviction anywhere changes that, and the pod hears it."""
    group = with_min_resources(podgroup("pg", queue="q2", phase="Pending"), {"cpu": "3"})
    objs = starving(
        pod("b0", group="pg", queue="q2"), group, q2=queue("q2", capability={"cpu": "2"})
    )
    decision = decide(snapshot(objs), reclaim_conf())
    assert decision.evictions == []
    _, verdict = decision.cannot_help["ns/b0"]
    assert verdict.kind is Kind.CAPABILITY
    assert "job ns/pg asks cpu 3 (its minResources) alone, more than queue q2's capability" in (
        verdict.detail
    )


def test_a_pod_the_engine_cannot_judge_hears_not_evaluable_only() -> None:
    """``NotEvaluable`` and ``ReclaimCannotHelp`` are distinct: a class not in the cache is
    the first, never the second."""
    h = Harness()
    h.objs = starving(with_resource_claims(pod("b0", queue="q2"), "gpu"), resource_claim("gpu"))
    h.loop.run_once()
    assert [(n, r) for n, r, _ in h.recorder.events] == [("b0", "NotEvaluable")]


# --- the invariant, over generated waiting pods ---------------------------------------------

VOLUMES: dict[str, list[Obj]] = {
    "none": [],
    "zone-a": [pvc("data", volume="pv-a"), pv("pv-a", labels={ZONE: "a"})],
    "zone-b": [pvc("data", volume="pv-b"), pv("pv-b", labels={ZONE: "b"})],
    "local-n1": [pvc("data", volume="pv-l"), pv("pv-l", hostname="n1")],
}


@settings(max_examples=60, deadline=None)
@given(
    cpu=st.sampled_from(["1", "2", "3"]),
    selector=st.sampled_from([None, {ZONE: "a"}, {ZONE: "b"}, {HOST: "n0"}]),
    tainted=st.sets(st.sampled_from(["n0", "n1"])),
    capability=st.sampled_from([None, "1", "4"]),
    volume=st.sampled_from(sorted(VOLUMES)),
)
def test_cannot_help_is_said_only_when_even_an_empty_cluster_would_not_place_the_pod(
    cpu: str,
    selector: dict[str, str] | None,
    tainted: set[str],
    capability: str | None,
    volume: str,
) -> None:
    """Whenever the loop says no eviction can help, allocate on the same cluster with every
    other pod gone does not place the pod either; and a pod evicted for is never told so."""
    preemptor = pod("b0", queue="q2", cpu=cpu, node_selector=selector)
    if volume != "none":
        preemptor = with_volumes(preemptor, claim_volume("v", "data"))
    q2 = queue("q2", capability={"cpu": capability} if capability else None)
    objs = starving(preemptor, *VOLUMES[volume], q2=q2)
    for obj in objs:
        if obj["kind"] == "Node":
            obj["metadata"]["labels"][HOST] = obj["metadata"]["name"]
            if obj["metadata"]["name"] in tainted:
                obj["spec"]["taints"] = [{"key": "t", "value": "x", "effect": "NoSchedule"}]
    decision = decide(snapshot(objs), reclaim_conf())
    evicted_for = {p.preemptor.key for p in decision.evictions if p.preemptor is not None}
    assert not ("ns/b0" in evicted_for and "ns/b0" in decision.cannot_help)
    if "ns/b0" in decision.cannot_help:
        empty = [o for o in objs if not (o["kind"] == "Pod" and o["metadata"]["name"] != "b0")]
        ssn = run(empty, reclaim_conf())
        assert "ns/b0" not in {t.key for t in ssn.bound} | set(pipelined(ssn))


def test_an_unchanged_cluster_tells_the_pod_once() -> None:
    """A cycle that decided nothing time could change leaves the loop quiet until the
    cluster changes: the pod is not told again (and the recorder folds what repeats)."""
    h = Harness()
    h.objs = starving(pod("b0", queue="q2", node_selector={"disk": "ssd"}))
    h.version = lambda: 7
    assert h.loop.run_once() is not None
    assert h.loop.run_once() is None
    assert [(n, r) for n, r, _ in h.recorder.events] == [("b0", CANNOT_HELP_REASON)]
