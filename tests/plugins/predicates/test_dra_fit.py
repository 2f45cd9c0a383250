"""The DynamicResources filter for claims not yet allocated: kube-scheduler's allocator
simulated on one node for the shapes the engine models, *not evaluable* for the others."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework.status import Code, Status
from scheduler_core.plugins.predicates.dra import ERR_REASON_CANNOT_ALLOCATE
from tests.builders import (
    HELM_CONF,
    Obj,
    configuration,
    device,
    device_class,
    node,
    pod,
    resource_slice,
    session,
    task_of,
    with_resource_claims,
)

GPU = "gpu.example.com"
CONF = configuration(HELM_CONF, "reclaim")


def request(
    name: str = "req",
    *,
    count: int = 1,
    mode: str = "ExactCount",
    selectors: Iterable[str] = (),
    device_class_name: str = GPU,
    **extra: Any,
) -> Obj:
    exactly: Obj = {"deviceClassName": device_class_name, "allocationMode": mode, **extra}
    if mode == "ExactCount":
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    return {"name": name, "exactly": exactly}


def claim(name: str, *requests: Obj, constraints: list[Obj] | None = None) -> Obj:
    devices: Obj = {"requests": list(requests or [request()])}
    if constraints:
        devices["constraints"] = constraints
    return {
        "kind": "ResourceClaim",
        "apiVersion": "resource.k8s.io/v1",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": {"devices": devices},
        "status": {},
    }


def template(name: str, *requests: Obj) -> Obj:
    return {
        "kind": "ResourceClaimTemplate",
        "apiVersion": "resource.k8s.io/v1",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": {"spec": {"devices": {"requests": list(requests or [request()])}}},
    }


def allocated(name: str, devices: Iterable[str], node_name: str, *reserved_for: str) -> Obj:
    """A claim holding ``devices`` of ``node_name``'s pool, reserved for pods (by uid)."""
    obj = claim(name)
    obj["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "req", "driver": GPU, "pool": node_name, "device": d}
                    for d in devices
                ]
            }
        },
        "reservedFor": [{"resource": "pods", "name": u, "uid": u} for u in reserved_for],
    }
    return obj


def models(*names: str) -> list[Obj]:
    return [device(f"gpu-{i}", {"model": m}) for i, m in enumerate(names)]


def verdict(objects: list[Obj], key: str = "ns/p", node_name: str = "n1") -> Status | None:
    ssn = session(objects, CONF)
    task = task_of(ssn, key)
    not_evaluable = ssn.pre_predicate(task)
    if not_evaluable is not None:
        return Status(Code.NOT_EVALUABLE, [not_evaluable])
    return ssn.predicate(task, ssn.nodes[node_name])


def cluster(*devices: Obj, held: Iterable[str] = (), classes: Iterable[Obj] = ()) -> list[Obj]:
    """n1 publishing ``devices``; a running pod ``holder`` holds the ``held`` ones."""
    objs: list[Obj] = [
        node("n1"),
        *(list(classes) or [device_class(GPU)]),
        resource_slice("s1", "n1", *devices),
    ]
    held = list(held)
    if held:
        objs.append(with_resource_claims(pod("holder", node_name="n1"), "held"))
        objs.append(allocated("held", held, "n1", "ns-holder"))
    return objs


def pending(*claims: Obj, templates: Iterable[Obj] = ()) -> list[Obj]:
    refs = [c["metadata"]["name"] for c in claims]
    refs += [f"template:{t['metadata']['name']}" for t in templates]
    return [with_resource_claims(pod("p"), *refs), *claims, *templates]


FOUR = models("a100", "a100", "h100", "h100")
H100 = 'device.attributes["gpu.example.com"].model == "h100"'


