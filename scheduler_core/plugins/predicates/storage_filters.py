"""The filters for what a pod mounts and claims (VolumeBinding and its kin, DRA), and what
the engine cannot judge at all.

Volumes (``volumes.py``) and devices (``dra.py``) are judged where the engine can judge them
(bound claims: the volume's node affinity and zone, ``ReadWriteOncePod`` conflicts, CSI
attach limits; allocated device claims: where their devices are). Where it cannot (a claim
not bound or not allocated yet, an object the cache lacks, a volume type it does not model,
scheduling gates), the pre-filter fails and every node is ``NotEvaluable``: actions and
verbs then never evict for the pod, and the session remembers why
(``Session.not_evaluable``).
"""

from __future__ import annotations

from dataclasses import replace

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.storage import StorageCatalog
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.session import Session
from scheduler_core.framework.status import Code, Status
from scheduler_core.plugins.predicates import dra, volumes

SCHEDULING_GATES = "SchedulingGates"

#: How many preemptors' ReadWriteOncePod claim users a session remembers at most (a verb's
#: shared session lives for many calls; one action or verb call needs a handful).
_RWOP_MEMO = 64

_PodStorageEntry = tuple[TaskInfo, int, Status | None, volumes.PodStorage]


class StorageFilters:
    """The storage and device filters for one session, with what they look up once per
    pod rather than once per node."""

    def __init__(self) -> None:
        self._ssn: Session | None = None
        #: task uid -> (claim key -> placed users) for its ReadWriteOncePod claims, found
        #: when a pre-filter considers the task (once, not once per node)
        self._rwop: dict[str, tuple[list[str], volumes.ClaimUsers]] = {}
        #: task uid -> (the task, the catalog version, its not-evaluable verdict, its
        #: resolved claims): looked up once per pod and catalog change, not once per node
        self._pod_storage: dict[str, _PodStorageEntry] = {}

    def open(self, ssn: Session) -> None:
        self._ssn = ssn
        self._rwop = {}
        self._pod_storage = {}

    def close(self) -> None:
        self._ssn = None
        self._rwop = {}
        self._pod_storage = {}

    def pre_filter(self, task: TaskInfo) -> Status | None:
        """Why the engine cannot judge ``task`` (``not_evaluable``); when it can, the
        users of its ReadWriteOncePod claims are found again, once for every node."""
        self._rwop.pop(task.uid, None)
        err = self.not_evaluable(task)
        if err is None:
            self.rwop_users(task)
        return err

    def not_evaluable(self, task: TaskInfo) -> Status | None:
        """Why the engine cannot judge where ``task`` fits (scheduling gates, volumes,
        device claims), as a ``NotEvaluable`` verdict naming the filter; None: it can."""
        if not (task.volumes or task.resource_claims or task.scheduling_gates):
            return None
        return self._storage_of(task)[2]

    def _storage_of(self, task: TaskInfo) -> _PodStorageEntry:
        """``task``'s not-evaluable verdict and resolved claims for the catalog as it is
        now: kept while the task and the catalog stay the same."""
        assert self._ssn is not None
        storage = self._ssn.snapshot.storage
        found = self._pod_storage.get(task.uid)
        if found is not None and found[0] is task and found[1] == storage.version:
            return found
        if len(self._pod_storage) >= _RWOP_MEMO:  # a long-lived session must not grow
            self._pod_storage.clear()
        found = self._pod_storage[task.uid] = (
            task,
            storage.version,
            self._resolve_not_evaluable(task, storage),
            volumes.PodStorage.of(task, storage),
        )
        return found

    @staticmethod
    def _resolve_not_evaluable(task: TaskInfo, storage: StorageCatalog) -> Status | None:
        found: list[tuple[str, list[str]]] = [
            (
                SCHEDULING_GATES,
                [f"scheduling gates {', '.join(task.scheduling_gates)}"]
                if task.scheduling_gates
                else [],
            ),
            (volumes.VOLUME_BINDING, volumes.pod_not_evaluable(task, storage)),
            (dra.DYNAMIC_RESOURCES, dra.pod_not_evaluable(task, storage)),
        ]
        reasons = [reason for _, found_reasons in found for reason in found_reasons]
        if not reasons:
            return None
        plugin = next(name for name, found_reasons in found if found_reasons)
        return Status(Code.NOT_EVALUABLE, reasons, plugin, task=task.key)

    def rwop_users(self, task: TaskInfo) -> tuple[list[str], volumes.ClaimUsers]:
        found = self._rwop.get(task.uid)
        if found is None:
            assert self._ssn is not None
            claims = volumes.rwop_claims(task, self._ssn.snapshot.storage) if task.volumes else []
            users = volumes.claim_users(self._ssn.nodes.values()) if claims else {}
            if len(self._rwop) >= _RWOP_MEMO:  # a long-lived session must not grow
                self._rwop.clear()
            found = self._rwop[task.uid] = (claims, users)
        return found

    def check(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        """Not evaluable first; then what no eviction changes (where a volume or a device
        is); then what evictions can fix (a ReadWriteOncePod claim in use, attach limits)."""
        assert self._ssn is not None
        storage = self._ssn.snapshot.storage
        _, _, pending, pod_storage = self._storage_of(task)
        if pending is not None:
            return replace(pending, node=node.name)
        err = pod_storage.binding_error(task, node) or dra.allocated_claims_error(
            task, node, storage
        )
        if err is not None:
            return err
        if task.resource_claims:
            err = dra.allocation_error(task, node, storage, self._ssn.nodes.get(node.name))
            if err is not None:
                return err
        claims, users = self.rwop_users(task)
        if claims:
            err = volumes.rwop_conflict_error(task, node, claims, users, self._ssn.nodes)
            if err is not None:
                return err
        return pod_storage.limits_error(task, node, storage)
