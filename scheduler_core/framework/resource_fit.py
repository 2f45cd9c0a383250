"""Resource fit as kube-scheduler words it ("Insufficient cpu"), for whoever compares a
task's request with what a node has.

It is not a predicate (actions compare requests with a node's future idle themselves, and
the victim search with what evictions would free), yet actions and the predicates plugin
both report it: one wording, in the room both may import.
"""

from __future__ import annotations

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.resource import ZERO, Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.status import Code, Status


def resource_fit_error(task: TaskInfo, node: NodeInfo, against: Resource) -> Status | None:
    """``Unschedulable`` naming every short resource ("Insufficient cpu") when the task's
    initial request does not fit ``against`` (the node's future idle, usually)."""
    fits, names = task.init_resreq.less_equal_with_resources_name(against, ZERO)
    if fits:
        return None
    return Status(
        Code.UNSCHEDULABLE,
        [f"Insufficient {name}" for name in names],
        task=task.key,
        node=node.name,
    )
