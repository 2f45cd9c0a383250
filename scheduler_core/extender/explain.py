"""explain: what filter would answer for a pod and why, without assuming it.

A debugging aid (``POST /debug/explain``): the same checks as filter, in the same order, with
the numbers a person needs to see why a queue or a gang holds the pod back.
"""

from __future__ import annotations

from typing import Any

from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.types import TaskStatus
from scheduler_core.extender.context import PodContext
from scheduler_core.extender.filter import check_pod
from scheduler_core.report import queue_attrs


def explain_pod(acct: QueueAccounting, pod: dict[str, Any], managed: bool) -> dict[str, Any]:
    """A JSON-able account of the pod's verdict. Raises ``ConversionError`` for a pod the
    engine cannot read."""
    ctx = PodContext(acct, pod)
    rejection = check_pod(ctx)
    job = ctx.job
    attr = queue_attrs(ctx.ssn).get(ctx.queue_name)
    return {
        "pod": ctx.task.key,
        "managed": managed,
        "job": None
        if job is None
        else {
            "name": job.uid,
            "minAvailable": job.min_available,
            "ready": job.ready_task_num(),
            "pending": len(list(job.tasks_with(TaskStatus.PENDING))),
            "assumed": acct.assumed_in_job(job.uid),
            "synthesized": job.synthesized,
        },
        "queue": ctx.queue_name or None,
        "queueState": None
        if attr is None
        else {
            "deserved": attr.deserved.to_quantities(),
            "allocated": attr.allocated.to_quantities(),
            "share": attr.share,
        },
        "request": ctx.task.resreq.to_quantities(),
        "verdict": "pass" if rejection is None else "reject",
        "code": None if rejection is None else rejection.reason_code,
        "reason": None if rejection is None else rejection.message,
        "preemptionMayHelp": None if rejection is None else rejection.resolvable,
    }
