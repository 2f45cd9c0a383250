"""ClusterState: the engine's view of the cluster, kept current one event at a time.

Informers call ``upsert``/``delete`` (the ``EventSink`` protocol) from their threads; a
static YAML file is loaded through the same calls. Each event touches only what it names:
one task in its job and on its node, one node, one queue... and bumps ``version`` so that
derived state (queue deserved/share) is recomputed once per batch of changes, not per
request. ``changes`` classifies each event by what it changed of a session's inputs (see
``changes.py``), so that the extender's accounting session can skip or follow most events
instead of being rebuilt. Sessions get a private ``snapshot()``, or a ``whatif_snapshot``
that copies only the jobs and nodes a what-if (a preempt verb) may touch.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import fields, replace
from types import MappingProxyType
from typing import Any

import orjson

from scheduler_core.api.devices import DeviceQuotaNames
from scheduler_core.api.job import NATIVE_SOURCE, JobInfo
from scheduler_core.api.node import NodeError, NodeInfo
from scheduler_core.api.pdb import PodDisruptionBudget
from scheduler_core.api.queue import DEFAULT_QUEUE, ROOT_QUEUE, QueueInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.snapshot import ClusterSnapshot, PlacementEpoch
from scheduler_core.api.storage import StorageCatalog
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.topology import Topology
from scheduler_core.api.types import PodGroupPhase, TaskStatus, completed_status
from scheduler_core.api.usage import JobUsage, job_usage
from scheduler_core.api.usage_history import UsageHistory
from scheduler_core.cache.changes import ChangeLog
from scheduler_core.cache.convert import (
    NATIVE_JOB_PREFIX,
    ConversionError,
    PodGroupInfo,
    named_queue,
    namespace_labels,
    node_to_info,
    object_name,
    pdb_to_info,
    placement_convertible,
    pod_job_id,
    pod_queue_annotation,
    pod_to_task,
    podgroup_to_info,
    priority_class_value,
    queue_to_info,
    replaced_placement,
)
from scheduler_core.cache.native import NATIVE_KIND, native_podgroup_to_info
from scheduler_core.cache.objects import (
    DEVICE_KINDS,
    STORAGE_CONVERTERS,
    ClusterObjects,
    delete_storage,
    put_storage,
)
from scheduler_core.cache.topology_source import TopologySource

log = logging.getLogger("scheduler_core.cache")

#: Volcano's network topology objects: not in ``KINDS`` (the state is loaded without them
#: when the CRD is not served), watched only where it is.
HYPERNODE = "HyperNode"

KINDS = (
    "Pod",
    "Node",
    "Queue",
    "PodGroup",
    "PriorityClass",
    "PodDisruptionBudget",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "CSINode",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
    "DeviceClass",
    "Namespace",
)


def implicit_queue(name: str) -> QueueInfo:
    return QueueInfo(name=name, weight=1, implicit=True)


def job_from_podgroup(
    pg: PodGroupInfo, priority_classes: Mapping[str, int], global_default: int | None
) -> JobInfo:
    job = JobInfo(uid=pg.uid, name=pg.name, namespace=pg.namespace, queue=pg.queue)
    apply_podgroup(job, pg, priority_classes, global_default)
    return job


def apply_podgroup(
    job: JobInfo,
    pg: PodGroupInfo,
    priority_classes: Mapping[str, int],
    global_default: int | None,
) -> None:
    """Set a job's PodGroup fields in place, keeping its tasks."""
    if pg.priority is not None:
        priority = pg.priority
    elif pg.priority_class_name and pg.priority_class_name in priority_classes:
        priority = priority_classes[pg.priority_class_name]
    elif global_default is not None:
        priority = global_default
    else:
        priority = 0
    job.queue = pg.queue
    job.priority = priority
    job.min_available = pg.min_member
    job.task_min_available = dict(pg.min_task_member)
    job.min_resources = pg.min_resources
    job.phase = pg.phase
    job.preemptable = pg.preemptable
    job.creation_timestamp = pg.creation_timestamp
    job.min_runtime = pg.min_runtime
    job.network_topology = pg.network_topology
    job.synthesized = False
    job.source = pg.source
    job.topology_keys = pg.topology_keys
    if pg.source == NATIVE_SOURCE:
        job.phase = native_phase(job)


def native_phase(job: JobInfo) -> PodGroupPhase:
    """The phase a native group's job has: kube-scheduler writes none, so it is derived as
    for a lone pod's group: Running once minMember members are placed, else Pending (and
    admitted by enqueue, as a Volcano PodGroup no controller has admitted yet)."""
    placed = job.scheduled_task_num() + job.releasing_scheduled_task_num()
    return (
        PodGroupPhase.RUNNING if placed and placed >= job.min_available else PodGroupPhase.PENDING
    )


def synthesized_job(task: TaskInfo, queue: str) -> JobInfo:
    """The group of one that Volcano's PodGroup controller makes for a plain pod."""
    min_resources = task.resreq.clone()
    if min_resources.scalars is not None:
        min_resources.scalars.pop("pods", None)
    running = task.status & (TaskStatus.RUNNING | TaskStatus.BOUND | TaskStatus.RELEASING)
    return JobInfo(
        uid=task.job,
        name=task.job.split("/", 1)[1],
        namespace=task.namespace,
        queue=queue or DEFAULT_QUEUE,
        priority=task.pod_priority,
        min_available=1,
        min_resources=min_resources,
        phase=PodGroupPhase.RUNNING if running else PodGroupPhase.PENDING,
        creation_timestamp=task.creation_timestamp,
        synthesized=True,
    )


def respec_synthesized(job: JobInfo, fresh: JobInfo) -> None:
    """Give a plain pod's group of one the spec ``synthesized_job`` derives from the pod as
    it is now (``fresh``), keeping the object and its tasks."""
    job.priority = fresh.priority
    job.min_available = fresh.min_available
    job.min_resources = fresh.min_resources
    job.phase = fresh.phase
    job.creation_timestamp = fresh.creation_timestamp


def same_sums(old: TaskInfo, new: TaskInfo) -> bool:
    """Whether a pod update leaves every sum a session derives as it was: its job's usage
    and its node's amounts read the task's job, status, node, requests and gating only.
    Everything else of a pod a decision reads (labels, priority, nomination...) is read
    from the cache's live objects when the decision is made, not derived at session open.
    """
    return (
        old.job == new.job
        and old.status == new.status
        and old.node_name == new.node_name
        and old.gated == new.gated
        and old.resreq.semantic_equal(new.resreq)
        and old.init_resreq.semantic_equal(new.init_resreq)
    )


