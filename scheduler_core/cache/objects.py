"""Kubernetes objects converted by kind, before they become cluster state.

Used by ``simulate`` and ``serve --cluster`` (objects from a YAML file) and by tests; the
snapshot is built from them by ``ClusterState``, so a file and a cluster behave the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pdb import PodDisruptionBudget
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.storage import StorageCatalog
from scheduler_core.api.topology import HyperNodeSpec
from scheduler_core.cache.convert import (
    ConversionError,
    PodGroupInfo,
    csinode_to_info,
    namespace_labels,
    node_to_info,
    pdb_to_info,
    pod_to_task,
    podgroup_to_info,
    priority_class_value,
    pv_to_info,
    pvc_to_info,
    queue_to_info,
    storage_class_to_info,
)
from scheduler_core.cache.convert_devices import (
    device_class_to_info,
    resource_claim_template_to_info,
    resource_claim_to_info,
    resource_slice_to_info,
)
from scheduler_core.cache.convert_topology import hypernode_to_spec
from scheduler_core.cache.native import NATIVE_GROUP, native_podgroup_to_info


@dataclass(slots=True)
class ClusterObjects:
    """Converted objects (pods stay as dicts: they are converted once priorities are known)."""

    pods: list[Mapping[str, Any]] = field(default_factory=list)
    nodes: list[NodeInfo] = field(default_factory=list)
    queues: list[QueueInfo] = field(default_factory=list)
    podgroups: list[PodGroupInfo] = field(default_factory=list)
    priority_classes: dict[str, tuple[int, bool]] = field(default_factory=dict)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    storage: StorageCatalog = field(default_factory=StorageCatalog)
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    hypernodes: list[HyperNodeSpec] = field(default_factory=list)


def add_object(out: ClusterObjects, obj: Mapping[str, Any]) -> None:
    """Convert one object of a kind the engine reads into ``out`` (raises ConversionError)."""
    kind = obj.get("kind")
    if kind == "Pod":
        pod_to_task(obj)  # validate now, so a bad pod is reported with its document
        out.pods.append(obj)
    elif kind == "Node":
        out.nodes.append(node_to_info(obj))
    elif kind == "Queue":
        out.queues.append(queue_to_info(obj))
    elif kind == "PodGroup" and str(obj.get("apiVersion") or "").startswith(NATIVE_GROUP + "/"):
        out.podgroups.append(native_podgroup_to_info(obj))
    elif kind == "PodGroup":
        out.podgroups.append(podgroup_to_info(obj))
    elif kind == "PriorityClass":
        name, value, global_default = priority_class_value(obj)
        out.priority_classes[name] = (value, global_default)
    elif kind == "PodDisruptionBudget":
        out.pdbs.append(pdb_to_info(obj))
    elif kind == "Namespace":
        name, labels = namespace_labels(obj)
        out.namespaces[name] = labels
    elif kind == "HyperNode":
        try:
            out.hypernodes.append(hypernode_to_spec(obj))
        except ValueError as exc:
            raise ConversionError(str(exc)) from None
    elif kind in STORAGE_CONVERTERS:
        put_storage(out.storage, kind, obj)


def put_storage(catalog: StorageCatalog, kind: str, obj: Mapping[str, Any]) -> None:
    """Convert a storage or device object into ``catalog`` (raises ConversionError)."""
    catalog.touch()
    if kind == "PersistentVolumeClaim":
        pvc = pvc_to_info(obj)
        catalog.claims[pvc.key] = pvc
    elif kind == "PersistentVolume":
        pv = pv_to_info(obj)
        catalog.volumes[pv.name] = pv
    elif kind == "StorageClass":
        sc = storage_class_to_info(obj)
        catalog.classes[sc.name] = sc
    elif kind == "CSINode":
        csinode = csinode_to_info(obj)
        catalog.csi_nodes[csinode.name] = csinode
    elif kind == "ResourceClaim":
        claim = resource_claim_to_info(obj)
        catalog.resource_claims[claim.key] = claim
        catalog.devices.put_claim_devices(claim.key, claim.allocated_devices)
    elif kind == "ResourceClaimTemplate":
        template = resource_claim_template_to_info(obj)
        catalog.claim_templates[template.key] = template
    elif kind == "ResourceSlice":
        catalog.devices.put_slice(resource_slice_to_info(obj))
    elif kind == "DeviceClass":
        catalog.devices.put_class(device_class_to_info(obj))


def delete_storage(catalog: StorageCatalog, kind: str, key: str) -> None:
    """Forget a storage or device object by its cache key (``ns/name`` or ``name``)."""
    if kind == "ResourceSlice":
        catalog.touch()
        catalog.devices.remove_slice(key)
        return
    if kind == "DeviceClass":
        catalog.touch()
        catalog.devices.remove_class(key)
        return
    if kind == "ResourceClaim":
        catalog.devices.put_claim_devices(key, ())
        catalog.devices.forget_owner(f"ResourceClaim {key}")
    if kind == "ResourceClaimTemplate":
        catalog.devices.forget_owner(f"ResourceClaimTemplate {key}")
    tables: dict[str, dict[str, Any]] = {
        "PersistentVolumeClaim": catalog.claims,
        "PersistentVolume": catalog.volumes,
        "StorageClass": catalog.classes,
        "CSINode": catalog.csi_nodes,
        "ResourceClaim": catalog.resource_claims,
        "ResourceClaimTemplate": catalog.claim_templates,
    }
    catalog.touch()
    tables[kind].pop(key, None)


#: The storage and device kinds ``put_storage`` converts, in the order they are watched.
STORAGE_KINDS = (
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "CSINode",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
    "DeviceClass",
)
STORAGE_CONVERTERS = frozenset(STORAGE_KINDS)

#: The device kinds whose change moves a node's device capacity.
DEVICE_KINDS = frozenset({"ResourceSlice", "DeviceClass"})


def collect(objects: Iterable[Mapping[str, Any]]) -> ClusterObjects:
    """Convert objects of the kinds the engine reads; other kinds are ignored."""
    out = ClusterObjects()
    for obj in objects:
        add_object(out, obj)
    return out
