"""A queue's pending jobs in the order the engine would serve them, each with the reason it
waits (the filter verb's reason for the job's first pending pod)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cmp_to_key

from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.job import JobInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.extender.filter_verb import check_pod, topology_choice
from scheduler_core.framework.session import Session
from scheduler_core.insight.amounts import Amounts, amounts
from scheduler_core.insight.described import described
from scheduler_core.insight.domains import domain_view, short
from scheduler_core.insight.lookup import CachedPodContext, NotFoundError, first_pending

#: Default and largest page of pending jobs: each carries a verdict the verbs compute.
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


@dataclass(slots=True)
class PendingJob:
    position: int
    job: str
    priority: int
    min_available: int
    ready: int
    pending: int
    request: Amounts | None
    first_pod: str | None
    code: str
    reason: str
    #: See ``JobInfo.source``.
    source: str = field(
        default="volcano", metadata=described("volcano or native (see Explanation)")
    )
    topology: str = field(
        default="",
        metadata=described(
            "the gang's network domain and request (e.g. 's/b (hard, tier ≤ 1)'); "
            "empty for a job that asks for none"
        ),
    )


@dataclass(slots=True)
class PendingPage:
    queue: str
    total: int
    jobs: list[PendingJob]


def _order(ssn: Session, jobs: list[JobInfo]) -> list[JobInfo]:
    """Volcano's job order within a queue: the plugins' JobOrderFn (priority, gang
    readiness, DRF share, as configured), then creation time, then uid."""

    key = ssn.job_order_key()
    if key is not None:
        return sorted(jobs, key=key)

    def compare(l: JobInfo, r: JobInfo) -> int:
        if ssn.job_order_fn(l, r):
            return -1
        if ssn.job_order_fn(r, l):
            return 1
        return 0

    return sorted(jobs, key=cmp_to_key(compare))


def pending_jobs(acct: QueueAccounting, queue: str, limit: int = DEFAULT_LIMIT) -> PendingPage:
    """Raises ``NotFoundError`` for an unknown queue."""
    ssn = acct.session()
    if queue not in ssn.queues:
        raise NotFoundError(f"queue {queue} is not in the extender's cache")
    waiting = [
        job
        for job in ssn.jobs.values()
        if job.queue == queue
        and any(t.key not in acct.assumed for t in job.tasks_with(TaskStatus.PENDING))
    ]
    ordered = _order(ssn, waiting)
    rows = []
    for position, job in enumerate(ordered[:limit], start=1):
        task = first_pending(acct, job)
        pending = list(job.tasks_with(TaskStatus.PENDING))
        request = None
        if pending:
            total = pending[0].resreq.clone()
            for other in pending[1:]:
                total.add(other.resreq)
            request = amounts(total)
        code, reason, topology = "", "", ""
        if task is not None:
            ctx = CachedPodContext(acct, task)
            rejection = check_pod(ctx, keep_choice=False)
            if job.network_topology is not None:
                view = domain_view(ctx.ssn, job, topology_choice(ctx, keep=False))
                topology = short(view)
            unjudged = ctx.ssn.not_evaluable_verdict(task) if rejection is None else None
            if unjudged is not None:
                code = "not-evaluable"
                reason = (
                    "passes the queue and gang checks; the extender cannot judge where it "
                    f"fits ({'; '.join(unjudged.reasons)}) and never evicts for it"
                )
            elif rejection is None:
                code = "filter-passes"
                reason = (
                    "passes the queue and gang checks; kube-scheduler's last attempt found no "
                    "node for it (the reclaim loop, where it runs, looks for room for it)"
                    if task.unschedulable
                    else "passes the queue and gang checks: waiting for kube-scheduler to try "
                    "it (the reclaim loop acts only for pods kube-scheduler found no node for)"
                )
            else:
                code, reason = rejection.reason_code, rejection.message
        rows.append(
            PendingJob(
                position=position,
                job=job.uid,
                priority=job.priority,
                min_available=job.min_available,
                ready=job.ready_task_num(),
                pending=len(pending),
                request=request,
                first_pod=task.key if task is not None else None,
                code=code,
                reason=reason,
                source=job.source,
                topology=topology,
            )
        )
    return PendingPage(queue=queue, total=len(ordered), jobs=rows)
