"""JobInfo: a PodGroup (or a lone pod) and the gang counters Volcano derives from it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.api.resource import Resource, exceeded_part
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.topology import NetworkTopologyRequest
from scheduler_core.api.types import (
    PodGroupPhase,
    TaskStatus,
    allocated_status,
    ready_status,
    scheduled_status,
    valid_status,
)

#: ``JobInfo.source`` of a gang defined by a Volcano PodGroup (or a lone pod's group of one).
VOLCANO_SOURCE = "volcano"
#: ``JobInfo.source`` of a gang defined by Kubernetes' own PodGroup (the Workload API).
NATIVE_SOURCE = "native"

#: The statuses each minTaskMember check counts, combined once: ``IntFlag``'s ``|`` runs in
#: Python, and these checks run for every job several times a cycle.
_READY_ROLE_BITS = (
    TaskStatus.BOUND
    | TaskStatus.BINDING
    | TaskStatus.RUNNING
    | TaskStatus.ALLOCATED
    | TaskStatus.SUCCEEDED
)
_PIPELINED_ROLE_BITS = _READY_ROLE_BITS | TaskStatus.PIPELINED
_VALID_ROLE_BITS = _PIPELINED_ROLE_BITS | TaskStatus.PENDING


def _bits(counted: Callable[[TaskStatus], bool]) -> int:
    """The statuses ``counted`` admits, as one mask: a task has exactly one status, so
    ``counted(s)`` is ``s & mask`` for each."""
    return sum(int(status) for status in TaskStatus if counted(status))


_READY_BITS = _bits(ready_status)
_VALID_BITS = _bits(valid_status)
_SCHEDULED_BITS = _bits(scheduled_status)


@dataclass(slots=True)
class JobInfo:
    """A gang of tasks that Volcano schedules together.

    ``allocated`` (tasks in an allocated status) and ``pending_request`` (Pending tasks) are
    kept as running sums so queue-level accounting is O(jobs), not O(tasks).

    ``synthesized`` marks the job of a pod that names no PodGroup: like Volcano's PodGroup
    controller we give it a group of one (minMember 1, minResources = the pod's request).

    ``tasks`` is indexed by status as well (``status_index``) because the gang counters
    (ready, waiting, valid) are read on every hook call during preempt and reclaim.
    """

    uid: str
    name: str
    namespace: str
    queue: str
    priority: int = 0
    min_available: int = 0
    task_min_available: dict[str, int] = field(default_factory=dict)
    min_resources: Resource | None = None
    phase: PodGroupPhase = PodGroupPhase.PENDING
    preemptable: bool = False
    creation_timestamp: str = ""
    synthesized: bool = False
    #: Seconds a task of this job must have run before reclaim may take it (the PodGroup's
    #: annotation); None: the task's own, its queue's or the configured default decides.
    min_runtime: float | None = None
    #: The PodGroup's ``spec.networkTopology``: every member inside one network domain
    #: (hard) or as close as the tree allows (soft); None: placed by count only.
    network_topology: NetworkTopologyRequest | None = None
    #: Where the gang is defined: ``volcano`` (a Volcano PodGroup, or a lone pod's group of
    #: one) or ``native`` (Kubernetes' own PodGroup, which kube-scheduler gangs itself and
    #: whose status it owns). The rules are the same for both; only writing back differs.
    source: str = VOLCANO_SOURCE
    #: The node label keys a native PodGroup asks its members to share a domain of
    #: (``schedulingConstraints.topology``); kept for explain, not yet placed by.
    topology_keys: tuple[str, ...] = ()
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    status_index: dict[TaskStatus, dict[str, TaskInfo]] = field(default_factory=dict)
    allocated: Resource = field(default_factory=Resource.empty)
    total_request: Resource = field(default_factory=Resource.empty)
    pending_request: Resource = field(default_factory=Resource.empty)

    @property
    def task_min_available_total(self) -> int:
        return sum(self.task_min_available.values())

    # --- task bookkeeping -------------------------------------------------------------

    def add_task_info(self, task: TaskInfo) -> None:
        self.tasks[task.uid] = task
        self.status_index.setdefault(task.status, {})[task.uid] = task
        if allocated_status(task.status):
            self.allocated.add(task.resreq)
        elif task.status == TaskStatus.PENDING:
            self.pending_request.add(task.resreq)
        self.total_request.add(task.resreq)

    def delete_task_info(self, task: TaskInfo) -> None:
        existing = self.tasks.pop(task.uid, None)
        if existing is None:
            return
        bucket = self.status_index.get(existing.status)
        if bucket is not None:
            bucket.pop(existing.uid, None)
            if not bucket:
                del self.status_index[existing.status]
        if allocated_status(existing.status):
            self.allocated.sub_without_assert(existing.resreq)
        elif existing.status == TaskStatus.PENDING:
            self.pending_request.sub_without_assert(existing.resreq)
        self.total_request.sub_without_assert(existing.resreq)

    def update_task_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """Delete and re-add, so the allocated sum and the status index stay consistent."""
        self.delete_task_info(task)
        task.status = status
        self.add_task_info(task)

    def tasks_with(self, status: TaskStatus) -> Iterable[TaskInfo]:
        return self.status_index.get(status, {}).values()

    def _count(self, bits: int) -> int:
        """Tasks whose status is among ``bits``: int arithmetic, as the gang counters run
        hundreds of thousands of times a cycle over a large backlog."""
        count = 0
        for status, bucket in self.status_index.items():
            if int.__and__(status, bits):
                count += len(bucket)
        return count

    # --- gang counters (job_info.go) ----------------------------------------------------

    def ready_task_num(self) -> int:
        return self._count(_READY_BITS)

    def waiting_task_num(self) -> int:
        return len(self.status_index.get(TaskStatus.PIPELINED, {}))

    def pending_best_effort_task_num(self) -> int:
        return sum(1 for t in self.tasks_with(TaskStatus.PENDING) if t.best_effort)

    def valid_task_num(self) -> int:
        return self._count(_VALID_BITS)

    def scheduled_task_num(self) -> int:
        return self._count(_SCHEDULED_BITS)

    def releasing_scheduled_task_num(self) -> int:
        return sum(1 for t in self.tasks_with(TaskStatus.RELEASING) if t.node_name)

    def is_ready(self) -> bool:
        return self.ready_task_num() + self.pending_best_effort_task_num() >= self.min_available

    def is_pipelined(self) -> bool:
        return (
            self.waiting_task_num() + self.ready_task_num() + self.pending_best_effort_task_num()
            >= self.min_available
        )

    def is_starving(self) -> bool:
        return self.waiting_task_num() + self.ready_task_num() < self.min_available

    def is_pending(self) -> bool:
        return self.phase == PodGroupPhase.PENDING

    # --- minTaskMember checks -----------------------------------------------------------

    def _roles_meet(self, counted: TaskStatus, pending_best_effort: bool) -> bool:
        if not self.task_min_available:
            # No role asks a minimum (most jobs): every role meets it, without the walk.
            return True
        if self.min_available < self.task_min_available_total:
            return True
        per_role: dict[str, int] = {}
        bits = int(counted)  # int arithmetic: ``IntFlag.__and__`` is ten times slower
        for task in self.tasks.values():
            if int.__and__(task.status, bits) or (
                pending_best_effort
                and task.status == TaskStatus.PENDING
                and task.init_resreq.is_empty()
            ):
                per_role[task.role] = per_role.get(task.role, 0) + 1
        return all(
            per_role.get(role, 0) >= minimum
            for role, minimum in self.task_min_available.items()
            if minimum > 0
        )

    def check_task_valid(self) -> bool:
        return self._roles_meet(
            _VALID_ROLE_BITS,
            pending_best_effort=False,
        )

    def check_task_ready(self) -> bool:
        return self._roles_meet(
            _READY_ROLE_BITS,
            pending_best_effort=True,
        )

    def check_task_pipelined(self) -> bool:
        return self._roles_meet(
            _PIPELINED_ROLE_BITS,
            pending_best_effort=True,
        )

    def check_task_starving(self) -> bool:
        """True when some role is below its minTaskMember (not used by gang's JobStarving)."""
        if self.min_available < self.task_min_available_total:
            return True
        return not self._roles_meet(
            _PIPELINED_ROLE_BITS,
            pending_best_effort=False,
        )

    # --- resources --------------------------------------------------------------------

    def get_min_resources(self) -> Resource:
        return self.min_resources.clone() if self.min_resources is not None else Resource.empty()

    def get_elastic_resources(self) -> Resource:
        """What the job holds beyond its minResources: the part that can be given back."""
        # (``diff`` reads its right side only: no copy of the minimum is made for it.)
        minimum = self.min_resources
        return exceeded_part(self.allocated, minimum if minimum is not None else Resource.empty())

    def replace_task(self, task: TaskInfo) -> None:
        """Put ``task`` in the place of the task with its uid and status (a private copy of
        it): the sums do not change."""
        self.tasks[task.uid] = task
        self.status_index[task.status][task.uid] = task

    def _bare(self, **tasks_and_sums: Any) -> JobInfo:
        """This job's identity and spec with no tasks (or the task maps and sums given):
        what a copy starts from."""
        return JobInfo(
            uid=self.uid,
            name=self.name,
            namespace=self.namespace,
            queue=self.queue,
            priority=self.priority,
            min_available=self.min_available,
            task_min_available=self.task_min_available,
            min_resources=self.min_resources,
            phase=self.phase,
            preemptable=self.preemptable,
            creation_timestamp=self.creation_timestamp,
            synthesized=self.synthesized,
            min_runtime=self.min_runtime,
            network_topology=self.network_topology,
            source=self.source,
            topology_keys=self.topology_keys,
            **tasks_and_sums,
        )

    def copy_sharing_tasks(self) -> JobInfo:
        """A copy with its own task maps and sums but the same task objects: cheap, for a
        fork whose sessions copy a task before changing it (``Session.own``)."""
        return self._bare(
            tasks=dict(self.tasks),
            status_index={status: dict(bucket) for status, bucket in self.status_index.items()},
            allocated=self.allocated.clone(),
            total_request=self.total_request.clone(),
            pending_request=self.pending_request.clone(),
        )

    def clone(self) -> JobInfo:
        job = self._bare()
        for task in self.tasks.values():
            job.add_task_info(task.clone())
        return job

    def __str__(self) -> str:
        return f"Job ({self.uid}): queue {self.queue}, minAvailable {self.min_available}"
