"""Storage and device objects a pod's placement depends on, reduced to what the volume and
DRA checks read: claims, volumes, storage classes, CSI drivers per node, resource claims.

kube-scheduler judges these itself before it asks the extender; the engine needs them to
judge the same things when *it* picks victims (the reclaim loop, the preempt verb), and,
where it cannot, to know that it cannot.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from scheduler_core.api.devices import ClaimShape, DeviceCatalog, DeviceId, DeviceRequest
from scheduler_core.api.task import NodeSelectorRequirement, TaskInfo

READ_WRITE_ONCE_POD = "ReadWriteOncePod"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
CLAIM_LOST = "Lost"


@dataclass(frozen=True, slots=True)
class SelectorTerm:
    """One ``NodeSelectorTerm``: its expressions on labels and fields, ANDed."""

    expressions: tuple[NodeSelectorRequirement, ...] = ()
    fields: tuple[NodeSelectorRequirement, ...] = ()


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaimInfo:
    namespace: str
    name: str
    #: ``spec.volumeName``: empty while the claim is unbound.
    volume_name: str = ""
    phase: str = ""
    storage_class: str = ""
    access_modes: tuple[str, ...] = ()
    deleting: bool = False
    #: The volume controller finished binding (``pv.kubernetes.io/bind-completed``): until
    #: then kube-scheduler treats a claim as unbound even with a volume name.
    bind_completed: bool = False

    @property
    def bound(self) -> bool:
        return bool(self.volume_name) and self.bind_completed

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def read_write_once_pod(self) -> bool:
        return READ_WRITE_ONCE_POD in self.access_modes


@dataclass(frozen=True, slots=True)
class PersistentVolumeInfo:
    name: str
    #: Required node affinity (terms ORed); None when the volume has none.
    node_affinity: tuple[SelectorTerm, ...] | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    #: The CSI driver and volume handle when the volume is a CSI volume (or an in-tree one
    #: the API server reports through CSI), else empty.
    csi_driver: str = ""
    csi_handle: str = ""
    #: The volume's source field (``csi``, ``local``, ``hostPath``, ``awsElasticBlockStore``...).
    source: str = ""


@dataclass(frozen=True, slots=True)
class StorageClassInfo:
    name: str
    binding_mode: str = "Immediate"
    provisioner: str = ""


@dataclass(frozen=True, slots=True)
class CSINodeInfo:
    """A node's CSI drivers: driver name -> how many of its volumes the node may attach
    (None when the driver reports no limit)."""

    name: str
    drivers: Mapping[str, int | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ResourceClaimInfo:
    namespace: str
    name: str
    #: ``status.allocation`` present: the devices are chosen and reserved.
    allocated: bool = False
    #: Allocated devices per device class (from the allocation's results, each matched to
    #: its request's ``deviceClassName``).
    devices: Mapping[str, int] = field(default_factory=dict)
    #: Pods the claim is reserved for (``status.reservedFor``), by uid.
    reserved_for: tuple[str, ...] = ()
    #: The allocation's node selector (terms ORed), None when any node may use it.
    node_selector: tuple[SelectorTerm, ...] | None = None
    uid: str = ""
    resource_version: str = ""
    #: What its requests ask for, or why the engine does not judge them.
    shape: ClaimShape = field(default_factory=ClaimShape)
    #: The devices its allocation chose.
    allocated_devices: tuple[DeviceId, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class ResourceClaimTemplateInfo:
    """A ResourceClaimTemplate: the claim kube-scheduler's controller makes for each pod
    naming it, judged (and charged) before that claim exists."""

    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    shape: ClaimShape = field(default_factory=ClaimShape)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class StorageCatalog:
    """Every storage and device object the cache holds, by key.

    The live cache changes it one object at a time; a snapshot holds the live catalog, not
    a copy (at 50,000 claims a copy per session would cost more than the session): the
    checks only look objects up by key, each lookup sees the object as it is now, and an
    object is replaced, never changed in place.

    ``version`` moves with every change (``touch``), so whoever resolves a pod's objects
    once and reuses them across nodes knows when that resolution is stale.
    """

    claims: dict[str, PersistentVolumeClaimInfo] = field(default_factory=dict)
    volumes: dict[str, PersistentVolumeInfo] = field(default_factory=dict)
    classes: dict[str, StorageClassInfo] = field(default_factory=dict)
    csi_nodes: dict[str, CSINodeInfo] = field(default_factory=dict)
    resource_claims: dict[str, ResourceClaimInfo] = field(default_factory=dict)
    claim_templates: dict[str, ResourceClaimTemplateInfo] = field(default_factory=dict)
    #: ResourceSlices and DeviceClasses, with their compiled selectors.
    devices: DeviceCatalog = field(default_factory=DeviceCatalog)
    version: int = 0

    def touch(self) -> None:
        """Record that an object was put or removed."""
        self.version += 1

    def merge(self, other: StorageCatalog) -> None:
        """Add (or replace) ``other``'s objects: a file or a what-if adds to what is known."""
        self.touch()
        self.claims.update(other.claims)
        self.volumes.update(other.volumes)
        self.classes.update(other.classes)
        self.csi_nodes.update(other.csi_nodes)
        self.resource_claims.update(other.resource_claims)
        self.claim_templates.update(other.claim_templates)
        for claim in other.resource_claims.values():
            self.devices.put_claim_devices(claim.key, claim.allocated_devices)
        for info in other.devices.slices.values():
            self.devices.put_slice(info)
        for cls in other.devices.classes.values():
            self.devices.put_class(cls)

    def copy(self) -> StorageCatalog:
        """A catalog whose maps can change without changing this one's (a what-if fork)."""
        return StorageCatalog(
            claims=dict(self.claims),
            volumes=dict(self.volumes),
            classes=dict(self.classes),
            csi_nodes=dict(self.csi_nodes),
            resource_claims=dict(self.resource_claims),
            claim_templates=dict(self.claim_templates),
            devices=self.devices.copy(),
            version=self.version,
        )


