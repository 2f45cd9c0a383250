"""NodeInfo: a node's allocatable resources and how its tasks use them."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count

from scheduler_core.api.errors import NodeError
from scheduler_core.api.resource import ZERO, Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus

#: One counter for every node of the process, so that equal stamps mean the same node object
#: in the same state (see ``NodeInfo.stamp``).
_stamps = count(1)


@dataclass(slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = ""


@dataclass(slots=True)
class NodeInfo:
    """Idle / used / releasing / pipelined accounting exactly as Volcano's node_info.go.

    ``future_idle`` = idle + releasing - pipelined is what preempt and reclaim compare a
    preemptor's request against: resources being freed count, promised ones do not.

    The node shares task objects with their jobs, and remembers the status each task had
    when it was added (``recorded_status``), so that ``remove_task`` undoes exactly what
    ``add_task`` did even after the caller changed the task's status in place (Volcano
    stores a clone for the same reason).
    """

    name: str
    allocatable: Resource
    capacity: Resource
    idle: Resource = field(default_factory=Resource.empty)
    used: Resource = field(default_factory=Resource.empty)
    releasing: Resource = field(default_factory=Resource.empty)
    pipelined: Resource = field(default_factory=Resource.empty)
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = True
    recorded_status: dict[str, TaskStatus] = field(default_factory=dict)
    #: Uids of its tasks with required pod anti-affinity terms (kube-scheduler's
    #: ``PodsWithRequiredAntiAffinity``): what every incoming pod must be checked against,
    #: found without walking the node's other tasks.
    anti_affinity_uids: set[str] = field(default_factory=set)
    #: Uids of its tasks with any pod affinity or anti-affinity term (kube-scheduler's
    #: ``PodsWithAffinity``): the ones whose terms score an incoming pod.
    affinity_uids: set[str] = field(default_factory=set)
    #: Fresh whenever the node is created or a task is added or removed: what a table read
    #: from the node (its amounts, labels, taints) is still right while the stamp is the same,
    #: so a later session's node scores re-read only the nodes that changed.
    stamp: int = field(default_factory=_stamps.__next__, compare=False, repr=False)

    @classmethod
    def new(
        cls,
        name: str,
        allocatable: Resource,
        capacity: Resource | None = None,
        *,
        labels: dict[str, str] | None = None,
        taints: tuple[Taint, ...] = (),
        unschedulable: bool = False,
        ready: bool = True,
    ) -> NodeInfo:
        return cls(
            name=name,
            allocatable=allocatable,
            capacity=capacity if capacity is not None else allocatable.clone(),
            idle=allocatable.clone(),
            labels=labels or {},
            taints=taints,
            unschedulable=unschedulable,
            ready=ready,
        )

    def future_idle(self) -> Resource:
        return self.idle.clone().add(self.releasing).sub_without_assert(self.pipelined)

    def add_task(self, task: TaskInfo) -> None:
        if task.uid in self.tasks:
            raise NodeError(f"task <{task.key}> already on node <{self.name}>")
        req = task.resreq
        status = task.status
        if status == TaskStatus.RELEASING:
            self.idle.sub_without_assert(req)
            self.releasing.add(req)
            self.used.add(req)
        elif status == TaskStatus.PIPELINED:
            self.pipelined.add(req)
        else:
            if status == TaskStatus.BINDING:
                fits, names = req.less_equal_with_resources_name(self.idle, ZERO)
                if not fits:
                    raise NodeError(
                        f"task <{task.key}> does not fit node <{self.name}>: "
                        f"insufficient {', '.join(names)}"
                    )
            self.idle.sub_without_assert(req)
            self.used.add(req)
        self.tasks[task.uid] = task
        self.recorded_status[task.uid] = status
        if task.pod_affinity is not None:
            self.affinity_uids.add(task.uid)
            if task.pod_affinity.required_anti:
                self.anti_affinity_uids.add(task.uid)
        self.stamp = next(_stamps)

    def remove_task(self, task: TaskInfo) -> None:
        existing = self.tasks.pop(task.uid, None)
        if existing is None:
            return
        req = existing.resreq
        status = self.recorded_status.pop(task.uid)
        self.anti_affinity_uids.discard(task.uid)
        self.affinity_uids.discard(task.uid)
        self.stamp = next(_stamps)
        if status == TaskStatus.RELEASING:
            self.idle.add(req)
            self.releasing.sub_without_assert(req)
            self.used.sub_without_assert(req)
        elif status == TaskStatus.PIPELINED:
            self.pipelined.sub_without_assert(req)
        else:
            self.idle.add(req)
            self.used.sub_without_assert(req)

    def update_task(self, task: TaskInfo) -> None:
        """Remove the recorded copy and add the task as it is now (its status changed)."""
        self.remove_task(task)
        self.add_task(task)

    def pod_count(self) -> int:
        return len(self.tasks)

    def copy_sharing_tasks(self) -> NodeInfo:
        """A copy with its own accounting and task map but the same task objects (see
        ``JobInfo.copy_sharing_tasks``); nothing is re-added, so it costs a few dict copies."""
        return NodeInfo(
            name=self.name,
            allocatable=self.allocatable,
            capacity=self.capacity,
            idle=self.idle.clone(),
            used=self.used.clone(),
            releasing=self.releasing.clone(),
            pipelined=self.pipelined.clone(),
            tasks=dict(self.tasks),
            labels=self.labels,
            taints=self.taints,
            unschedulable=self.unschedulable,
            ready=self.ready,
            recorded_status=dict(self.recorded_status),
            anti_affinity_uids=set(self.anti_affinity_uids),
            affinity_uids=set(self.affinity_uids),
        )

    def emptied(self) -> NodeInfo:
        """This node as it would be with every pod on it gone: what copying it and removing
        each task would give, without the walk over its tasks."""
        return NodeInfo.new(
            self.name,
            self.allocatable,
            self.capacity,
            labels=self.labels,
            taints=self.taints,
            unschedulable=self.unschedulable,
            ready=self.ready,
        )

    def clone(self, tasks: dict[str, TaskInfo] | None = None) -> NodeInfo:
        """A copy with its own accounting; ``tasks`` maps uid → the task objects to share
        (a session's cloned tasks), defaulting to clones of this node's tasks."""
        node = self.emptied()
        for uid, task in self.tasks.items():
            shared = tasks.get(uid) if tasks is not None else None
            node.add_task(shared if shared is not None else task.clone())
        return node
