"""Statement: a transaction of evict / pipeline / allocate operations.

Every operation changes the session at once (task status, node accounting, the plugins'
queue and job shares through the event handlers), so later decisions in the same action see
it; ``commit`` makes the operations effective, ``discard`` undoes them in reverse order.
Nothing is evicted unless a statement that pipelined its preemptor is committed.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

from scheduler_core.api.errors import NodeError
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.framework.session import Eviction, Session
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.statement")


class StatementError(RuntimeError):
    """An operation could not be applied; the session is left as it was before it."""


class Op(enum.Enum):
    EVICT = "Evict"
    PIPELINE = "Pipeline"
    ALLOCATE = "Allocate"


@dataclass(slots=True)
class Operation:
    op: Op
    task: TaskInfo
    reason: str = ""
    preemptor: TaskInfo | None = None
    previous_status: TaskStatus = TaskStatus.RUNNING


class Statement:
    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.operations: list[Operation] = []

    # --- operations ---------------------------------------------------------------------

    def evict(self, reclaimee: TaskInfo, reason: str, preemptor: TaskInfo | None = None) -> None:
        reclaimee = self.ssn.own(reclaimee)
        previous = reclaimee.status
        self._set_status(reclaimee, TaskStatus.RELEASING)
        self.ssn.fire_deallocate(reclaimee)
        self.operations.append(Operation(Op.EVICT, reclaimee, reason, preemptor, previous))

    def pipeline(self, task: TaskInfo, hostname: str) -> None:
        """Promise ``task`` the resources being freed on ``hostname``."""
        node = self.ssn.nodes.get(hostname)
        if node is None:
            raise StatementError(f"failed to pipeline task <{task.key}>: no node <{hostname}>")
        self._place(task, node, TaskStatus.PIPELINED, Op.PIPELINE)

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        self._place(task, node, TaskStatus.ALLOCATED, Op.ALLOCATE)

    def _place(self, task: TaskInfo, node: NodeInfo, status: TaskStatus, op: Op) -> None:
        """Put `task` on `node` in `status` and record `op`; a node that refuses the task
        leaves the task as it was and raises StatementError."""
        task = self.ssn.own(task)
        previous = task.status
        self._job_status(task, status)
        task.node_name = node.name
        try:
            node.add_task(task)
        except NodeError as exc:
            self._job_status(task, previous)
            task.node_name = ""
            raise StatementError(str(exc)) from exc
        self.ssn.fire_allocate(task)
        self.operations.append(Operation(op, task, previous_status=previous))

    # --- transaction --------------------------------------------------------------------

    def settles_alike(self) -> bool:
        """Whether committing this statement and discarding it come to the same: it holds
        no operation, and the line each writes at V(3) is not logged. The caller may then
        leave out the vote that would choose between them (the plugins' pipelined check, a
        walk through their chain for each of thousands of waiting jobs that got nothing)."""
        return not self.operations and not log.isEnabledFor(v(3))

    def commit(self) -> None:
        log.log(v(3), "Committing operations ...")
        for operation in self.operations:
            task = operation.task
            if operation.op is Op.EVICT:
                self.ssn.evictions.append(
                    Eviction(task, task.node_name, operation.reason, operation.preemptor)
                )
            elif operation.op is Op.ALLOCATE:
                self._set_status(task, TaskStatus.BINDING)
                self.ssn.bound.append(task)
        self.operations = []

    def discard(self) -> None:
        log.log(v(3), "Discarding operations ...")
        for operation in reversed(self.operations):
            task = operation.task
            if operation.op is Op.EVICT:
                self._set_status(task, operation.previous_status)
                self.ssn.fire_allocate(task)
            else:
                node = self.ssn.nodes.get(task.node_name)
                if node is not None:
                    node.remove_task(task)
                self._job_status(task, TaskStatus.PENDING)
                task.node_name = ""
                self.ssn.fire_deallocate(task)
        self.operations = []

    def merge(self, *others: Statement) -> None:
        for other in others:
            self.operations.extend(other.operations)
            other.operations = []

    # --- helpers ------------------------------------------------------------------------

    def _set_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """The task's status in its job and, where it is placed, on its node."""
        self._job_status(task, status)
        node = self.ssn.nodes.get(task.node_name)
        if node is not None and task.uid in node.tasks:
            node.update_task(task)

    def _job_status(self, task: TaskInfo, status: TaskStatus) -> None:
        """The task's status in its job (or on the task alone when the session has no job)."""
        job = self.ssn.jobs.get(task.job)
        if job is not None:
            job.update_task_status(task, status)
        else:
            task.status = status
