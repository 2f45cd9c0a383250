"""What the engine reads of the cache: single objects and sums under the lock, a session's
snapshot (private, shared or copy-on-write for a what-if), and the copy of the store a
fork starts from. The read side of ``ClusterState``; the event side is in ``state.py``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from scheduler_core.api.devices import DeviceQuotaNames
from scheduler_core.api.job import NATIVE_SOURCE, JobInfo
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.queue import DEFAULT_QUEUE, ROOT_QUEUE, QueueInfo
from scheduler_core.api.snapshot import ClusterSnapshot, PlacementEpoch
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.topology import Topology
from scheduler_core.api.usage import JobUsage
from scheduler_core.cache.changes import ChangeLog
from scheduler_core.cache.convert import ConversionError, object_name
from scheduler_core.cache.digest import stored_version
from scheduler_core.cache.jobs import implicit_queue
from scheduler_core.cache.known_offers import OfferedNameDecoder
from scheduler_core.cache.store import ClusterStore
from scheduler_core.cache.topology_source import TopologySource


class ClusterViews:
    """The reads of a store behind a lock (see ``ClusterState``, which feeds it)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        """``clock``: what the cache's own timed work reads (how often the offered-name
        decoder is built again)."""
        self._lock = threading.RLock()
        self._store = ClusterStore()
        self._offered_names = OfferedNameDecoder(clock)

    # --- single objects and sums ----------------------------------------------------------

    def queues(self) -> dict[str, QueueInfo]:
        """Defined queues plus the implicit ``default`` and ``root``."""
        with self._lock:
            queues = dict(self._store.queues)
        for name in (DEFAULT_QUEUE, ROOT_QUEUE):
            queues.setdefault(name, implicit_queue(name))
        return queues

    @property
    def decision_version(self) -> int:
        """Moved by every event that is not inert (see ``changes.py``)."""
        return self._store.changes.version

    def queue_usage_view(self) -> Mapping[str, JobUsage]:
        """The live per-queue job usage sums, read-only; hold the lock while using it."""
        return MappingProxyType(self._store.sums.queue_usage)

    def task(self, key: str) -> TaskInfo | None:
        return self._store.tasks.get(key)

    def job(self, uid: str) -> JobInfo | None:
        """The cache's own job (hold the lock while using it)."""
        return self._store.jobs.get(uid)

    def cached_task(self, pod: Mapping[str, Any]) -> TaskInfo | None:
        """The cache's own task for ``pod`` when it was converted from this very version of
        the pod (same resourceVersion and uid, no PriorityClass changed since), else None.

        The API server never gives two versions of a pod one resourceVersion, so the task
        equals what ``pod_to_task`` would make of ``pod`` now. Only for pods as the API
        server stored them (kube-scheduler's calls): a hand-edited pod may keep the
        version it was copied at. The task is the cache's: copy it before changing it.
        Hold the lock while asking."""
        meta = pod.get("metadata")
        if type(meta) is dict:
            # Decoded JSON (every verb call's pod): the accessors' shape checks in one
            # place, with what they give for it.
            version, name = meta.get("resourceVersion"), meta.get("name")
            if type(version) is str and type(name) is str:
                if not version:
                    return None
                if not name:
                    raise ConversionError("Pod: metadata.name is required")
                namespace = meta.get("namespace")
                key = f"{namespace if type(namespace) is str and namespace else 'default'}/{name}"
                return self._converted_task(key, version, meta.get("uid"))
        return self._cached_task_by_accessors(pod)

    def _cached_task_by_accessors(self, pod: Mapping[str, Any]) -> TaskInfo | None:
        """``cached_task`` of a pod of any shape, through the converter's accessors."""
        version = stored_version(pod)
        if not version:
            return None
        namespace, name = object_name(pod, "Pod")
        key = f"{namespace or 'default'}/{name}"
        return self._converted_task(key, version, pod["metadata"].get("uid"))

    def _converted_task(self, key: str, version: str, uid: object) -> TaskInfo | None:
        if self._store.converted.get(key) != version:
            return None
        task = self._store.tasks.get(key)
        return task if task is not None and task.uid == str(uid or key) else None

    def any_unschedulable(self) -> bool:
        """Whether some waiting pod was found unschedulable by kube-scheduler, of a job a
        session sees: one whose PodGroup has arrived, in a queue that exists (as
        ``shared_snapshot`` has them). Hold the lock while asking."""
        store = self._store
        if not store.unschedulable:
            return False
        queues = self.queues()
        return any(
            (job := store.jobs.get(store.tasks[key].job)) is not None and job.queue in queues
            for key in store.unschedulable
        )

    def nodes_view(self) -> Mapping[str, NodeInfo]:
        """The live node mapping, read-only; hold the lock while using it."""
        return MappingProxyType(self._store.nodes)

    def has_node(self) -> Callable[[str], bool]:
        """The live node map's own membership test (``dict.__contains__``), for checking
        thousands of names a request in C; the read-only view's ``in``, or its key view's,
        costs twice as much per name. Hold the lock while using it."""
        return self._store.nodes.__contains__

    def offered_all_known(self, names: Sequence[str]) -> bool:
        """Whether the cache holds a node of every name in ``names``; a tuple found so is
        remembered, and answered without a look, until a node is removed (see
        ``KnownOffers``). Hold the lock while using it."""
        store = self._store
        return store.known_offers.all_known(names, store.nodes)

    def decode_offered_names(self, data: bytes) -> tuple[str, ...] | None:
        """``data`` (a JSON array of node names) decoded into the node map's own strings, when
        every name is one the cache held lately; None for anything else, which the caller
        decodes as it would any JSON (see ``OfferedNameDecoder``). Takes the lock only to
        build a decoder, or for a moment to vouch for the list."""
        return self._offered_names.decode(data, self)

    def names_at(self) -> tuple[int, list[str]]:
        """The node names' version (see ``KnownOffers``) and the node map's names."""
        with self._lock:
            store = self._store
            return store.known_offers.names_version, list(store.nodes)

    def names_version(self) -> int:
        """Moved whenever a node joins or leaves the cache; read without the lock."""
        return self._store.known_offers.names_version

    def vouch_offered(self, names: tuple[str, ...], version: int) -> bool:
        """``KnownOffers.vouch``: ``names`` were each a node's name at ``version``."""
        with self._lock:
            return self._store.known_offers.vouch(names, version)

    def node_names(self) -> list[str]:
        with self._lock:
            return list(self._store.nodes)

    def priority_values(self) -> dict[str, int]:
        """PriorityClass name -> value."""
        return self._store.priority_values()

    def counts(self) -> dict[str, int]:
        """The objects held, by kind as the API server lists them: Volcano's PodGroups and
        Kubernetes' own are two kinds, counted apart."""
        with self._lock:
            store = self._store
            native = sum(1 for pg in store.podgroups.values() if pg.source == NATIVE_SOURCE)
            return {
                "pods": len(store.tasks),
                "nodes": len(store.nodes),
                "queues": len(store.queues),
                "podgroups": len(store.podgroups) - native,
                "nativepodgroups": native,
                "jobs": len(store.jobs),
                "priorityclasses": len(store.priority_classes),
                "pdbs": len(store.pdbs),
                "persistentvolumeclaims": len(store.storage.claims),
                "persistentvolumes": len(store.storage.volumes),
                "resourceclaims": len(store.storage.resource_claims),
                "resourceclaimtemplates": len(store.storage.claim_templates),
                "resourceslices": len(store.storage.devices.slices),
                "deviceclasses": len(store.storage.devices.classes),
            }

    # --- network topology and devices -----------------------------------------------------

    def topology(self) -> Topology:
        """The tree gangs are placed in: the last good one, rebuilt first when HyperNodes,
        the node set, node labels or the levels changed since it was built."""
        with self._lock:
            return self._store.topology.current(self._store.nodes)

    def topology_status(self) -> TopologySource:
        """The topology's source as it is (levels, HyperNodes, refusal), its tree current.
        Read it under the lock (``locked()``): it is the live object."""
        with self._lock:
            self._store.topology.current(self._store.nodes)
            return self._store.topology

    def take_topology_refusals(self) -> dict[str, str]:
        """The refused HyperNodes not yet reported, each with its sentence (the leader
        records an event on each); emptied by the call."""
        with self._lock:
            self._store.topology.current(self._store.nodes)
            return self._store.topology.take_unreported()

    @property
    def device_names(self) -> DeviceQuotaNames:
        return self._store.charging.names

    def device_problems(self) -> list[str]:
        """Why some DRA devices are not counted now: classes whose selectors do not
        compile, devices a class's selector fails on, slices naming a node not in the
        cache. Shown by readiness (which stays ready: the rest of the cluster is judged)."""
        with self._lock:
            return self._store.charging.problems(self._store.node_base)

    # --- snapshots --------------------------------------------------------------------------

    def _session_jobs(self, queues: Mapping[str, QueueInfo]) -> dict[str, JobInfo]:
        return {uid: job for uid, job in self._store.jobs.items() if job.queue in queues}

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
        store = self._store
        queues = self.queues()
        return ClusterSnapshot(
            jobs=self._session_jobs(queues),
            nodes=dict(store.nodes),
            queues=queues,
            pdbs=list(store.pdbs.values()),
            priority_classes=store.priority_values(),
            total_allocatable=store.total_allocatable.clone(),
            queue_usage={q: u for q, u in store.sums.queue_usage.items() if q in queues},
            storage=store.storage,
            namespace_labels=store.namespaces,
            placement_epoch=store.placement,
            usage_history=store.sums.usage_history,
            topology=store.topology.current(store.nodes),
        )

    def whatif_snapshot(self, nodes: Iterable[str], jobs: Iterable[str] = ()) -> ClusterSnapshot:
        """Copy-on-write: everything is shared except the named nodes, the jobs with tasks
        on them and the named jobs, which are cloned and linked to each other. A session
        may then evict and pipeline on those nodes without touching the cache, at a cost
        proportional to what it can touch rather than to the cluster."""
        with self._lock:
            snapshot = self.shared_snapshot()
            live_nodes = self._store.nodes
            node_names = [n for n in nodes if n in live_nodes]
            job_ids = {j for j in jobs if j in snapshot.jobs}
            for name in node_names:
                for task in live_nodes[name].tasks.values():
                    if task.job in snapshot.jobs:
                        job_ids.add(task.job)
            tasks: dict[str, TaskInfo] = {}
            for uid in job_ids:
                clone = snapshot.jobs[uid].clone()
                snapshot.jobs[uid] = clone
                tasks.update(clone.tasks)
            for name in node_names:
                snapshot.nodes[name] = live_nodes[name].clone(tasks)
            return snapshot


