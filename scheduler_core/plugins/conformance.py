"""conformance: never evict what keeps the cluster itself running.

Pods of the ``system-cluster-critical`` / ``system-node-critical`` priority classes and every
pod in ``kube-system`` are dropped from any victim list, for preempt and reclaim alike.
"""

from __future__ import annotations

from collections.abc import Hashable

from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.fit import PERMIT
from scheduler_core.framework.hooks import PREEMPTABLE, PREEMPTOR_KEY, RECLAIMABLE
from scheduler_core.framework.session import Session
from scheduler_core.plugins.util.live_jobs import ReadsLive

SYSTEM_CLUSTER_CRITICAL = "system-cluster-critical"
SYSTEM_NODE_CRITICAL = "system-node-critical"
NAMESPACE_SYSTEM = "kube-system"

CRITICAL_CLASSES = frozenset({SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL})


def is_critical(task: TaskInfo) -> bool:
    return task.priority_class_name in CRITICAL_CLASSES or task.namespace == NAMESPACE_SYSTEM


def evictable(_evictor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
    return [t for t in evictees if not is_critical(t)], PERMIT


def reads_no_preemptor(_preemptor: TaskInfo) -> Hashable:
    """Critical pods are spared whoever asks: any preemptor is alike."""
    return ()


class ConformancePlugin(ReadsLive):
    name = "conformance"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_hook(PREEMPTABLE, self.name, evictable)
        ssn.add_hook(PREEMPTOR_KEY, self.name, reads_no_preemptor)
        ssn.add_hook(RECLAIMABLE, self.name, evictable)