@pytest.mark.parametrize(
    ("objects", "fits"),
    [
        (cluster(*FOUR, held=["gpu-0", "gpu-1"]) + pending(claim("c", request(count=2))), True),
        (cluster(*FOUR, held=["gpu-0", "gpu-1"]) + pending(claim("c", request(count=3))), False),
        (
            cluster(*FOUR, held=["gpu-2"])
            + pending(claim("c", request(count=2, selectors=[H100]))),
            False,
        ),
        (cluster(*FOUR) + pending(claim("c", request(count=2, selectors=[H100]))), True),
        # A class's own selectors narrow the devices as a request's do.
        (
            cluster(*FOUR, classes=[device_class(GPU, H100)])
            + pending(claim("c", request(count=3))),
            False,
        ),
        # All: every matching device of the node, all of them free.
        (cluster(*FOUR) + pending(claim("c", request(mode="All"))), True),
        (cluster(*FOUR, held=["gpu-3"]) + pending(claim("c", request(mode="All"))), False),
        (
            cluster(*FOUR, held=["gpu-0"])
            + pending(claim("c", request(mode="All", selectors=[H100]))),
            True,
        ),
        (
            cluster(*models("a100")) + pending(claim("c", request(mode="All", selectors=[H100]))),
            False,
        ),
        # Two requests whose candidates overlap: the allocator's search finds the way.
        (
            cluster(*models("h100", "a100"))
            + pending(claim("c", request("any"), request("h", selectors=[H100]))),
            True,
        ),
        (
            cluster(*models("h100", "a100"))
            + pending(claim("c", request("h1", selectors=[H100]), request("h2", selectors=[H100]))),
            False,
        ),
        # Two claims of one pod never get the same device.
        (cluster(*models("a100")) + pending(claim("c1"), claim("c2")), False),
        (cluster(*models("a100", "a100")) + pending(claim("c1"), claim("c2")), True),
        # A template's claim is judged before it is made.
        (cluster(*FOUR) + pending(templates=[template("t", request(count=4))]), True),
        (
            cluster(*FOUR, held=["gpu-0"]) + pending(templates=[template("t", request(count=4))]),
            False,
        ),
        # No slice on the node: nothing to allocate from.
        ([node("n1"), device_class(GPU), *pending(claim("c"))], False),
    ],
)
def test_allocation_is_judged_as_the_allocator_decides(objects: list[Obj], fits: bool) -> None:
    found = verdict(objects)
    if fits:
        assert found is None
    else:
        assert found is not None and found.code is Code.UNSCHEDULABLE
        assert found.reasons == [ERR_REASON_CANNOT_ALLOCATE]


@pytest.mark.parametrize(
    ("objects", "reason"),
    [
        (
            cluster(*FOUR)
            + pending(
                claim(
                    "c",
                    {"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": GPU}]},
                )
            ),
            "prioritized list (firstAvailable)",
        ),
        (cluster(*FOUR) + pending(claim("c", request(adminAccess=True))), "admin access"),
        (
            cluster(*FOUR)
            + pending(
                claim(
                    "c",
                    request("a"),
                    request("b"),
                    constraints=[{"matchAttribute": "gpu.example.com/model"}],
                )
            ),
            "constraints across its requests (matchAttribute)",
        ),
        (
            cluster(*FOUR, classes=[device_class(GPU, "device.driver ==")]) + pending(claim("c")),
            "does not compile",
        ),
        (
            cluster(*FOUR) + pending(claim("c", request(selectors=["semver('1.0.0') == 1"]))),
            "request req: selector #0 does not compile",
        ),
        ([*cluster(*FOUR), with_resource_claims(pod("p"), "missing")], "not in the cache"),
        (
            [*cluster(*FOUR), with_resource_claims(pod("p"), "template:missing")],
            "ResourceClaimTemplate ns/missing not in the cache",
        ),
        (cluster(*FOUR) + pending(claim("c"), claim("d", request(device_class_name="x"))), "x"),
    ],
)
def test_shapes_the_engine_does_not_model_are_not_evaluable(
    objects: list[Obj], reason: str
) -> None:
    found = verdict(objects)
    assert found is not None and found.code is Code.NOT_EVALUABLE
    assert reason in " ".join(found.reasons)


def test_partitionable_and_conditioned_devices_are_not_evaluable_on_their_node() -> None:
    partition = device("gpu-0")
    partition["consumesCounters"] = [{"counterSet": "gpu", "counters": {"mem": {"value": "1"}}}]
    conditioned = device("gpu-0")
    conditioned["bindingConditions"] = ["ready"]
    for dev, why in ((partition, "partitionable"), (conditioned, "binding conditions")):
        found = verdict(cluster(dev) + pending(claim("c")))
        assert found is not None and found.code is Code.NOT_EVALUABLE
        assert why in found.reasons[0]


def test_selector_failing_on_a_device_is_not_evaluable_there() -> None:
    found = verdict(
        cluster(device("bare"), *FOUR[:1]) + pending(claim("c", request(selectors=[H100])))
    )
    assert found is not None and found.code is Code.NOT_EVALUABLE
    assert "no such key" in found.reasons[0] or "model" in found.reasons[0]


# --- what victims release ------------------------------------------------------------------


def shared_cluster() -> list[Obj]:
    """n1 with two GPUs: ``solo`` (held by v1 alone) and ``duo`` (shared by v2 and v3)."""
    return [
        node("n1"),
        device_class(GPU),
        resource_slice("s1", "n1", *models("a100", "a100")),
        with_resource_claims(pod("v1", node_name="n1"), "solo"),
        with_resource_claims(pod("v2", node_name="n1"), "duo"),
        with_resource_claims(pod("v3", node_name="n1"), "duo"),
        allocated("solo", ["gpu-0"], "n1", "ns-v1"),
        allocated("duo", ["gpu-1"], "n1", "ns-v2", "ns-v3"),
        *pending(claim("c")),
    ]


