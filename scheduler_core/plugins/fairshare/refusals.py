"""Why a fair-share plugin refuses to admit a job or to let a queue take a pod, in one
sentence a person can act on.

The plugin that refuses says why (its vote carries the sentence), so the filter verb, explain
and the events show the rule's own reason rather than a second guess at it.
"""

from __future__ import annotations

from scheduler_core.api.display import dims
from scheduler_core.api.job import JobInfo
from scheduler_core.api.resource import Resource
from scheduler_core.framework.fit import REJECT, Vote
from scheduler_core.plugins.fairshare.attrs import QueueAttr


def over_real_capability(job: JobInfo, level: QueueAttr, names: list[str]) -> Vote:
    """minResources, on top of what ``level`` (the job's queue or one of its ancestors)
    holds, exceed its real capability on ``names``."""
    whose = "the queue" if level.name == job.queue else f"its ancestor queue {level.name}"
    short = f"; insufficient {', '.join(names)}" if names else ""
    return Vote(
        REJECT,
        f"queue {job.queue} cannot admit job {job.uid} now: its minResources "
        f"({dims(job.get_min_resources())}) on top of what {whose} holds "
        f"({dims(level.allocated)}) exceed {whose}'s real capability "
        f"({dims(level.real_capability)}){short}; "
        "waiting for capacity to free up or for preemption",
    )


def queue_not_open(job: JobInfo, state: str) -> Vote:
    return Vote(REJECT, f"queue {job.queue} cannot admit job {job.uid}: the queue is {state}")


def over_limit(queue: str, level: QueueAttr, request: Resource, limit: str) -> Vote:
    """The queue (or ``level``, one of its ancestors) would hold more than ``limit``
    ("deserved share" or "capability") with ``request`` added."""
    amount = level.deserved if limit == "deserved share" else level.real_capability
    whose = "its" if level.name == queue else f"its ancestor queue {level.name}'s"
    return Vote(
        REJECT,
        f"queue {queue} would exceed {whose} {limit}: allocated ({dims(level.allocated)}) + "
        f"this pod ({dims(request)}) > {limit} ({dims(amount)}); "
        "waiting for the queue's share to grow or for reclaim",
    )


def cannot_take_more(queue: str) -> Vote:
    return Vote(REJECT, f"queue {queue} cannot take more work now")


def not_open(queue: str, state: str) -> Vote:
    return Vote(REJECT, f"queue {queue} is {state}")
