"""Storage and device objects, and the pod fields that refer to them, into the model: only
the fields the checks read, every error naming the object and field."""

from __future__ import annotations

import pytest

from scheduler_core.api.devices import device_class_resource
from scheduler_core.api.storage import SelectorTerm
from scheduler_core.api.task import NodeSelectorRequirement, PodResourceClaim, PodVolume
from scheduler_core.cache.convert import (
    ConversionError,
    csinode_to_info,
    pod_to_task,
    pv_to_info,
    pvc_to_info,
    storage_class_to_info,
)
from scheduler_core.cache.convert_devices import resource_claim_to_info
from scheduler_core.cache.state import ClusterState
from tests.builders import (
    claim_volume,
    csinode,
    pod,
    pv,
    pvc,
    resource_claim,
    storage_class,
    with_resource_claims,
    with_volumes,
)


def test_pod_volumes_by_source_with_the_claims_they_read() -> None:
    task = pod_to_task(
        with_volumes(
            pod("web"),
            claim_volume("data", "web-data"),
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
            {"name": "cfg", "configMap": {"name": "c"}},
            {"name": "inline", "csi": {"driver": "d.example.com"}},
            {"name": "bare"},
        )
    )
    assert task.volumes == (
        PodVolume("data", "persistentVolumeClaim", claim="web-data"),
        PodVolume("scratch", "ephemeral", claim="web-scratch"),
        PodVolume("cfg", "configMap"),
        PodVolume("inline", "csi", driver="d.example.com"),
        PodVolume("bare", "emptyDir"),
    )


def test_pod_resource_claims_direct_and_from_templates() -> None:
    task = pod_to_task(
        with_resource_claims(
            pod("p"), "gpu", "template:nic", "template:later", statuses={"nic": "p-nic-abc"}
        )
    )
    assert task.resource_claims == (
        PodResourceClaim("gpu", "gpu"),
        PodResourceClaim("nic", "p-nic-abc", template="nic"),
        PodResourceClaim("later", "", template="later"),
    )


def test_pod_scheduling_gates_by_name() -> None:
    task = pod_to_task(pod("p", spec={"schedulingGates": [{"name": "a"}, {"name": "b"}]}))
    assert task.scheduling_gates == ("a", "b") and task.gated
    assert task.clone().scheduling_gates == ("a", "b")


def test_claim_bound_and_unbound() -> None:
    bound = pvc_to_info(pvc("d", volume="pv-1", access_modes=["ReadWriteOncePod"]))
    assert (bound.key, bound.volume_name, bound.phase) == ("ns/d", "pv-1", "Bound")
    assert bound.read_write_once_pod
    unbound = pvc_to_info(pvc("d", storage_class="fast"))
    assert (unbound.volume_name, unbound.storage_class, unbound.read_write_once_pod) == (
        "",
        "fast",
        False,
    )


def test_volume_affinity_source_and_csi_handle() -> None:
    local = pv_to_info(pv("pv-1", hostname="n1", labels={"zone": "a"}))
    assert local.source == "local" and local.labels == {"zone": "a"}
    assert local.node_affinity == (
        SelectorTerm(
            expressions=(NodeSelectorRequirement("kubernetes.io/hostname", "In", ("n1",)),)
        ),
    )
    csi = pv_to_info(pv("pv-2", csi_driver="ebs.example.com"))
    assert (csi.source, csi.csi_driver, csi.csi_handle, csi.node_affinity) == (
        "csi",
        "ebs.example.com",
        "handle-pv-2",
        None,
    )


def test_storage_class_binding_mode_defaults_to_immediate() -> None:
    assert storage_class_to_info(storage_class("a")).binding_mode == "WaitForFirstConsumer"
    plain = {"kind": "StorageClass", "metadata": {"name": "b"}, "provisioner": "x"}
    assert storage_class_to_info(plain).binding_mode == "Immediate"


def test_csinode_limits_per_driver() -> None:
    info = csinode_to_info(csinode("n1", {"a.example.com": 16, "b.example.com": None}))
    assert info.drivers == {"a.example.com": 16, "b.example.com": None}


def test_csinode_with_a_malformed_count_is_an_error_naming_the_field() -> None:
    bad = csinode("n1", {"a.example.com": 1})
    bad["spec"]["drivers"][0]["allocatable"]["count"] = "many"
    with pytest.raises(ConversionError, match=r"CSINode n1: spec.drivers\[0\].allocatable.count"):
        csinode_to_info(bad)


def test_a_bad_storage_object_is_refused_and_nothing_changes() -> None:
    state = ClusterState()
    state.upsert("CSINode", csinode("n1", {"a.example.com": 1}))
    bad = csinode("n1", {"a.example.com": 1})
    bad["spec"]["drivers"][0]["allocatable"]["count"] = "many"
    state.upsert("CSINode", bad)
    assert state.rejected["CSINode"] == 1
    assert state.snapshot().storage.csi_nodes["n1"].drivers == {"a.example.com": 1}


def test_resource_claim_allocation_counts_devices_per_class() -> None:
    claim = resource_claim_to_info(
        resource_claim(
            "gpu",
            device_class="gpu.example.com",
            count=2,
            allocated_on="n1",
            reserved_for=["uid-1"],
        )
    )
    assert claim.allocated and claim.devices == {"gpu.example.com": 2}
    assert claim.reserved_for == ("uid-1",)
    assert claim.node_selector == (
        SelectorTerm(fields=(NodeSelectorRequirement("metadata.name", "In", ("n1",)),)),
    )
    pending = resource_claim_to_info(resource_claim("gpu"))
    assert not pending.allocated and pending.devices == {} and pending.node_selector is None


def test_first_available_alternatives_count_as_the_class_chosen() -> None:
    raw = resource_claim("gpu")
    raw["spec"]["devices"]["requests"] = [
        {
            "name": "req",
            "firstAvailable": [
                {"name": "big", "deviceClassName": "big.example.com"},
                {"name": "small", "deviceClassName": "small.example.com"},
            ],
        }
    ]
    raw["status"]["allocation"] = {
        "devices": {
            "results": [{"request": "req/small", "driver": "d", "pool": "p", "device": "x"}]
        }
    }
    assert resource_claim_to_info(raw).devices == {"small.example.com": 1}


def test_device_class_resource_name() -> None:
    assert device_class_resource("gpu.example.com") == (
        "deviceclass.resource.kubernetes.io/gpu.example.com"
    )
