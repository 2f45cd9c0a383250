"""ClusterSnapshot: the consistent view of the cluster that one session works on."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler_core.api.job import JobInfo
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pdb import PodDisruptionBudget
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.usage import JobUsage


@dataclass(slots=True)
class ClusterSnapshot:
    """Jobs, nodes and queues, sharing task objects between jobs and nodes.

    A session mutates task statuses and node accounting; ``clone`` gives it a private copy
    so the cache (or a caller running several what-if sessions) is never touched.
    """

    jobs: dict[str, JobInfo] = field(default_factory=dict)
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    priority_classes: dict[str, int] = field(default_factory=dict)
    #: Σ node allocatable when the source keeps it current (the live cache); else computed.
    total_allocatable: Resource | None = None
    #: Per-queue job usage sums when the source keeps them current (the live cache); a
    #: session may use them instead of summing every job. None: sum the jobs.
    queue_usage: dict[str, JobUsage] | None = None

    def clone(self) -> ClusterSnapshot:
        jobs = {uid: job.clone() for uid, job in self.jobs.items()}
        tasks: dict[str, TaskInfo] = {}
        for job in jobs.values():
            tasks.update(job.tasks)
        nodes = {name: node.clone(tasks) for name, node in self.nodes.items()}
        return self.around(jobs, nodes)

    def around(self, jobs: dict[str, JobInfo], nodes: dict[str, NodeInfo]) -> ClusterSnapshot:
        """A snapshot of ``jobs`` and ``nodes`` with this one's queues, budgets and priority
        classes, and its own copy of the usage sums (a session changes those in place)."""
        return ClusterSnapshot(
            jobs=jobs,
            nodes=nodes,
            queues=dict(self.queues),
            pdbs=list(self.pdbs),
            priority_classes=dict(self.priority_classes),
            total_allocatable=self.total_allocatable,
            queue_usage=(
                {q: u.clone() for q, u in self.queue_usage.items()}
                if self.queue_usage is not None
                else None
            ),
        )