def _same_but_history(old: QueueInfo, new: QueueInfo) -> bool:
    """Whether two versions of a queue differ at most in their persisted usage history."""
    for spec in fields(QueueInfo):
        name = spec.name
        if name in ("usage_record", "usage_record_error"):
            continue
        was, now = getattr(old, name), getattr(new, name)
        if isinstance(was, Resource) and isinstance(now, Resource):
            if not was.semantic_equal(now):
                return False
        elif was != now:
            return False
    return True


class ClusterState:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.version = 0
        #: The decision version and what each event since the last structural one changed.
        self.changes = ChangeLog()
        #: Set by an event handler that classified its own event (a pod, a PodGroup); an
        #: event left unclassified is structural.
        self._classified = False
        self.events: Counter[tuple[str, str]] = Counter()
        self.rejected: Counter[str] = Counter()
        self._synced: set[str] = set()
        self._tasks: dict[str, TaskInfo] = {}  # pod key -> task
        #: Pod key -> resourceVersion of the pod object its task was converted from, for
        #: the tasks that are exactly that conversion (see ``cached_task``). Emptied on every
        #: PriorityClass change: a pod without ``spec.priority`` takes its class's value at
        #: conversion, so a task converted before may differ from one converted now.
        self._converted: dict[str, str] = {}
        #: (kind, key) -> digest of what the engine reads of the object last applied (see
        #: ``_read_digest``), for the kinds whose watch is mostly updates that change
        #: nothing read: a node's status heartbeat, a pod's managedFields. Such an update is
        #: dropped before conversion. Emptied for pods with ``_converted``, for the same
        #: reason.
        self._digests: dict[tuple[str, str], bytes] = {}
        self._jobs: dict[str, JobInfo] = {}
        self._orphans: dict[str, dict[str, TaskInfo]] = {}  # job id -> tasks awaiting a PodGroup
        self._nodes: dict[str, NodeInfo] = {}
        #: Nodes as their objects say, before their DRA devices are added (see
        #: ``_with_devices``).
        self._node_base: dict[str, NodeInfo] = {}
        #: Which quota name each device class counts under (the configuration's mapping).
        self._device_names = DeviceQuotaNames()
        #: Pods with device claims, as last received: re-derived when a claim they name
        #: changes, since an allocated claim is charged to the pod that reserves it.
        self._claim_pods: dict[str, dict[str, Any]] = {}
        #: Claim key -> the keys of the pods naming it.
        self._claim_refs: dict[str, set[str]] = {}
        self._rederiving = False
        #: Per node, why some of its device counts could not be judged.
        self._device_problems: dict[str, tuple[str, ...]] = {}
        self._total_allocatable = Resource.empty()
        # Queue usage kept as jobs change, so sessions need not walk every job to sum it.
        self._job_usage: dict[str, tuple[str, JobUsage]] = {}
        self._queue_usage: dict[str, JobUsage] = {}
        self._queue_jobs: Counter[str] = Counter()
        self._unplaced: dict[str, dict[str, TaskInfo]] = {}  # node name -> tasks awaiting it
        #: Keys of the waiting pods kube-scheduler found no node for: the reclaim loop asks
        #: whether there is one on every tick, and must not walk every waiting pod for it.
        self._unschedulable: set[str] = set()
        #: Pods as they were when kube-scheduler marked them as its preemption's victims
        #: (``DisruptionTarget``, ``PreemptionByScheduler``), for the leader's look at
        #: preemption it was not asked about: a victim may be gone within milliseconds, long
        #: before anyone polling would see it. Bounded; its reader drains it.
        self.marked_victims: deque[TaskInfo] = deque(maxlen=1024)
        self._queues: dict[str, QueueInfo] = {}
        self._podgroups: dict[str, PodGroupInfo] = {}
        #: Native group job id -> pod key -> the queue that member names: a native PodGroup
        #: that names no queue takes its members' (see ``_native_queue``).
        self._member_queues: dict[str, dict[str, str]] = {}
        self._priority_classes: dict[str, tuple[int, bool]] = {}
        self._pdbs: dict[str, PodDisruptionBudget] = {}
        self._storage = StorageCatalog()
        self._namespaces: dict[str, dict[str, str]] = {}
        self._placement = PlacementEpoch()
        #: Each queue's usage over time, told of every change of what a queue holds (set by
        #: whoever wants it measured: the live cache's builder); a fork reads it, never
        #: feeds it (a what-if's pods were never held).
        self.usage_history: UsageHistory | None = None
        self._feeds_history = True
        #: Queue name -> why its persisted usage history was refused (the leader reports
        #: each as an event and drops it from here).
        self.usage_refusals: dict[str, str] = {}
        #: The network topology: HyperNodes, label levels, the last good tree, its refusal.
        self._topology = TopologySource()

    # --- locking ------------------------------------------------------------------------

    @contextmanager
    def locked(self) -> Iterator[ClusterState]:
        with self._lock:
            yield self

    # --- EventSink ----------------------------------------------------------------------

    def upsert(self, kind: str, obj: dict[str, Any]) -> None:
        try:
            with self._lock:
                digest = _read_digest(kind, obj)
                previous = self._digests.get(digest[0]) if digest is not None else None
                if digest is not None and previous == digest[1]:
                    self._unchanged(kind, obj)
                    return
                self._classified = False
                if kind == "Pod" and digest is not None and previous is not None:
                    # Only its node name or status moved (a bind, mostly)?
                    same_pod = previous[:_DIGEST_SIZE] == digest[1][:_DIGEST_SIZE]
                    self._put_pod(obj, placement_only=same_pod)
                else:
                    self._upsert(kind, obj)
                self._classify_rest()
                self.version += 1
                self.events[(kind, "upsert")] += 1
                if digest is not None:
                    self._digests[digest[0]] = digest[1]
        except ConversionError as exc:
            self.rejected[kind] += 1
            log.error("Ignoring %s that cannot be used: %s", kind, exc)

    def _unchanged(self, kind: str, obj: dict[str, Any]) -> None:
        """An update that changes nothing the engine reads: no conversion, no new decision
        version. A pod's task stays the conversion of this version too (``cached_task``)."""
        self.events[(kind, "unchanged")] += 1
        if kind == "Pod":
            namespace, name = object_name(obj, kind)
            key = f"{namespace or 'default'}/{name}"
            version = _stored_version(obj)
            if version and key in self._converted:
                self._converted[key] = version

    def delete(self, kind: str, key: str) -> None:
        with self._lock:
            self._digests.pop((kind, key), None)
            self._classified = False
            self._delete(kind, key)
            self._classify_rest()
            self.version += 1
            self.events[(kind, "delete")] += 1

    def synced(self, kind: str) -> None:
        with self._lock:
            self._synced.add(kind)

    def has_synced(self, kinds: Iterable[str] = KINDS) -> bool:
        return all(k in self._synced for k in kinds)

    def apply_objects(self, objects: ClusterObjects) -> None:
        """Apply a whole static cluster (a YAML file) and mark every kind synced."""
        with self._lock:
            self._priority_classes.update(objects.priority_classes)
            self._converted.clear()
            self._storage.merge(objects.storage)
            for node in objects.nodes:
                self._topology.node_changed(self._node_base.get(node.name), node)
                self._node_base[node.name] = node
                self._put_node(self._with_devices(node))
            for hypernode in objects.hypernodes:
                self._topology.put_hypernode_spec(hypernode)
            for queue in objects.queues:
                self._queues[queue.name] = queue
            for pg in objects.podgroups:
                self._put_podgroup(pg)
            for pdb in objects.pdbs:
                self._pdbs[pdb.key] = pdb
            self._namespaces = {**self._namespaces, **objects.namespaces}
            for pod in objects.pods:
                self._put_pod(dict(pod))
            self.changes.structural()
            self.version += 1
        for kind in KINDS:
            self.synced(kind)

    # --- dispatch -----------------------------------------------------------------------

    def _upsert(self, kind: str, obj: dict[str, Any]) -> None:
        if kind == "Pod":
            self._put_pod(obj)
        elif kind == "Node":
            base = node_to_info(obj)
            self._topology.node_changed(self._node_base.get(base.name), base)
            self._node_base[base.name] = base
            self._put_node(self._with_devices(base))
        elif kind == "Queue":
            queue = queue_to_info(obj)
            old = self._queues.get(queue.name)
            self._queues[queue.name] = queue
            if old is None:
                self._take_up_history(queue)
            elif _same_but_history(old, queue):
                # The leader's periodic write of the queue's usage history: nothing a
                # session derives moved (the record is read once, at first sight).
                self._classified = True
        elif kind == "PodGroup":
            self._put_podgroup(podgroup_to_info(obj))
        elif kind == HYPERNODE:
            self._topology.put_hypernode(obj)
        elif kind == NATIVE_KIND:
            self._put_podgroup(native_podgroup_to_info(obj))
        elif kind == "PriorityClass":
            name, value, global_default = priority_class_value(obj)
            self._priority_classes[name] = (value, global_default)
            self._converted.clear()
            self._forget_pod_digests()
            self._refresh_job_priorities()
        elif kind == "PodDisruptionBudget":
            pdb = pdb_to_info(obj)
            self._pdbs[pdb.key] = pdb
        elif kind == "Namespace":
            name, labels = namespace_labels(obj)
            self._namespaces = {**self._namespaces, name: labels}
        elif kind in DEVICE_KINDS:
            nodes = self._device_nodes(kind, obj)
            put_storage(self._storage, kind, obj)
            if kind == "DeviceClass":
                name = str((obj.get("metadata") or {}).get("name") or "")
                problem = self._storage.devices.class_problem(name)
                if problem:
                    log.warning("DRA devices not counted: %s", problem)
                info = self._storage.devices.classes.get(name)
                mapped = self._device_names.mappings.get(name)
                extended = info.extended_resource_name if info is not None else ""
                if extended and mapped and mapped != extended:
                    log.warning(
                        "DeviceClass %s: deviceClassMappings names %s, but pods ask its "
                        "devices as %s (its extendedResourceName): they count under %s",
                        name,
                        mapped,
                        extended,
                        extended,
                    )
            self._refresh_devices(nodes | self._device_nodes(kind, obj))
            if kind == "DeviceClass":
                self._claim_changed()  # what a claim charges, and under which name
        elif kind in STORAGE_CONVERTERS:
            put_storage(self._storage, kind, obj)
            self._storage_changed()
            if kind == "ResourceClaim":
                meta = obj.get("metadata") or {}
                self._claim_changed(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
            elif kind == "ResourceClaimTemplate":
                self._claim_changed()

    def _forget_pod_digests(self) -> None:
        self._digests = {k: d for k, d in self._digests.items() if k[0] != "Pod"}

    def _classify_rest(self) -> None:
        if not self._classified:
            self.changes.structural()

    def _delete(self, kind: str, key: str) -> None:
        if kind == "Pod":
            self._delete_pod(key)
        elif kind == "Node":
            self._topology.node_changed(self._node_base.pop(key, None), None)
            self._remove_node(key)
        elif kind == "Queue":
            self._queues.pop(key, None)
            if self.usage_history is not None and self._feeds_history:
                self.usage_history.forget(key)
        elif kind == "PodGroup":
            self._remove_podgroup(key)
        elif kind == HYPERNODE:
            self._topology.delete_hypernode(key)
        elif kind == NATIVE_KIND:
            namespace, _, name = key.partition("/")
            self._remove_podgroup(PodGroupInfo(namespace, name, "", 1, source=NATIVE_SOURCE).uid)
        elif kind == "PriorityClass":
            self._priority_classes.pop(key, None)
            self._converted.clear()
            self._forget_pod_digests()
            self._refresh_job_priorities()
        elif kind == "PodDisruptionBudget":
            self._pdbs.pop(key, None)
        elif kind == "Namespace":
            self._namespaces = {k: v for k, v in self._namespaces.items() if k != key}
        elif kind in DEVICE_KINDS:
            nodes = self._device_nodes(kind, {"metadata": {"name": key}})
            if kind == "DeviceClass":
                users = [
                    c.key
                    for c in self._storage.resource_claims.values()
                    if c.allocated and key in c.devices
                ]
                if users:
                    log.warning(
                        "DeviceClass %s deleted while %d allocated claim(s) use it (%s): "
                        "their devices are no longer counted",
                        key,
                        len(users),
                        ", ".join(sorted(users)[:5]),
                    )
            delete_storage(self._storage, kind, key)
            self._refresh_devices(nodes)
            if kind == "DeviceClass":
                self._claim_changed()
        elif kind in STORAGE_CONVERTERS:
            delete_storage(self._storage, kind, key)
            self._storage_changed()
            if kind == "ResourceClaim":
                self._claim_changed(key)
            elif kind == "ResourceClaimTemplate":
                self._claim_changed()

    def _storage_changed(self) -> None:
        """A storage or device object moves no sum and no job or node a session derives
        (the checks read the catalog live), yet it can change a decision (a claim bound
        now): the decision version moves, an accounting session follows without a rebuild."""
        self._classified = True
        self.changes.sums((), ())

    # --- network topology -----------------------------------------------------------------

    def set_topology_levels(self, levels: Iterable[str]) -> None:
        """Build the tree from these node label keys, widest first (the configuration's
        ``networkTopology.labelLevels``); empty: from HyperNodes. A change is structural:
        every session must see the tree it brings."""
        with self._lock:
            if self._topology.set_levels(tuple(levels)):
                self.changes.structural()
                self.version += 1

    def topology(self) -> Topology:
        """The tree gangs are placed in: the last good one, rebuilt first when HyperNodes,
        the node set, node labels or the levels changed since it was built."""
        with self._lock:
            return self._topology.current(self._nodes)

    def topology_status(self) -> TopologySource:
        """The topology's source as it is (levels, HyperNodes, refusal), its tree current.
        Read it under the lock (``locked()``): it is the live object."""
        with self._lock:
            self._topology.current(self._nodes)
            return self._topology

    def take_topology_refusals(self) -> dict[str, str]:
        """The refused HyperNodes not yet reported, each with its sentence (the leader
        records an event on each); emptied by the call."""
        with self._lock:
            self._topology.current(self._nodes)
            return self._topology.take_unreported()

    # --- DRA devices ----------------------------------------------------------------------

    def set_device_names(self, names: DeviceQuotaNames) -> None:
        """Count device classes under these quota names from now on (a configuration
        change): every node's devices and every claim's charge are derived again."""
        with self._lock:
            if names == self._device_names:
                return
            self._device_names = names
            shared: dict[str, list[str]] = {}
            for device_class, name in sorted(names.mappings.items()):
                shared.setdefault(name, []).append(device_class)
            for name, classes in shared.items():
                if len(classes) > 1:
                    log.info(
                        "deviceClassMappings: classes %s count under %s; a device several of "
                        "them accept counts once, and a node's device-plugin %s is added to",
                        ", ".join(classes),
                        name,
                        name,
                    )
            self._refresh_devices(set(self._node_base))
            self._claim_changed()
            self.changes.structural()
            self.version += 1

    @property
    def device_names(self) -> DeviceQuotaNames:
        return self._device_names

    def _device_nodes(self, kind: str, obj: Mapping[str, Any]) -> set[str]:
        """The nodes whose device counts an event on this object may move."""
        devices = self._storage.devices
        if kind == "DeviceClass":
            return set(devices.nodes())
        name = str((obj.get("metadata") or {}).get("name") or "")
        old = devices.slices.get(name)
        node = str((obj.get("spec") or {}).get("nodeName") or "")
        found = {n for n in (node, old.node_name if old is not None else "") if n}
        if old is not None:
            # A new generation of a pool replaces its slices on every node it spans.
            found.update(
                s.node_name
                for s in devices.slices.values()
                if s.driver == old.driver and s.pool == old.pool and s.node_name
            )
        return found

    def _refresh_devices(self, nodes: Iterable[str]) -> None:
        """Put the named nodes again with their device counts (a structural change: the
        cluster's capacity moved)."""
        for name in sorted(nodes):
            base = self._node_base.get(name)
            if base is None:
                if name in self._storage.devices.nodes():
                    log.warning(
                        "DRA devices not counted: a ResourceSlice names node %s, which is "
                        "not in the cache",
                        name,
                    )
                continue
            self._put_node(self._with_devices(base))

    def _with_devices(self, base: NodeInfo) -> NodeInfo:
        """The node with its DRA devices added to its allocatable, per quota name. A device
        plugin's amount of the same name (a node in migration) is added to, never replaced:
        the devices are different ones."""
        counts, problems = self._storage.devices.node_resources(base.name, self._device_names)
        reasons = tuple(sorted({p.reason for p in problems}))
        if reasons != self._device_problems.get(base.name, ()):
            for reason in reasons:
                log.warning("DRA devices of node %s not counted: %s", base.name, reason)
        if reasons:
            self._device_problems[base.name] = reasons
        else:
            self._device_problems.pop(base.name, None)
        if not counts:
            return base
        allocatable = base.allocatable.clone()
        capacity = base.capacity.clone()
        for name, count in counts.items():
            allocatable.add_scalar(name, count * 1000.0)
            capacity.add_scalar(name, count * 1000.0)
        return NodeInfo.new(
            base.name,
            allocatable,
            capacity,
            labels=base.labels,
            taints=base.taints,
            unschedulable=base.unschedulable,
            ready=base.ready,
        )

    def device_problems(self) -> list[str]:
        """Why some DRA devices are not counted now: classes whose selectors do not
        compile, devices a class's selector fails on, slices naming a node not in the
        cache. Shown by readiness (which stays ready: the rest of the cluster is judged)."""
        with self._lock:
            devices = self._storage.devices
            found = {devices.class_problem(c) for c in devices.classes}
            for reasons in self._device_problems.values():
                found.update(reasons)
            found.update(
                f"ResourceSlices name node {n}, which is not in the cache"
                for n in devices.nodes()
                if n not in self._node_base
            )
            found.discard("")
            return sorted(found)

    def _claim_changed(self, key: str = "") -> None:
        """Derive again the pods naming claim ``key`` (every pod with claims when no key is
        given: a template or the names changed): what a claim charges, and to whom, may
        have moved. A pod with no claim is never touched."""
        pods = self._claim_refs.get(key, set()) if key else set(self._claim_pods)
        self._rederive(pods)

    def _charge_claims(self, task: TaskInfo) -> None:
        """Add to the task's request the devices its claims charge it for. A claim counts
        once, for one pod: the first of its ``status.reservedFor`` (the pod kube-scheduler
        reserved it for first), or, while nobody reserved it, the first by namespace/name
        of the pods naming it. Allocated, it charges the devices it holds; not yet allocated
        (or not yet made from its template), the devices its ``ExactCount`` requests ask;
        an ``All`` request is charged once allocated (its count depends on the node). A
        class the engine cannot judge (unknown, or its selector does not compile) is not
        charged, as its devices are not counted."""
        extra: dict[str, float] = {}
        catalog = self._storage
        for ref in task.resource_claims:
            per_class: Mapping[str, int] = {}
            if ref.claim:
                key = f"{task.namespace}/{ref.claim}"
                claim = catalog.resource_claims.get(key)
                if claim is None or self._claim_owner(key, claim.reserved_for) != task.uid:
                    continue
                per_class = claim.devices if claim.allocated else claim.shape.exact_counts()
            elif ref.template:
                template = catalog.claim_templates.get(f"{task.namespace}/{ref.template}")
                if template is not None:
                    per_class = template.shape.exact_counts()
            for device_class, count in per_class.items():
                if catalog.devices.class_problem(device_class):
                    # Not judged: the cluster's devices of the class are not counted, so
                    # neither is the claim (a share of nothing would refuse the pod).
                    continue
                name = self._device_names.name_of(
                    device_class, catalog.devices.classes.get(device_class)
                )
                extra[name] = extra.get(name, 0.0) + count * 1000.0
        if extra:
            resreq = task.resreq.clone()
            init_resreq = task.init_resreq.clone()
            for name, amount in extra.items():
                resreq.add_scalar(name, amount)
                init_resreq.add_scalar(name, amount)
            task.resreq = resreq
            task.init_resreq = init_resreq

    def _claim_owner(self, key: str, reserved_for: tuple[str, ...]) -> str:
        """The uid of the pod a claim is charged to (see ``_charge_claims``)."""
        if reserved_for:
            return reserved_for[0]
        pods = self._claim_refs.get(key)
        if not pods:
            return ""
        first = self._claim_pods[min(pods)]
        return str((first.get("metadata") or {}).get("uid") or "")

    def _claim_keys(self, task: TaskInfo) -> set[str]:
        return {f"{task.namespace}/{ref.claim}" for ref in task.resource_claims if ref.claim}

    def _rederive(self, pod_keys: Iterable[str]) -> None:
        """Put the named claim pods again (their charge may have moved)."""
        if self._rederiving:
            return
        self._rederiving = True
        try:
            for key in sorted(pod_keys):
                pod = self._claim_pods.get(key)
                if pod is not None:
                    self._put_pod(pod)
        finally:
            self._rederiving = False

    # --- pods ---------------------------------------------------------------------------

    def priority_values(self) -> dict[str, int]:
        """PriorityClass name -> value."""
        return {name: value for name, (value, _) in self._priority_classes.items()}

    def _global_default(self) -> int | None:
        for value, is_default in self._priority_classes.values():
            if is_default:
                return value
        return None

    def _put_pod(self, pod: dict[str, Any], *, placement_only: bool = False) -> None:
        """``placement_only``: the pod differs from the version the cache converted last
        in nothing but ``spec.nodeName`` and ``status`` (see ``_read_digest``), so its task
        is made from the last one where that can be done exactly."""
        task = None
        if placement_only:
            namespace, name = object_name(pod, "Pod")
            old = self._tasks.get(f"{namespace or 'default'}/{name}")
            if old is not None and placement_convertible(old, pod):
                task = replaced_placement(old, pod)
        if task is None:
            task = pod_to_task(pod, self.priority_values())
        siblings = self._forget_claim_refs(task.key)
        if task.resource_claims:
            self._claim_pods[task.key] = pod
            for key in self._claim_keys(task):
                refs = self._claim_refs.setdefault(key, set())
                siblings.update(refs)
                refs.add(task.key)
            self._charge_claims(task)
        old = self._tasks.get(task.key)
        before = self._jobs_of(old, task)
        job_id, synthesized = pod_job_id(pod)
        # A plain pod's group of one is re-derived from the pod on every update; kept as the
        # same object when it stays in its queue, so the update is a change of its sums
        # rather than a job going and another coming.
        fresh = synthesized_job(task, pod_queue_annotation(pod)) if synthesized else None
        kept = self._jobs.get(job_id) if old is not None and old.job == job_id else None
        if kept is None or fresh is None or not kept.synthesized or kept.queue != fresh.queue:
            kept = None
        key = task.key  # one string for both maps' keys
        self._remove_pod(key, keep_job=kept is not None)
        self._tasks[key] = task
        version = _stored_version(pod)
        if version and not task.resource_claims:
            # (A pod with device claims is charged its claims' devices here: its task is
            # more than the conversion.)
            self._converted[key] = version
        if task.unschedulable and task.status == TaskStatus.PENDING:
            self._unschedulable.add(key)
        if task.disruption_target and task.node_name and (old is None or not old.disruption_target):
            self.marked_victims.append(task)
        job = self._jobs.get(job_id)
        if kept is not None and fresh is not None:
            respec_synthesized(kept, fresh)
        elif job is None and fresh is not None:
            job = fresh
            self._jobs[job_id] = job
        if job is not None:
            job.add_task_info(task)
            self._touch(job_id)
        else:
            self._orphans.setdefault(job_id, {})[task.uid] = task
        self._place(task)
        self._classify_pod(old, task, before)
        if _native_job(job_id) or (old is not None and _native_job(old.job)):
            if old is not None and old.job != job_id:
                self._note_member_queue(old.job, key, "")
            if _native_job(job_id):
                self._note_member_queue(job_id, key, named_queue(pod))
        if siblings:
            self._rederive(siblings)

    def _forget_claim_refs(self, pod_key: str) -> set[str]:
        """Forget a pod's claim references; the other pods naming its claims (their
        charge may move when this one comes or goes)."""
        pod = self._claim_pods.pop(pod_key, None)
        old = self._tasks.get(pod_key)
        if pod is None or old is None:
            return set()
        siblings: set[str] = set()
        for key in self._claim_keys(old):
            refs = self._claim_refs.get(key)
            if refs is not None and pod_key in refs:
                refs.discard(pod_key)
                siblings.update(refs)
                if not refs:
                    del self._claim_refs[key]
        return siblings

    def _delete_pod(self, key: str) -> None:
        old = self._tasks.get(key)
        before = self._jobs_of(old, None)
        siblings = self._forget_claim_refs(key)
        self._remove_pod(key)
        self._classify_pod(old, None, before)
        if old is not None and _native_job(old.job):
            self._note_member_queue(old.job, key, "")
        if siblings:
            self._rederive(siblings)

    def _jobs_of(self, *tasks: TaskInfo | None) -> dict[str, JobInfo | None]:
        return {t.job: self._jobs.get(t.job) for t in tasks if t is not None}

    def _classify_pod(
        self, old: TaskInfo | None, new: TaskInfo | None, before: dict[str, JobInfo | None]
    ) -> None:
        """Inert when the pod kept everything a sum reads; sums-only when its jobs are the
        same objects before and after (none appeared or went); else left structural."""
        if any(self._jobs.get(uid) is not job for uid, job in before.items()):
            return
        self._classified = True
        if old is not None and new is not None and same_sums(old, new):
            return
        jobs = [uid for uid, job in before.items() if job is not None]
        nodes = [t.node_name for t in (old, new) if t is not None and t.node_name]
        self.changes.sums(jobs, nodes)

    def _place(self, task: TaskInfo) -> None:
        if not task.node_name or completed_status(task.status):
            return
        node = self._nodes.get(task.node_name)
        if node is None:
            self._unplaced.setdefault(task.node_name, {})[task.uid] = task
            return
        try:
            node.add_task(task)
        except NodeError as exc:
            log.warning("%s", exc)
        self._placement.value += 1

    def _remove_pod(self, key: str, *, keep_job: bool = False) -> None:
        """``keep_job``: the pod comes straight back into its kept job, whose caller
        re-derives the job's usage once it is back (deriving it for the moment between is
        half the cost of a bind's update)."""
        task = self._tasks.pop(key, None)
        if task is None:
            return
        self._converted.pop(key, None)
        self._unschedulable.discard(key)
        job = self._jobs.get(task.job)
        if job is not None:
            job.delete_task_info(task)
            if not keep_job:
                if job.synthesized and not job.tasks:
                    del self._jobs[task.job]
                self._touch(task.job)
        orphans = self._orphans.get(task.job)
        if orphans is not None:
            orphans.pop(task.uid, None)
            if not orphans:
                del self._orphans[task.job]
        node = self._nodes.get(task.node_name)
        if node is not None:
            node.remove_task(task)
            self._placement.value += 1
        waiting = self._unplaced.get(task.node_name)
        if waiting is not None:
            waiting.pop(task.uid, None)
            if not waiting:
                del self._unplaced[task.node_name]

    # --- nodes, podgroups, priority classes -----------------------------------------------

    def _put_node(self, node: NodeInfo) -> None:
        old = self._nodes.get(node.name)
        if old is not None:
            self._total_allocatable.sub_without_assert(old.allocatable)
        self._total_allocatable.add(node.allocatable)
        tasks = list(old.tasks.values()) if old is not None else []
        tasks.extend(self._unplaced.pop(node.name, {}).values())
        self._nodes[node.name] = node
        for task in tasks:
            try:
                node.add_task(task)
            except NodeError as exc:
                log.warning("%s", exc)

    def _remove_node(self, name: str) -> None:
        self._device_problems.pop(name, None)
        node = self._nodes.pop(name, None)
        if node is not None:
            self._total_allocatable.sub_without_assert(node.allocatable)
        if node is not None and node.tasks:
            self._unplaced[name] = dict(node.tasks)

    def _put_podgroup(self, pg: PodGroupInfo) -> None:
        if pg.source == NATIVE_SOURCE and not pg.queue_named:
            pg = replace(pg, queue=self._native_queue(pg.uid, pg.queue))
        self._podgroups[pg.uid] = pg
        job = self._jobs.get(pg.uid)
        if (
            job is not None
            and job.queue == pg.queue
            and not job.synthesized
            and job.network_topology == pg.network_topology
        ):
            # The same job in the same queue: its spec and phase change its usage only.
            self._classified = True
            self.changes.sums([pg.uid], ())
        if job is None:
            job = job_from_podgroup(pg, self.priority_values(), self._global_default())
            self._jobs[pg.uid] = job
            for task in self._orphans.pop(pg.uid, {}).values():
                job.add_task_info(task)
        else:
            apply_podgroup(job, pg, self.priority_values(), self._global_default())
        self._touch(pg.uid)

    def _native_queue(self, job_id: str, default: str) -> str:
        """The queue of a native group whose PodGroup names none: the one its members name
        (the member whose key sorts first when they disagree, whatever order they came in),
        else ``default``."""
        named = self._member_queues.get(job_id)
        if not named:
            return default
        return named[min(named)]

    def _note_member_queue(self, job_id: str, pod_key: str, queue: str) -> None:
        """Remember which queue a native group's member names (or that it names none), and
        move the job when its resolved queue changes: a job changing queue is structural."""
        named = self._member_queues.setdefault(job_id, {})
        if queue:
            named[pod_key] = queue
        else:
            named.pop(pod_key, None)
        if not named:
            del self._member_queues[job_id]
        pg = self._podgroups.get(job_id)
        if pg is None or pg.queue_named:
            return
        queue_now = self._native_queue(job_id, DEFAULT_QUEUE)
        if queue_now != pg.queue:
            self._put_podgroup(replace(pg, queue=queue_now))
            self.changes.structural()

    def _remove_podgroup(self, key: str) -> None:
        self._podgroups.pop(key, None)
        job = self._jobs.pop(key, None)
        if job is not None and job.tasks:
            self._orphans[key] = dict(job.tasks)
        self._touch(key)

    def _touch(self, job_id: str) -> None:
        """Re-derive one job's contribution to its queue's usage (O(1) per event)."""
        previous = self._job_usage.pop(job_id, None)
        if previous is not None:
            queue, usage = previous
            usage.take_from(self._queue_usage[queue])
            self._queue_jobs[queue] -= 1
            if not self._queue_jobs[queue]:
                del self._queue_jobs[queue]
                del self._queue_usage[queue]
        job = self._jobs.get(job_id)
        if job is not None:
            if job.source == NATIVE_SOURCE:
                job.phase = native_phase(job)
            usage = job_usage(job)
            self._job_usage[job_id] = (job.queue, usage)
            usage.add_to(self._queue_usage.setdefault(job.queue, JobUsage.empty()))
            self._queue_jobs[job.queue] += 1
        if self.usage_history is not None and self._feeds_history:
            moved = {previous[0]} if previous is not None else set()
            if job is not None:
                moved.add(job.queue)
            for queue in moved:
                total = self._queue_usage.get(queue)
                self.usage_history.held(
                    queue, total.allocated if total is not None else Resource.empty()
                )

    def _take_up_history(self, queue: QueueInfo) -> None:
        """The first sight of a queue: its persisted usage, if any, is taken up (once)."""
        if self.usage_history is None or not self._feeds_history:
            return
        if queue.usage_record_error:
            self.usage_refusals[queue.name] = queue.usage_record_error
        self.usage_history.restore(queue.name, queue.usage_record)

    def _refresh_job_priorities(self) -> None:
        values, default = self.priority_values(), self._global_default()
        for uid, pg in self._podgroups.items():
            job = self._jobs.get(uid)
            if job is not None:
                apply_podgroup(job, pg, values, default)

    # --- reads --------------------------------------------------------------------------

    def queues(self) -> dict[str, QueueInfo]:
        """Defined queues plus the implicit ``default`` and ``root``."""
        with self._lock:
            queues = dict(self._queues)
        for name in (DEFAULT_QUEUE, ROOT_QUEUE):
            queues.setdefault(name, implicit_queue(name))
        return queues

    @property
    def decision_version(self) -> int:
        """Moved by every event that is not inert (see ``changes.py``)."""
        return self.changes.version

    def queue_usage_view(self) -> Mapping[str, JobUsage]:
        """The live per-queue job usage sums, read-only; hold the lock while using it."""
        return MappingProxyType(self._queue_usage)

    def task(self, key: str) -> TaskInfo | None:
        return self._tasks.get(key)

    def cached_task(self, pod: Mapping[str, Any]) -> TaskInfo | None:
        """The cache's own task for ``pod`` when it was converted from this very version of
        the pod (same resourceVersion and uid, no PriorityClass changed since), else None.

        The API server never gives two versions of a pod one resourceVersion, so the task
        equals what ``pod_to_task`` would make of ``pod`` now. Only for pods as the API
        server stored them (kube-scheduler's calls): a hand-edited pod may keep the
        version it was copied at. The task is the cache's: copy it before changing it.
        Hold the lock while asking."""
        version = _stored_version(pod)
        if not version:
            return None
        namespace, name = object_name(pod, "Pod")
        key = f"{namespace or 'default'}/{name}"
        if self._converted.get(key) != version:
            return None
        task = self._tasks.get(key)
        uid = pod["metadata"].get("uid")
        return task if task is not None and task.uid == str(uid or key) else None

    def any_unschedulable(self) -> bool:
        """Whether some waiting pod was found unschedulable by kube-scheduler, of a job a
        session sees: one whose PodGroup has arrived, in a queue that exists (as
        ``shared_snapshot`` has them). Hold the lock while asking."""
        if not self._unschedulable:
            return False
        queues = self.queues()
        return any(
            (job := self._jobs.get(self._tasks[key].job)) is not None and job.queue in queues
            for key in self._unschedulable
        )

    def nodes_view(self) -> Mapping[str, NodeInfo]:
        """The live node mapping, read-only; hold the lock while using it."""
        return MappingProxyType(self._nodes)

    def has_node(self) -> Callable[[str], bool]:
        """The live node map's own membership test (``dict.__contains__``), for checking
        thousands of names a request in C; the read-only view's ``in``, or its key view's,
        costs twice as much per name. Hold the lock while using it."""
        return self._nodes.__contains__

    def node_names(self) -> list[str]:
        with self._lock:
            return list(self._nodes)

    def counts(self) -> dict[str, int]:
        """The objects held, by kind as the API server lists them: Volcano's PodGroups and
        Kubernetes' own are two kinds, counted apart."""
        with self._lock:
            native = sum(1 for pg in self._podgroups.values() if pg.source == NATIVE_SOURCE)
            return {
                "pods": len(self._tasks),
                "nodes": len(self._nodes),
                "queues": len(self._queues),
                "podgroups": len(self._podgroups) - native,
                "nativepodgroups": native,
                "jobs": len(self._jobs),
                "priorityclasses": len(self._priority_classes),
                "pdbs": len(self._pdbs),
                "persistentvolumeclaims": len(self._storage.claims),
                "persistentvolumes": len(self._storage.volumes),
                "resourceclaims": len(self._storage.resource_claims),
                "resourceclaimtemplates": len(self._storage.claim_templates),
                "resourceslices": len(self._storage.devices.slices),
                "deviceclasses": len(self._storage.devices.classes),
            }

    def _session_jobs(self, queues: Mapping[str, QueueInfo]) -> dict[str, JobInfo]:
        return {uid: job for uid, job in self._jobs.items() if job.queue in queues}

    def snapshot(self) -> ClusterSnapshot:
        """A private, consistent copy for one session (Volcano's ``Cache.Snapshot``)."""
        with self._lock:
            return self.shared_snapshot().clone()

    def shared_snapshot(self) -> ClusterSnapshot:
        """The live objects, not copied: only for sessions that read and never decide
        (computing queue shares). Call with the lock held for as long as it is used.

        The queue sums too are the live ones (copying ~200 of them was a fifth of an
        accounting rebuild): a session reads them once, as it opens. Whoever adjusts one in
        the snapshot must put a copy in its place first."""
        queues = self.queues()
        return ClusterSnapshot(
            jobs=self._session_jobs(queues),
            nodes=dict(self._nodes),
            queues=queues,
            pdbs=list(self._pdbs.values()),
            priority_classes=self.priority_values(),
            total_allocatable=self._total_allocatable.clone(),
            queue_usage={q: u for q, u in self._queue_usage.items() if q in queues},
            storage=self._storage,
            namespace_labels=self._namespaces,
            placement_epoch=self._placement,
            usage_history=self.usage_history,
            topology=self._topology.current(self._nodes),
        )

    def fork(self) -> ClusterState:
        """A private copy of the state, for a what-if: objects can be added to and removed
        from it through the same code paths as the live cache's (so a what-if and a
        ``simulate`` of the same objects agree), and a session may decide on its snapshot,
        without the live state changing.

        Copy-on-write at the task: jobs, nodes and every map and sum are copied, the task
        objects are shared. The cache never changes a task in place (an update replaces
        it), so only a session can; a session over a fork must therefore be opened with
        ``shared_tasks=True``, and its statements copy a task before its first change.
        That makes the fork cost a few dict copies per job and node instead of a clone of
        every pod, and it takes the lock for no longer than that."""
        with self._lock:
            other = ClusterState()
            other.version = self.version
            other.changes = ChangeLog(self.changes.version)
            other._synced = set(self._synced)
            other._tasks = dict(self._tasks)
            # (``_converted`` starts empty: a fork converts the pods it is given.)
            other._jobs = {uid: job.copy_sharing_tasks() for uid, job in self._jobs.items()}
            other._orphans = {job: dict(waiting) for job, waiting in self._orphans.items()}
            other._nodes = {name: node.copy_sharing_tasks() for name, node in self._nodes.items()}
            other._node_base = dict(self._node_base)
            other._device_names = self._device_names
            other._claim_pods = dict(self._claim_pods)
            other._claim_refs = {k: set(v) for k, v in self._claim_refs.items()}
            other._device_problems = dict(self._device_problems)
            other._total_allocatable = self._total_allocatable.clone()
            # Job usages are replaced, never changed, on an event: sharing them is safe.
            other._job_usage = dict(self._job_usage)
            other._queue_usage = {q: u.clone() for q, u in self._queue_usage.items()}
            other._queue_jobs = Counter(self._queue_jobs)
            other._unplaced = {node: dict(waiting) for node, waiting in self._unplaced.items()}
            other._unschedulable = set(self._unschedulable)
            other._queues = dict(self._queues)
            other._podgroups = dict(self._podgroups)
            other._member_queues = {j: dict(m) for j, m in self._member_queues.items()}
            other._priority_classes = dict(self._priority_classes)
            other._pdbs = dict(self._pdbs)
            other._storage = self._storage.copy()
            other._namespaces = dict(self._namespaces)
            other._placement = PlacementEpoch(self._placement.value)
            other.usage_history = self.usage_history
            other._feeds_history = False
            other._topology = self._topology.copy()
            return other

    def whatif_snapshot(self, nodes: Iterable[str], jobs: Iterable[str] = ()) -> ClusterSnapshot:
        """Copy-on-write: everything is shared except the named nodes, the jobs with tasks
        on them and the named jobs, which are cloned and linked to each other. A session
        may then evict and pipeline on those nodes without touching the cache, at a cost
        proportional to what it can touch rather than to the cluster."""
        with self._lock:
            snapshot = self.shared_snapshot()
            node_names = [n for n in nodes if n in self._nodes]
            job_ids = {j for j in jobs if j in snapshot.jobs}
            for name in node_names:
                for task in self._nodes[name].tasks.values():
                    if task.job in snapshot.jobs:
                        job_ids.add(task.job)
            tasks: dict[str, TaskInfo] = {}
            for uid in job_ids:
                clone = snapshot.jobs[uid].clone()
                snapshot.jobs[uid] = clone
                tasks.update(clone.tasks)
            for name in node_names:
                snapshot.nodes[name] = self._nodes[name].clone(tasks)
            return snapshot


def _native_job(job_id: str) -> bool:
    """Whether a job id is a native PodGroup's (see ``NATIVE_JOB_PREFIX``)."""
    return job_id.partition("/")[2].startswith(NATIVE_JOB_PREFIX)


def _stored_version(pod: Mapping[str, Any]) -> str:
    """The resourceVersion of a pod as the API server stored it; "" without one (a static
    file's pod, a hand-made one)."""
    meta = pod.get("metadata")
    version = meta.get("resourceVersion") if isinstance(meta, dict) else None
    return version if isinstance(version, str) else ""


#: What the engine never reads of any object: the server's version stamp and the record of
#: which client wrote which field.
_UNREAD_METADATA = frozenset({"resourceVersion", "managedFields"})
#: Of a node condition, the kubelet's periodic "still so" stamp (a change of the condition
#: itself moves its status, reason, message or lastTransitionTime).
_UNREAD_CONDITION = "lastHeartbeatTime"
_DIGESTED_KINDS = frozenset({"Pod", "Node"})
#: Bytes of each digest; a pod's is two: of the pod without ``spec.nodeName`` and
#: ``status``, then of those two (a bind changes only the second).
_DIGEST_SIZE = 16


def _read_digest(kind: str, obj: Mapping[str, Any]) -> tuple[tuple[str, str], bytes] | None:
    """((kind, key), digest of ``obj`` without what the engine never reads), or None when
    ``kind`` is not digested or the object has an unexpected shape (it is then converted,
    and its conversion says what is wrong). Everything else of the object is digested, so
    an update that changes any other field is never taken for an unchanged one."""
    if kind not in _DIGESTED_KINDS:
        return None
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return None
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not name:
        return None
    key = f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
    view = {**obj, "metadata": {k: v for k, v in meta.items() if k not in _UNREAD_METADATA}}
    status = obj.get("status")
    if kind == "Node" and isinstance(status, dict):
        conditions = status.get("conditions")
        if isinstance(conditions, list):
            view["status"] = {
                **status,
                "conditions": [
                    {k: v for k, v in c.items() if k != _UNREAD_CONDITION}
                    if isinstance(c, dict)
                    else c
                    for c in conditions
                ],
            }
    placement: list[Any] = []
    if kind == "Pod":
        spec = view.get("spec")
        if isinstance(spec, dict) and "nodeName" in spec:
            view["spec"] = {k: v for k, v in spec.items() if k != "nodeName"}
            placement.extend((True, spec["nodeName"]))
        else:
            placement.extend((False, None))
        placement.extend(("status" in view, view.pop("status", None)))
    try:
        encoded = orjson.dumps(view)
        digest = hashlib.blake2b(encoded, digest_size=_DIGEST_SIZE).digest()
        if placement:
            digest += hashlib.blake2b(orjson.dumps(placement), digest_size=_DIGEST_SIZE).digest()
    except TypeError:
        return None
    return (kind, key), digest
