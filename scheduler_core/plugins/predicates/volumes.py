"""kube-scheduler's volume filters as the engine judges them: VolumeBinding (for bound
claims: the volume's node affinity), VolumeZone, VolumeRestrictions (``ReadWriteOncePod``)
and NodeVolumeLimits (CSI attach limits from ``CSINode``).

What the engine cannot judge makes the pod *not evaluable* (``pod_not_evaluable``): a claim
that is not bound yet (binding or provisioning picks the node, which only kube-scheduler and
the volume controllers do), a claim or volume the cache does not hold, an inline volume type
some kube-scheduler filter examines and this module does not. Evicting for such a pod could
be in vain, so nothing is evicted for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.storage import (
    CLAIM_LOST,
    WAIT_FOR_FIRST_CONSUMER,
    PersistentVolumeClaimInfo,
    PersistentVolumeInfo,
    SelectorTerm,
    StorageCatalog,
)
from scheduler_core.api.task import PodVolume, TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.framework.status import Code, Status
from scheduler_core.plugins.predicates.node_static import requirement_matches

VOLUME_BINDING = "VolumeBinding"
VOLUME_ZONE = "VolumeZone"
VOLUME_RESTRICTIONS = "VolumeRestrictions"
NODE_VOLUME_LIMITS = "NodeVolumeLimits"

ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_ZONE_CONFLICT = "node(s) had no available volume zone"
ERR_REASON_RWOP_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
ERR_REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"

#: Inline volume sources no kube-scheduler filter examines: they never keep a pod off a node.
HARMLESS_INLINE = frozenset(
    {
        "emptyDir",
        "configMap",
        "secret",
        "projected",
        "downwardAPI",
        "hostPath",
        "nfs",
        "image",
        "gitRepo",
        "cephfs",
        "glusterfs",
        "fc",
        "flexVolume",
    }
)

#: Sources this module judges itself: claims (bound ones), and inline CSI volumes (their
#: attach count).
CLAIM_KINDS = frozenset({"persistentVolumeClaim", "ephemeral"})
INLINE_CSI = "csi"

#: Volume sources whose attach limits kube-scheduler counts through CSI migration (as the
#: driver that replaced them); the engine does not translate them, so a pod using one, or a
#: bound volume of one, is not evaluable.
MIGRATED_SOURCES = frozenset(
    {
        "awsElasticBlockStore",
        "gcePersistentDisk",
        "azureDisk",
        "azureFile",
        "cinder",
        "vsphereVolume",
        "portworxVolume",
    }
)

#: The node labels VolumeZone compares with a volume's, stable and deprecated spellings.
ZONE_LABELS = (
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
)

#: Statuses of a task that holds its volumes on its node (an evicted, releasing one is on
#: its way out: evicting it is what frees the volume).
_HOLDING = (
    TaskStatus.RUNNING
    | TaskStatus.BOUND
    | TaskStatus.BINDING
    | TaskStatus.ALLOCATED
    | TaskStatus.PIPELINED
)


def verdict(code: Code, reason: str, plugin: str, task: TaskInfo, node: NodeInfo) -> Status:
    """A volume or device filter's verdict on ``task`` at ``node``, with its one reason."""
    return Status(code, [reason], plugin, task=task.key, node=node.name)


def claim_key(task: TaskInfo, volume: PodVolume) -> str:
    return f"{task.namespace}/{volume.claim}"


def _claim_volumes(task: TaskInfo) -> Iterator[PodVolume]:
    return (v for v in task.volumes if v.kind in CLAIM_KINDS)


def volumes_signature(task: TaskInfo) -> tuple[object, ...]:
    """What the checks read of a pod's volumes: an inline volume no filter examines only
    by its type (a pod's own token or scratch volume must not set equal pods apart); any
    other volume whole (its claim, its driver, and its name, which a reason may show)."""
    return tuple(v.kind if v.kind in HARMLESS_INLINE else v for v in task.volumes)


# --- what cannot be judged ----------------------------------------------------------------