@pytest.mark.parametrize(
    ("victims", "fits"),
    [
        ((), False),
        (("ns/v1",), True),  # its claim was its own: the device is free
        (("ns/v2",), False),  # v3 still uses the shared claim
        (("ns/v2", "ns/v3"), True),  # every user of the shared claim went
    ],
)
def test_a_claim_is_released_only_when_every_pod_using_it_leaves(
    victims: tuple[str, ...], fits: bool
) -> None:
    ssn = session(shared_cluster(), CONF)
    preemptor = task_of(ssn, "ns/p")
    copy = ssn.nodes["n1"].copy_sharing_tasks()
    for key in victims:
        copy.remove_task(task_of(ssn, key))
    assert (ssn.predicate(preemptor, copy) is None) is fits


def test_a_claim_reserved_for_a_pod_not_on_the_node_is_never_released() -> None:
    # The pod was reserved by kube-scheduler and is not bound yet: its devices stay taken.
    objects = [
        node("n1"),
        device_class(GPU),
        resource_slice("s1", "n1", *models("a100")),
        allocated("inflight", ["gpu-0"], "n1", "uid-not-in-cache"),
        *pending(claim("c")),
    ]
    assert verdict(objects) is not None


# --- a reference allocator -----------------------------------------------------------------


def reference_fits(
    device_models: list[str], held: set[int], requests: list[tuple[str | None, int, bool]]
) -> bool:
    """Try every assignment of free devices to the requests (model None: any; the flag: All
    mode), as kube-scheduler's allocator searches them."""
    free = [i for i in range(len(device_models)) if i not in held]
    units: list[set[int]] = []
    for model, count, all_mode in requests:
        matching = {i for i, m in enumerate(device_models) if model is None or m == model}
        if all_mode:
            if not matching or matching & held:
                return False
            units.extend({i} for i in matching)
        else:
            units.extend(matching for _ in range(count))
    if len(units) > len(free):
        return False
    return any(
        all(d in unit for d, unit in zip(choice, units, strict=True))
        for choice in itertools.permutations(free, len(units))
    )


@settings(max_examples=60, deadline=None)
@given(
    device_models=st.lists(st.sampled_from(["a100", "h100"]), min_size=1, max_size=5),
    held_mask=st.lists(st.booleans(), min_size=5, max_size=5),
    requests=st.lists(
        st.tuples(st.sampled_from([None, "a100", "h100"]), st.integers(1, 3), st.booleans()),
        min_size=1,
        max_size=3,
    ),
)
def test_the_engine_allocates_exactly_when_a_reference_allocator_can(
    device_models: list[str],
    held_mask: list[bool],
    requests: list[tuple[str | None, int, bool]],
) -> None:
    held = {i for i in range(len(device_models)) if held_mask[i]}
    objs = cluster(*models(*device_models), held=[f"gpu-{i}" for i in sorted(held)])
    reqs = [
        request(
            f"r{i}",
            count=count,
            mode="All" if all_mode else "ExactCount",
            selectors=[f'device.attributes["{GPU}"].model == "{model}"'] if model else [],
        )
        for i, (model, count, all_mode) in enumerate(requests)
    ]
    found = verdict(objs + pending(claim("c", *reqs)))
    assert (found is None) is reference_fits(device_models, held, requests)


@settings(max_examples=40, deadline=None)
@given(
    holders=st.lists(st.frozensets(st.integers(0, 3), max_size=3), min_size=1, max_size=4),
    victims=st.frozensets(st.integers(0, 3)),
    count=st.integers(1, 3),
)
def test_after_evictions_the_engine_allocates_exactly_when_a_reference_allocator_can(
    holders: list[frozenset[int]], victims: frozenset[int], count: int
) -> None:
    """Device i is held by claim c<i>, reserved for the pods ``holders[i]`` (shared when
    several); once ``victims`` leave, a device is free when every pod of its claim left."""
    objects: list[Obj] = [
        node("n1"),
        device_class(GPU),
        resource_slice("s1", "n1", *models(*["a100"] * len(holders))),
    ]
    for v in range(4):
        held = [f"c{i}" for i, pods in enumerate(holders) if v in pods]
        victim = pod(f"v{v}", node_name="n1")
        objects.append(with_resource_claims(victim, *held) if held else victim)
    for i, pods in enumerate(holders):
        if pods:
            objects.append(
                allocated(f"c{i}", [f"gpu-{i}"], "n1", *(f"ns-v{p}" for p in sorted(pods)))
            )
    objects += pending(claim("want", request(count=count)))
    ssn = session(objects, CONF)
    copy = ssn.nodes["n1"].copy_sharing_tasks()
    for v in victims:
        copy.remove_task(task_of(ssn, f"ns/v{v}"))
    free = sum(1 for pods in holders if pods <= victims)
    assert (ssn.predicate(task_of(ssn, "ns/p"), copy) is None) is (count <= free)