def fork_store(store: ClusterStore) -> ClusterStore:
    """A private copy of a store, for a what-if (see ``ClusterState.fork``).

    Copy-on-write at the task: jobs, nodes and every map and sum are copied, the task
    objects are shared. The cache never changes a task in place (an update replaces it), so
    only a session can; a session over a fork must therefore be opened with
    ``shared_tasks=True``, and its statements copy a task before its first change."""
    other = ClusterStore()
    other.changes = ChangeLog(store.changes.version)
    other.tasks = dict(store.tasks)
    # (``converted`` starts empty: a fork converts the pods it is given.)
    other.jobs = {uid: job.copy_sharing_tasks() for uid, job in store.jobs.items()}
    other.orphans = {job: dict(waiting) for job, waiting in store.orphans.items()}
    other.nodes = {name: node.copy_sharing_tasks() for name, node in store.nodes.items()}
    other.node_base = dict(store.node_base)
    other.total_allocatable = store.total_allocatable.clone()
    other.unplaced = {node: dict(waiting) for node, waiting in store.unplaced.items()}
    other.unschedulable = set(store.unschedulable)
    other.queues = dict(store.queues)
    other.podgroups = dict(store.podgroups)
    other.member_queues = store.member_queues.fork()
    other.priority_classes = dict(store.priority_classes)
    other.pdbs = dict(store.pdbs)
    other.storage = store.storage.copy()
    other.namespaces = dict(store.namespaces)
    other.placement = PlacementEpoch(store.placement.value)
    other.sums = store.sums.fork()
    other.charging = store.charging.fork(other.storage)
    other.topology = store.topology.copy()
    return other