_CLAIM_KINDS = ("persistentVolumeClaim", "ephemeral")


def placement_signature(task: TaskInfo, storage: StorageCatalog) -> tuple[object, ...]:
    """Everything of the pod's volumes, device claims and gates a hard verdict (a node the
    pod can never use, or cannot be judged on) may read: two pods with equal signatures
    (and equal node constraints) get equal hard verdicts on every node, so those can be
    worked out once for both. A bound claim stands for its volume's source, node affinity
    and labels (pods of a hundred groups, each with its own claim on like volumes, share
    one signature); anything not plainly bound, and device claims and gates, make the
    signature the pod's own."""
    own = ("pod", task.namespace, task.name)
    if task.scheduling_gates or task.resource_claims:
        return own
    parts: list[object] = []
    for volume in task.volumes:
        if volume.kind not in _CLAIM_KINDS:
            parts.append((volume.kind, bool(volume.driver)))
            continue
        pvc = storage.claims.get(f"{task.namespace}/{volume.claim}")
        if pvc is None or not pvc.bound or pvc.deleting or pvc.phase == CLAIM_LOST:
            return own
        pv = storage.volumes.get(pvc.volume_name)
        if pv is None:
            return own
        parts.append((pv.source, pv.node_affinity, tuple(sorted(pv.labels.items()))))
    return tuple(parts)


# --- a pod's device requests ---------------------------------------------------------------


def claim_key(task: TaskInfo, claim: str) -> str:
    return f"{task.namespace}/{claim}"


#: One request to satisfy: who asks (for reasons and the compile cache), the owner's
#: version, and the request.
Need = tuple[str, str, DeviceRequest]


def pending_needs(task: TaskInfo, storage: StorageCatalog) -> tuple[list[Need], list[str]]:
    """The requests of the pod's claims not yet allocated, and why some cannot be judged
    (empty: all can)."""
    needs: list[Need] = []
    reasons: list[str] = []
    for ref in task.resource_claims:
        if ref.claim:
            key = claim_key(task, ref.claim)
            claim = storage.resource_claims.get(key)
            if claim is None:
                reasons.append(f"ResourceClaim {key} not in the cache")
                continue
            if claim.allocated:
                continue
            owner, version, shape = (
                f"ResourceClaim {key}",
                f"{claim.uid}/{claim.resource_version}",
                claim.shape,
            )
        elif ref.template:
            key = claim_key(task, ref.template)
            template = storage.claim_templates.get(key)
            if template is None:
                reasons.append(f"ResourceClaimTemplate {key} not in the cache")
                continue
            owner, version, shape = (
                f"ResourceClaimTemplate {key}",
                f"{template.uid}/{template.resource_version}",
                template.shape,
            )
        else:
            reasons.append(f"resource claim {ref.name} names neither a claim nor a template")
            continue
        if shape.unjudged:
            reasons.append(f"{owner}: {shape.unjudged}")
            continue
        needs.extend((owner, version, request) for request in shape.requests)
    return needs, reasons
