"""ClusterState: the engine's view of the cluster, kept current one event at a time.

Informers call ``upsert``/``delete`` (the ``EventSink`` protocol) from their threads; a
static YAML file is loaded through the same calls. Each event touches only what it names:
one task in its job and on its node, one node, one queue... and bumps ``version`` so that
derived state (queue deserved/share) is recomputed once per batch of changes, not per
request. ``changes`` classifies each event by what it changed of a session's inputs (see
``changes.py``), so that the extender's accounting session can skip or follow most events
instead of being rebuilt. Sessions get a private ``snapshot()``, or a ``whatif_snapshot``
that copies only the jobs and nodes a what-if (a preempt verb) may touch.

The parts: the objects and the rules that keep them consistent (``store.py``), DRA device
counting and claim charging (``charging.py``), queue sums and usage history
(``queue_sums.py``), the reads and snapshots (``views.py``). This module is the event side:
the lock, the event counts, the dispatch of each kind to the store.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

from scheduler_core.api.devices import DeviceQuotaNames
from scheduler_core.api.job import NATIVE_SOURCE
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.usage_history import UsageHistory
from scheduler_core.cache.changes import ChangeLog
from scheduler_core.cache.convert import (
    ConversionError,
    PodGroupInfo,
    namespace_labels,
    node_to_info,
    object_name,
    pdb_to_info,
    podgroup_to_info,
    priority_class_value,
    queue_to_info,
)
from scheduler_core.cache.digest import DIGEST_SIZE, read_digest, stored_version
from scheduler_core.cache.jobs import same_but_history
from scheduler_core.cache.native import NATIVE_KIND, native_podgroup_to_info
from scheduler_core.cache.objects import (
    DEVICE_KINDS,
    STORAGE_CONVERTERS,
    STORAGE_KINDS,
    ClusterObjects,
    delete_storage,
    put_storage,
)
from scheduler_core.cache.views import ClusterViews, fork_store

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
    *STORAGE_KINDS,
    "Namespace",
)


class ClusterState(ClusterViews):
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(clock)
        self.version = 0
        self.events: Counter[tuple[str, str]] = Counter()
        self.rejected: Counter[str] = Counter()
        self._synced: set[str] = set()
        #: (kind, key) -> digest of what the engine reads of the object last applied (see
        #: ``read_digest``), for the kinds whose watch is mostly updates that change
        #: nothing read: a node's status heartbeat, a pod's managedFields. Such an update is
        #: dropped before conversion. Emptied for pods on every PriorityClass change, as
        #: the store's record of which tasks are their pod's conversion is.
        self._digests: dict[tuple[str, str], bytes] = {}

    # --- the store's state its readers reach through the cache ----------------------------

    @property
    def changes(self) -> ChangeLog:
        """The decision version and what each event since the last structural one changed."""
        return self._store.changes

    @property
    def marked_victims(self) -> deque[TaskInfo]:
        """Pods kube-scheduler marked as its preemption's victims (see ``ClusterStore``)."""
        return self._store.marked_victims

    @property
    def usage_history(self) -> UsageHistory | None:
        """Each queue's usage over time, fed by the queue sums (see ``QueueSums``)."""
        return self._store.sums.usage_history

    @usage_history.setter
    def usage_history(self, history: UsageHistory | None) -> None:
        self._store.sums.usage_history = history

    @property
    def usage_refusals(self) -> dict[str, str]:
        """Queue name -> why its persisted usage history was refused."""
        return self._store.sums.usage_refusals

    @usage_refusals.setter
    def usage_refusals(self, refusals: dict[str, str]) -> None:
        self._store.sums.usage_refusals = refusals

    # --- locking ------------------------------------------------------------------------

    def locked(self) -> AbstractContextManager[object]:
        """The state's lock, for a ``with`` block. The lock itself, not a generator-based
        context manager: every verb call enters it (a generator's costs nine calls)."""
        return self._lock

    # --- EventSink ----------------------------------------------------------------------

    def upsert(self, kind: str, obj: dict[str, Any]) -> None:
        try:
            with self._lock:
                digest = read_digest(kind, obj)
                previous = self._digests.get(digest[0]) if digest is not None else None
                if digest is not None and previous == digest[1]:
                    self._unchanged(kind, obj)
                    return
                self._store.classified = False
                if kind == "Pod" and digest is not None and previous is not None:
                    # Only its node name or status moved (a bind, mostly)?
                    same_pod = previous[:DIGEST_SIZE] == digest[1][:DIGEST_SIZE]
                    self._store.put_pod(obj, placement_only=same_pod)
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
            version = stored_version(obj)
            if version and key in self._store.converted:
                self._store.converted[key] = version

    def delete(self, kind: str, key: str) -> None:
        with self._lock:
            self._digests.pop((kind, key), None)
            self._store.classified = False
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
            store = self._store
            store.priority_classes.update(objects.priority_classes)
            store.converted.clear()
            store.storage.merge(objects.storage)
            for node in objects.nodes:
                store.put_node_base(node)
            for hypernode in objects.hypernodes:
                store.topology.put_hypernode_spec(hypernode)
            for queue in objects.queues:
                store.queues[queue.name] = queue
            for pg in objects.podgroups:
                store.put_podgroup(pg)
            for pdb in objects.pdbs:
                store.pdbs[pdb.key] = pdb
            store.namespaces = {**store.namespaces, **objects.namespaces}
            for pod in objects.pods:
                store.put_pod(dict(pod))
            store.changes.structural()
            self.version += 1
        for kind in KINDS:
            self.synced(kind)

    # --- dispatch -----------------------------------------------------------------------

    def _upsert(self, kind: str, obj: dict[str, Any]) -> None:
        store = self._store
        if kind == "Pod":
            store.put_pod(obj)
        elif kind == "Node":
            store.put_node_base(node_to_info(obj))
        elif kind == "Queue":
            queue = queue_to_info(obj)
            old = store.queues.get(queue.name)
            store.queues[queue.name] = queue
            if old is None:
                store.sums.take_up_history(queue)
            elif same_but_history(old, queue):
                # The leader's periodic write of the queue's usage history: nothing a
                # session derives moved (the record is read once, at first sight).
                store.classified = True
        elif kind == "PodGroup":
            store.put_podgroup(podgroup_to_info(obj))
        elif kind == HYPERNODE:
            store.topology.put_hypernode(obj)
        elif kind == NATIVE_KIND:
            store.put_podgroup(native_podgroup_to_info(obj))
        elif kind == "PriorityClass":
            name, value, global_default = priority_class_value(obj)
            store.priority_classes[name] = (value, global_default)
            self._priority_classes_changed()
        elif kind == "PodDisruptionBudget":
            pdb = pdb_to_info(obj)
            store.pdbs[pdb.key] = pdb
        elif kind == "Namespace":
            name, labels = namespace_labels(obj)
            store.namespaces = {**store.namespaces, name: labels}
        elif kind in DEVICE_KINDS:
            nodes = store.charging.device_nodes(kind, obj)
            put_storage(store.storage, kind, obj)
            if kind == "DeviceClass":
                store.charging.class_put(str((obj.get("metadata") or {}).get("name") or ""))
            store.refresh_devices(nodes | store.charging.device_nodes(kind, obj))
            if kind == "DeviceClass":
                # What a claim charges, and under which name.
                store.rederive(store.charging.pods_to_rederive())
        elif kind in STORAGE_CONVERTERS:
            put_storage(store.storage, kind, obj)
            self._storage_changed()
            if kind == "ResourceClaim":
                meta = obj.get("metadata") or {}
                claim = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
                store.rederive(store.charging.pods_to_rederive(claim))
            elif kind == "ResourceClaimTemplate":
                store.rederive(store.charging.pods_to_rederive())

    def _priority_classes_changed(self) -> None:
        self._digests = {k: d for k, d in self._digests.items() if k[0] != "Pod"}
        self._store.priority_classes_changed()

    def _classify_rest(self) -> None:
        if not self._store.classified:
            self.changes.structural()

    def _delete(self, kind: str, key: str) -> None:
        store = self._store
        if kind == "Pod":
            store.delete_pod(key)
        elif kind == "Node":
            store.delete_node(key)
        elif kind == "Queue":
            store.queues.pop(key, None)
            store.sums.forget_queue(key)
        elif kind == "PodGroup":
            store.remove_podgroup(key)
        elif kind == HYPERNODE:
            store.topology.delete_hypernode(key)
        elif kind == NATIVE_KIND:
            namespace, _, name = key.partition("/")
            store.remove_podgroup(PodGroupInfo(namespace, name, "", 1, source=NATIVE_SOURCE).uid)
        elif kind == "PriorityClass":
            store.priority_classes.pop(key, None)
            self._priority_classes_changed()
        elif kind == "PodDisruptionBudget":
            store.pdbs.pop(key, None)
        elif kind == "Namespace":
            store.namespaces = {k: v for k, v in store.namespaces.items() if k != key}
        elif kind in DEVICE_KINDS:
            nodes = store.charging.device_nodes(kind, {"metadata": {"name": key}})
            if kind == "DeviceClass":
                store.charging.class_deleting(key)
            delete_storage(store.storage, kind, key)
            store.refresh_devices(nodes)
            if kind == "DeviceClass":
                store.rederive(store.charging.pods_to_rederive())
        elif kind in STORAGE_CONVERTERS:
            delete_storage(store.storage, kind, key)
            self._storage_changed()
            if kind == "ResourceClaim":
                store.rederive(store.charging.pods_to_rederive(key))
            elif kind == "ResourceClaimTemplate":
                store.rederive(store.charging.pods_to_rederive())

    def _storage_changed(self) -> None:
        """A storage or device object moves no sum and no job or node a session derives
        (the checks read the catalog live), yet it can change a decision (a claim bound
        now): the decision version moves, an accounting session follows without a rebuild."""
        self._store.classified = True
        self.changes.sums((), ())

    # --- configuration ------------------------------------------------------------------

    def set_topology_levels(self, levels: Iterable[str]) -> None:
        """Build the tree from these node label keys, widest first (the configuration's
        ``networkTopology.labelLevels``); empty: from HyperNodes. A change is structural:
        every session must see the tree it brings."""
        with self._lock:
            if self._store.topology.set_levels(tuple(levels)):
                self.changes.structural()
                self.version += 1

    def set_device_names(self, names: DeviceQuotaNames) -> None:
        """Count device classes under these quota names from now on (a configuration
        change): every node's devices and every claim's charge are derived again."""
        with self._lock:
            store = self._store
            if not store.charging.set_names(names):
                return
            store.refresh_devices(set(store.node_base))
            store.rederive(store.charging.pods_to_rederive())
            self.changes.structural()
            self.version += 1

    # --- what-if --------------------------------------------------------------------------

    def fork(self) -> ClusterState:
        """A private copy of the state, for a what-if: objects can be added to and removed
        from it through the same code paths as the live cache's (so a what-if and a
        ``simulate`` of the same objects agree), and a session may decide on its snapshot,
        without the live state changing.

        Copy-on-write at the task (see ``fork_store``): that makes the fork cost a few dict
        copies per job and node instead of a clone of every pod, and it takes the lock for
        no longer than that."""
        with self._lock:
            other = ClusterState()
            other.version = self.version
            other._synced = set(self._synced)
            other._store = fork_store(self._store)
            return other
