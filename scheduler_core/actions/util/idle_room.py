"""Whether a waiting task already fits some node's idle room, as an action's pass began.

The live loop's preempt and reclaim both ask it: a task that fits idle room needs no eviction,
kube-scheduler will place it.
"""

from __future__ import annotations

from scheduler_core.api.job import JobInfo
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.resource import ZERO, Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.framework.session import Session


class IdleRoom:
    """The session's nodes by idle cpu, largest first, taken once on first use, so in a full
    cluster a task looks at no node at all."""

    def __init__(self, ssn: Session) -> None:
        self._ssn = ssn
        self._idle: list[tuple[Resource, NodeInfo]] | None = None

    def fits(self, task: TaskInfo) -> bool:
        if self._idle is None:
            self._idle = sorted(
                ((n.future_idle(), n) for n in self._ssn.nodes.values()),
                key=lambda pair: -pair[0].milli_cpu,
            )
        need = task.init_resreq
        for idle, node in self._idle:
            if idle.milli_cpu < need.milli_cpu:
                return False
            if need.less_equal(idle, ZERO) and self._ssn.predicate(task, node) is None:
                return True
        return False

    def job_fits(self, job: JobInfo) -> bool:
        """Every pending, ungated task of ``job`` fits on its own."""
        return all(self.fits(t) for t in job.tasks_with(TaskStatus.PENDING) if not t.gated)
