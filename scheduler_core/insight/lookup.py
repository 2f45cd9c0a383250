"""Find a pod or a PodGroup the cache knows, and see it as the verbs would."""

from __future__ import annotations

from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.job import JobInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.cache.convert import native_job_id
from scheduler_core.extender.context import PodContext, waiting_copy


class NotFoundError(LookupError):
    """The engine does not know the object: the message is a sentence for a person."""


class CachedPodContext(PodContext):
    """``PodContext`` for a pod read from the cache rather than from kube-scheduler's
    request: the same fields, so the verbs' checks judge it exactly as they would judge
    that request. The task is a copy, marked pending, so nothing here touches the cache."""

    def __init__(self, acct: QueueAccounting, task: TaskInfo) -> None:
        self.acct = acct
        self.task = waiting_copy(task)
        self.job_id = task.job
        self.two_groups = ""  # (the cache's task keeps no group annotation to judge by)
        ssn = acct.session()
        job = ssn.jobs.get(task.job)
        self.synthesized = job.synthesized if job is not None else False
        self.queue_name = job.queue if job is not None else ""
        self.job: JobInfo | None = job
        self.ssn = ssn
        if job is not None and task.uid not in job.tasks:
            self.ssn, self.job = self._one_off_session(job)


def find_pod(acct: QueueAccounting, namespace: str, name: str) -> TaskInfo:
    with acct.state.locked():
        task = acct.state.task(f"{namespace}/{name}")
    if task is None:
        raise NotFoundError(f"pod {namespace}/{name} is not in the extender's cache")
    return task


def find_podgroup(acct: QueueAccounting, namespace: str, name: str) -> JobInfo:
    """A Volcano PodGroup of that name, else a Kubernetes one (``native:NAME`` names the
    Kubernetes one when both exist)."""
    jobs = acct.session().jobs
    job = jobs.get(f"{namespace}/{name}") or jobs.get(native_job_id(namespace, name))
    if job is None:
        raise NotFoundError(
            f"PodGroup {namespace}/{name} is not in the extender's cache (or its queue is not)"
        )
    return job


def first_pending(ctx_acct: QueueAccounting, job: JobInfo) -> TaskInfo | None:
    """The task the engine would try first: the job's pending ones in task order."""
    pending = list(job.tasks_with(TaskStatus.PENDING))
    if not pending:
        return None
    ssn = ctx_acct.session()
    best = pending[0]
    for task in pending[1:]:
        if ssn.task_order_fn(task, best):
            best = task
    return best
