"""The cache follows ResourceSlices and DeviceClasses: a node's allocatable gains its DRA
devices per quota name, an allocated claim is charged once to the pod that reserved it
first, and what cannot be judged is reported, never counted."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from scheduler_core.api.devices import DeviceQuotaNames
from scheduler_core.cache.state import ClusterState
from tests.builders import (
    device,
    device_class,
    gpus,
    node,
    pod,
    queue,
    resource_claim,
    resource_slice,
    with_resource_claims,
)

GPU = "gpu.example.com"
IMPLICIT = f"deviceclass.resource.kubernetes.io/{GPU}"


def state_of(*objects: dict[str, Any], names: DeviceQuotaNames | None = None) -> ClusterState:
    state = ClusterState()
    if names is not None:
        state.set_device_names(names)
    for obj in objects:
        state.upsert(obj["kind"], obj)
    return state


def allocatable(state: ClusterState, node_name: str, name: str) -> float:
    return state.nodes_view()[node_name].allocatable.get(name) / 1000


def allocated(state: ClusterState, queue_name: str, name: str) -> float:
    return state.queue_usage_view()[queue_name].allocated.get(name) / 1000


def test_node_gains_its_devices_under_the_class_name() -> None:
    state = state_of(node("n1"), resource_slice("s", "n1", *gpus(4)), device_class(GPU))
    assert allocatable(state, "n1", IMPLICIT) == 4
    assert state.snapshot().total_allocatable.get(IMPLICIT) == 4000


def test_mapped_class_adds_to_the_device_plugin_amount_of_a_node_in_migration() -> None:
    names = DeviceQuotaNames({GPU: "nvidia.com/gpu"})
    state = state_of(
        node("n1", extra={"nvidia.com/gpu": "2"}),
        resource_slice("s", "n1", *gpus(4)),
        device_class(GPU),
        names=names,
    )
    assert allocatable(state, "n1", "nvidia.com/gpu") == 6
    assert allocatable(state, "n1", IMPLICIT) == 0


def test_slice_and_class_changes_are_followed() -> None:
    state = state_of(node("n1"), resource_slice("s", "n1", *gpus(4)), device_class(GPU))
    state.upsert("ResourceSlice", resource_slice("s", "n1", *gpus(2), generation=2))
    assert allocatable(state, "n1", IMPLICIT) == 2
    narrow = device_class(GPU, 'device.attributes["gpu.example.com"].model == "h100"')
    narrow["metadata"]["resourceVersion"] = "2"
    state.upsert("DeviceClass", narrow)
    # gpu-0 and gpu-1 have no model attribute: the class is not evaluable on n1.
    assert allocatable(state, "n1", IMPLICIT) == 0
    assert any("DeviceClass gpu.example.com" in r for r in state.device_problems())
    state.delete("ResourceSlice", "s")
    assert allocatable(state, "n1", IMPLICIT) == 0
    total = state.snapshot().total_allocatable.get(IMPLICIT)
    assert total == 0


def test_tasks_stay_on_a_node_whose_devices_change() -> None:
    state = state_of(
        node("n1"),
        pod("p", node_name="n1", cpu="2"),
        resource_slice("s", "n1", *gpus(4)),
        device_class(GPU),
    )
    assert state.nodes_view()["n1"].used.milli_cpu == 2000
    assert "ns-p" in state.nodes_view()["n1"].tasks


def test_slice_naming_an_unknown_node_is_reported_and_counted_when_it_comes() -> None:
    state = state_of(device_class(GPU), resource_slice("s", "ghost", *gpus(2)))
    assert any("ghost" in r for r in state.device_problems())
    assert state.snapshot().total_allocatable.get(IMPLICIT) == 0
    state.upsert("Node", node("ghost"))
    assert allocatable(state, "ghost", IMPLICIT) == 2
    assert state.device_problems() == []


def test_class_that_does_not_compile_is_reported_and_not_counted() -> None:
    state = state_of(
        node("n1"), resource_slice("s", "n1", *gpus(4)), device_class(GPU, "device.driver ==")
    )
    assert allocatable(state, "n1", IMPLICIT) == 0
    (reason,) = state.device_problems()
    assert "does not compile" in reason and "Syntax error" in reason
    fixed = device_class(GPU, 'device.driver == "gpu.example.com"', resource_version="2")
    state.upsert("DeviceClass", fixed)
    assert allocatable(state, "n1", IMPLICIT) == 4
    assert state.device_problems() == []


def test_allocated_claim_is_charged_once_to_the_pod_that_reserved_it_first() -> None:
    first = with_resource_claims(pod("a", node_name="n1", queue="q1"), "shared")
    second = with_resource_claims(pod("b", node_name="n1", queue="q2"), "shared")
    state = state_of(
        queue("q1"),
        queue("q2"),
        node("n1"),
        device_class(GPU),
        resource_slice("s", "n1", *gpus(4)),
        first,
        second,
        resource_claim("shared", count=2, allocated_on="n1", reserved_for=["ns-a", "ns-b"]),
    )
    assert allocated(state, "q1", IMPLICIT) == 2
    assert allocated(state, "q2", IMPLICIT) == 0
    assert state.nodes_view()["n1"].idle.get(IMPLICIT) == 2000
    # The first reserving pod goes: the claim is charged to the next one.
    state.delete("Pod", "ns/a")
    state.upsert(
        "ResourceClaim",
        resource_claim("shared", count=2, allocated_on="n1", reserved_for=["ns-b"]),
    )
    assert allocated(state, "q2", IMPLICIT) == 2


def test_claim_is_charged_under_the_mapped_name_alongside_device_plugin_gpus() -> None:
    names = DeviceQuotaNames({GPU: "nvidia.com/gpu"})
    state = state_of(
        queue("q1"),
        node("n1", extra={"nvidia.com/gpu": "2"}),
        device_class(GPU),
        resource_slice("s", "n1", *gpus(2)),
        pod("plugin", node_name="n1", queue="q1", extra={"nvidia.com/gpu": "1"}),
        with_resource_claims(pod("dra", node_name="n1", queue="q1"), "c"),
        resource_claim("c", count=1, allocated_on="n1", reserved_for=["ns-dra"]),
        names=names,
    )
    assert allocated(state, "q1", "nvidia.com/gpu") == 2
    assert state.nodes_view()["n1"].idle.get("nvidia.com/gpu") == 2000


def test_extended_resource_class_counts_the_pods_request_once() -> None:
    # kube-scheduler makes the claim for a pod asking the extended resource; the pod names
    # no claim in spec.resourceClaims, so only its request counts.
    state = state_of(
        queue("q1"),
        node("n1"),
        device_class(GPU, extended_resource_name="example.com/gpu"),
        resource_slice("s", "n1", *gpus(3)),
        pod("p", node_name="n1", queue="q1", extra={"example.com/gpu": "1"}),
    )
    assert allocatable(state, "n1", "example.com/gpu") == 3
    assert allocated(state, "q1", "example.com/gpu") == 1


def test_changing_the_mapping_derives_nodes_and_charges_again() -> None:
    state = state_of(
        queue("q1"),
        node("n1"),
        device_class(GPU),
        resource_slice("s", "n1", device("g0"), device("g1")),
        with_resource_claims(pod("dra", node_name="n1", queue="q1"), "c"),
        resource_claim("c", count=1, allocated_on="n1", reserved_for=["ns-dra"]),
    )
    assert allocated(state, "q1", IMPLICIT) == 1
    before = state.decision_version
    state.set_device_names(DeviceQuotaNames({GPU: "nvidia.com/gpu"}))
    assert state.decision_version > before
    assert allocatable(state, "n1", "nvidia.com/gpu") == 2
    assert allocated(state, "q1", "nvidia.com/gpu") == 1
    assert allocated(state, "q1", IMPLICIT) == 0


def test_fork_keeps_the_device_counts() -> None:
    state = state_of(node("n1"), resource_slice("s", "n1", *gpus(4)), device_class(GPU))
    fork = state.fork()
    fork.delete("ResourceSlice", "s")
    assert allocatable(fork, "n1", IMPLICIT) == 0
    assert allocatable(state, "n1", IMPLICIT) == 4


def test_pending_claims_charge_their_exact_count_unless_the_class_is_not_judged() -> None:
    template = {
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "two", "namespace": "ns", "uid": "t"},
        "spec": {
            "spec": {
                "devices": {
                    "requests": [{"name": "r", "exactly": {"deviceClassName": GPU, "count": 2}}]
                }
            }
        },
    }
    waiting = with_resource_claims(pod("w", queue="q1"), "template:two")
    state = state_of(queue("q1"), node("n1"), template, waiting)
    # No DeviceClass yet: its devices are not counted, nor is the claim.
    assert state.queue_usage_view()["q1"].request.get(IMPLICIT) == 0
    state.upsert("DeviceClass", device_class(GPU))
    assert state.queue_usage_view()["q1"].request.get(IMPLICIT) == 2000


def test_class_deleted_while_claims_use_it_is_logged_and_counted_nowhere(
    caplog: pytest.LogCaptureFixture,
) -> None:
    state = state_of(
        queue("q1"),
        node("n1"),
        device_class(GPU),
        resource_slice("s", "n1", *gpus(2)),
        with_resource_claims(pod("dra", node_name="n1", queue="q1"), "c"),
        resource_claim("c", count=1, allocated_on="n1", reserved_for=["ns-dra"]),
    )
    assert allocated(state, "q1", IMPLICIT) == 1
    with caplog.at_level(logging.WARNING, logger="scheduler_core.cache"):
        state.delete("DeviceClass", GPU)
    assert "DeviceClass gpu.example.com deleted while 1 allocated claim(s) use it" in caplog.text
    # Both sides of the share drop together: no queue holds more than the cluster has.
    assert allocated(state, "q1", IMPLICIT) == 0
    assert allocatable(state, "n1", IMPLICIT) == 0
