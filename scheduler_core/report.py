"""What a session decided, as plain data: the ``simulate`` output and the debug views.

Queue figures come from whichever fair-share plugin ran (proportion or capacity); a queue
with no jobs has no attributes in either plugin and reports zeros, as Volcano's metrics do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler_core.api.job import JobInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.types import PodGroupPhase, TaskStatus
from scheduler_core.framework.session import Session
from scheduler_core.plugins.fairshare.attrs import QueueAttr
from scheduler_core.plugins.fairshare.charging import QueueCharging

FAIR_SHARE_PLUGINS = ("proportion", "capacity")


def quantities(resource: Resource | None) -> dict[str, float] | None:
    return None if resource is None else resource.to_quantities()


def queue_attrs(ssn: Session) -> Mapping[str, QueueAttr]:
    """The queue records of whichever fair-share plugin the session runs (empty with none)."""
    for name in FAIR_SHARE_PLUGINS:
        plugin = ssn.plugins.get(name)
        if isinstance(plugin, QueueCharging):
            return plugin.queue_opts
    return {}


def _queue_row(ssn: Session, queue: QueueInfo, attr: QueueAttr | None) -> dict[str, Any]:
    empty = Resource.empty()
    return {
        "name": queue.name,
        "parent": queue.parent or None,
        "state": str(queue.state),
        "weight": queue.weight,
        "deserved": quantities(attr.deserved if attr is not None else empty),
        "allocated": quantities(attr.allocated if attr is not None else empty),
        "request": quantities(attr.request if attr is not None else empty),
        "guarantee": quantities(attr.guarantee if attr is not None else (queue.guarantee or empty)),
        "capability": quantities(queue.capability),
        "share": round(float(attr.share), 6) if attr is not None else 0.0,
        "overused": ssn.overused(queue) if attr is not None else False,
    }


def reported_phase(job: JobInfo) -> PodGroupPhase:
    """The PodGroup phase once the session's bindings are done: a simulation is its own
    binder, so Binding tasks count as bound (Volcano would see them next cycle)."""
    scheduled = job.scheduled_task_num() + job.releasing_scheduled_task_num()
    scheduled += len(job.status_index.get(TaskStatus.BINDING, {}))
    if job.min_available and scheduled >= job.min_available:
        return PodGroupPhase.RUNNING
    return job.phase


def session_report(ssn: Session) -> dict[str, Any]:
    attrs = queue_attrs(ssn)
    queues_with_jobs = {job.queue for job in ssn.jobs.values()}
    queues = [
        _queue_row(ssn, queue, attrs.get(name))
        for name, queue in sorted(ssn.queues.items())
        if not queue.implicit or name in queues_with_jobs
    ]
    jobs = [
        {
            "name": job.uid,
            "queue": job.queue,
            "phase": str(reported_phase(job)),
            "minAvailable": job.min_available,
            "ready": job.ready_task_num(),
            "starving": job.is_starving(),
        }
        for _, job in sorted(ssn.jobs.items())
    ]
    allocated = sorted(
        ({"pod": t.key, "node": t.node_name} for t in ssn.bound), key=lambda r: r["pod"]
    )
    pipelined = sorted(
        (
            {"pod": t.key, "node": t.node_name}
            for job in ssn.jobs.values()
            for t in job.tasks_with(TaskStatus.PIPELINED)
        ),
        key=lambda r: r["pod"],
    )
    evicted = sorted(
        (
            {
                "pod": e.task.key,
                "node": e.node,
                "action": e.reason,
                "preemptor": e.preemptor.key if e.preemptor is not None else None,
            }
            for e in ssn.evictions
        ),
        key=lambda r: (r["pod"], r["action"]),
    )
    return {
        "queues": queues,
        "jobs": jobs,
        "allocated": allocated,
        "pipelined": pipelined,
        "evicted": evicted,
    }