def pod_not_evaluable(task: TaskInfo, storage: StorageCatalog) -> list[str]:
    """Why the engine cannot judge this pod's volumes (empty: it can), one reason a volume."""
    reasons: list[str] = []
    for volume in task.volumes:
        if volume.kind in HARMLESS_INLINE or (volume.kind == INLINE_CSI and volume.driver):
            continue
        if volume.kind not in CLAIM_KINDS:
            reasons.append(f"volume {volume.name} of type {volume.kind}")
            continue
        key = claim_key(task, volume)
        pvc = storage.claims.get(key)
        if pvc is None:
            reasons.append(f"PersistentVolumeClaim {key} not in the cache")
        elif pvc.phase == CLAIM_LOST or pvc.deleting:
            continue  # judged: no node will do (``volume_binding_error``)
        elif not pvc.bound:
            reasons.append(_unbound(pvc, storage))
        else:
            pv = storage.volumes.get(pvc.volume_name)
            if pv is None:
                reasons.append(
                    f"PersistentVolume {pvc.volume_name} of claim {key} not in the cache"
                )
            elif pv.source in MIGRATED_SOURCES:
                reasons.append(f"PersistentVolume {pv.name} of type {pv.source}")
    return reasons


def _unbound(pvc: PersistentVolumeClaimInfo, storage: StorageCatalog) -> str:
    sc = storage.classes.get(pvc.storage_class)
    if sc is None:
        how = f"storage class {pvc.storage_class or '(none)'}"
    elif sc.binding_mode == WAIT_FOR_FIRST_CONSUMER:
        how = f"storage class {sc.name}, {WAIT_FOR_FIRST_CONSUMER}"
    else:
        how = f"storage class {sc.name}, {sc.binding_mode}"
    return f"PersistentVolumeClaim {pvc.key} is not bound ({how})"


# --- node checks --------------------------------------------------------------------------


def selector_matches(terms: Iterable[SelectorTerm], node: NodeInfo) -> bool:
    """A ``NodeSelector``: terms ORed, each term's label and field expressions ANDed (the
    only field is ``metadata.name``); an empty term matches nothing."""
    fields = {"metadata.name": node.name}
    for term in terms:
        if not term.expressions and not term.fields:
            continue
        if all(requirement_matches(r, node.labels) for r in term.expressions) and all(
            requirement_matches(r, fields) for r in term.fields
        ):
            return True
    return False


def _zone_conflict(pv: PersistentVolumeInfo, node: NodeInfo) -> bool:
    """VolumeZone: a node carrying none of the zone labels passes; otherwise each zone
    label of the volume must list the node's value (``__`` separates several)."""
    if not any(label in node.labels for label in ZONE_LABELS):
        return False
    for label in ZONE_LABELS:
        wanted = pv.labels.get(label)
        if wanted is None:
            continue
        if node.labels.get(label) not in set(wanted.split("__")):
            return True
    return False


def bound_volumes(task: TaskInfo, storage: StorageCatalog) -> Iterator[PersistentVolumeInfo]:
    for volume in _claim_volumes(task):
        pvc = storage.claims.get(claim_key(task, volume))
        if pvc is not None and pvc.bound:
            pv = storage.volumes.get(pvc.volume_name)
            if pv is not None:
                yield pv


