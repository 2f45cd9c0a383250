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

#: The slot of a session's own memos where the last list of idle room is kept, with the
#: session state it was taken in.
_SLOT = "idle_room.by-cpu"

Idle = list[tuple[Resource, NodeInfo]]


class IdleRoom:
    """The session's nodes by idle cpu, largest first, taken once on first use, so in a full
    cluster a task looks at no node at all. Preempt and reclaim each take it as their pass
    begins; when nothing was placed, evicted or committed in between, the second takes the
    first's list (a copy of every node's idle room, 5,000 of them, is not taken twice)."""

    def __init__(self, ssn: Session) -> None:
        self._ssn = ssn
        self._idle: Idle | None = None

    def _taken(self) -> Idle:
        ssn = self._ssn
        if ssn.read_only:  # its nodes follow the cluster without a placement
            return _by_idle_cpu(ssn)
        at = ssn.moves()
        kept: dict[str, tuple[tuple[int, int, int], Idle]] = ssn.shared.slot(_SLOT, dict)
        entry = kept.get("last")
        if entry is None or entry[0] != at:
            entry = kept["last"] = (at, _by_idle_cpu(ssn))
        return entry[1]

    def fits(self, task: TaskInfo) -> bool:
        if self._idle is None:
            self._idle = self._taken()
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


def _by_idle_cpu(ssn: Session) -> Idle:
    return sorted(
        ((n.future_idle(), n) for n in ssn.nodes.values()), key=lambda pair: -pair[0].milli_cpu
    )
