"""Which pods on a node count for the predicates that look at other pods.

A pod that is leaving (Releasing: being deleted, or a victim this session evicted) is taken
as gone, as the node's future idle resources take its resources as free: the predicates
answer whether the pod fits once what is leaving has left, which is what preemption asks.
kube-scheduler's PodTopologySpread skips terminating pods the same way. The pod being judged
never counts against itself (kube-scheduler judges a pod that is not on any node yet).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus

_GONE = TaskStatus.RELEASING | TaskStatus.SUCCEEDED | TaskStatus.FAILED


def staying(task: TaskInfo, judged_uid: str) -> bool:
    return task.uid != judged_uid and not task.status & _GONE


def placed_pods(node: NodeInfo, judged_uid: str) -> Iterator[TaskInfo]:
    """The pods on ``node`` that stay, other than the one being judged."""
    for task in node.tasks.values():
        if task.uid != judged_uid and not task.status & _GONE:
            yield task


def staying_among(node: NodeInfo, uids: Iterable[str], judged_uid: str) -> Iterator[TaskInfo]:
    """The staying pods on ``node`` among ``uids`` (one of the node's indexes of pods with
    terms), other than the one being judged."""
    tasks = node.tasks
    for uid in uids:
        task = tasks.get(uid)
        if task is not None and staying(task, judged_uid):
            yield task


def anti_affinity_pods(node: NodeInfo, judged_uid: str) -> Iterator[TaskInfo]:
    """The staying pods on ``node`` with required anti-affinity terms."""
    return staying_among(node, node.anti_affinity_uids, judged_uid)