@dataclass(frozen=True, slots=True)
class PodStorage:
    """What of a pod's claims and volumes the per-node checks read, looked up in the catalog
    once: a verdict over five thousand nodes resolves each claim once, not once a node
    and check. It holds for one version of the catalog (the caller keeps it no longer).
    """

    #: Why no node will do (a claim lost its volume or is being deleted); "" if none.
    unusable: str
    #: The bound volumes whose place a node must match (node affinity or zone labels).
    placed: tuple[PersistentVolumeInfo, ...]
    #: The pod's CSI volumes as (driver, unique handle), for the attach limits.
    csi: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, task: TaskInfo, storage: StorageCatalog) -> PodStorage:
        unusable = ""
        for volume in _claim_volumes(task):
            pvc = storage.claims.get(claim_key(task, volume))
            if pvc is None:
                continue
            if pvc.phase == CLAIM_LOST:
                unusable = (
                    f'persistentvolumeclaim "{pvc.name}" bound to non-existent '
                    f'persistentvolume "{pvc.volume_name}"'
                )
            elif pvc.deleting:
                unusable = f'persistentvolumeclaim "{pvc.name}" is being deleted'
            if unusable:
                break
        placed = tuple(
            pv
            for pv in bound_volumes(task, storage)
            if pv.node_affinity is not None or any(label in pv.labels for label in ZONE_LABELS)
        )
        return cls(unusable, placed, frozenset(csi_volumes(task, storage)))

    def binding_error(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        """Bound volumes the node cannot reach (node affinity, zone), a claim that lost its
        volume or is being deleted: ``UnschedulableAndUnresolvable``, no eviction changes
        a volume's place."""
        if self.unusable:
            return verdict(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE, self.unusable, VOLUME_BINDING, task, node
            )
        for pv in self.placed:
            if pv.node_affinity is not None and not selector_matches(pv.node_affinity, node):
                return verdict(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    ERR_REASON_NODE_CONFLICT,
                    VOLUME_BINDING,
                    task,
                    node,
                )
            if _zone_conflict(pv, node):
                return verdict(
                    Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                    ERR_REASON_ZONE_CONFLICT,
                    VOLUME_ZONE,
                    task,
                    node,
                )
        return None

    def limits_error(
        self, task: TaskInfo, node: NodeInfo, storage: StorageCatalog
    ) -> Status | None:
        """NodeVolumeLimits: per CSI driver with an ``allocatable.count`` on the node's
        ``CSINode``, the unique volumes already attached there (by the pods the node
        holds) plus the pod's new ones must stay within it. ``Unschedulable``: evicting
        pods that hold volumes of the driver frees attachments."""
        new = self.csi
        if not new:
            return None
        csinode = storage.csi_nodes.get(node.name)
        if csinode is None:
            return None
        limited = {driver for driver, _ in new if csinode.drivers.get(driver) is not None}
        if not limited:
            return None
        attached: set[tuple[str, str]] = set()
        for other in node.tasks.values():
            if other.uid != task.uid and other.status & _HOLDING:
                attached |= {v for v in csi_volumes(other, storage) if v[0] in limited}
        for driver in sorted(limited):
            limit = csinode.drivers[driver]
            assert limit is not None
            existing = sum(1 for d, _ in attached if d == driver)
            adding = sum(1 for v in new if v[0] == driver and v not in attached)
            if adding and existing + adding > limit:
                return verdict(
                    Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT, NODE_VOLUME_LIMITS, task, node
                )
        return None


def rwop_claims(task: TaskInfo, storage: StorageCatalog) -> list[str]:
    """The pod's claims with the ``ReadWriteOncePod`` access mode, by key."""
    out = []
    for volume in _claim_volumes(task):
        pvc = storage.claims.get(claim_key(task, volume))
        if pvc is not None and pvc.read_write_once_pod:
            out.append(pvc.key)
    return out


ClaimUsers = Mapping[str, list[tuple[str, str]]]


def claim_users(nodes: Iterable[NodeInfo]) -> dict[str, list[tuple[str, str]]]:
    """claim key -> (task uid, node name) of every placed task that mounts it."""
    users: dict[str, list[tuple[str, str]]] = {}
    for node in nodes:
        for task in node.tasks.values():
            for volume in _claim_volumes(task):
                users.setdefault(claim_key(task, volume), []).append((task.uid, node.name))
    return users


def rwop_conflict_error(
    task: TaskInfo,
    node: NodeInfo,
    claims: list[str],
    users: ClaimUsers,
    nodes: Mapping[str, NodeInfo],
) -> Status | None:
    """VolumeRestrictions: a ``ReadWriteOncePod`` claim another placed pod mounts. Evicting
    that pod resolves it (``Unschedulable``): a user on ``node`` counts only while ``node``
    (a simulation's copy, perhaps) still holds it, a user elsewhere while its node does and
    it is not being evicted."""
    for key in claims:
        for uid, where in users.get(key, ()):
            if uid == task.uid:
                continue
            holder = node if where == node.name else nodes.get(where)
            other = holder.tasks.get(uid) if holder is not None else None
            if other is not None and other.status & _HOLDING:
                return verdict(
                    Code.UNSCHEDULABLE, ERR_REASON_RWOP_CONFLICT, VOLUME_RESTRICTIONS, task, node
                )
    return None


def csi_volumes(task: TaskInfo, storage: StorageCatalog) -> set[tuple[str, str]]:
    """The pod's CSI volumes as (driver, unique handle); what the cache cannot resolve is
    left out, as kube-scheduler leaves it out of an existing pod's count."""
    out: set[tuple[str, str]] = set()
    for volume in task.volumes:
        if volume.kind == INLINE_CSI and volume.driver:
            out.add((volume.driver, f"{task.uid}/{volume.name}"))
    for pv in bound_volumes(task, storage):
        if pv.csi_driver:
            out.add((pv.csi_driver, pv.csi_handle or pv.name))
    return out
