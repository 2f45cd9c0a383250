"""The requesting pod as the engine sees it, shared by every verb that judges one pod."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.job import JobInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.cache.convert import (
    GROUP_NAME_ANNOTATION,
    pod_job_id,
    pod_queue_annotation,
    pod_to_task,
    synthesized_group_name,
    two_groups,
)
from scheduler_core.cache.jobs import synthesized_job
from scheduler_core.engine import open_session
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.extender.context")


class PodView(Protocol):
    """What the filter rules read of a pod (``check_pod``): a requesting pod's
    ``PodContext``, or a pending task of the cache seen as one (``holds.hold_reason``)."""

    @property
    def acct(self) -> QueueAccounting: ...
    @property
    def ssn(self) -> Session: ...
    @property
    def job(self) -> JobInfo | None: ...
    @property
    def task(self) -> TaskInfo: ...
    @property
    def job_id(self) -> str: ...
    @property
    def queue_name(self) -> str: ...
    @property
    def two_groups(self) -> str: ...
    @property
    def queue(self) -> QueueInfo | None: ...


class PodContext:
    """The requesting pod as the engine sees it: its task, job, queue and the session that
    knows them (the shared accounting session, or a one-off one when the cache has not
    seen the pod or its job yet).

    ``as_stored``: the pod is as the API server stored it (kube-scheduler's calls send its
    informer's copy), so at a resourceVersion the cache has converted, the cache's task is
    copied instead of converting the pod again (a sixth of a filter answer). Off for the
    people's API: a pod edited by hand may keep the version it was copied at.

    ``in_place``: a pod the cache has not shown is judged in the accounting session itself,
    its job taken in until the next ``session()`` (``QueueAccounting.take_in_unseen``),
    where it can be; for the filter verb, which asks for nothing else in between. Off
    elsewhere: a one-off session.
    """

    def __init__(
        self,
        acct: QueueAccounting,
        pod: dict[str, Any],
        *,
        as_stored: bool = False,
        in_place: bool = False,
    ) -> None:
        self.acct = acct
        self.task: TaskInfo = request_task(acct, pod, as_stored=as_stored)
        #: Why the pod cannot be judged for naming two pod groups ("" when it names one).
        self.two_groups, job_id, self.synthesized = pod_groups(pod)
        self.job_id = job_id
        ssn = acct.session()
        job = ssn.jobs.get(job_id)
        if job is None and self.synthesized:
            job = synthesized_job(self.task, pod_queue_annotation(pod))
        self.queue_name = job.queue if job is not None else ""
        self.job: JobInfo | None = job
        self.ssn: Session = ssn
        if job is not None and (job_id not in ssn.jobs or self.task.uid not in job.tasks):
            taken = acct.take_in_unseen(job, self.task) if in_place else None
            if taken is not None:
                self.ssn, self.job = taken
                log.log(v(4), "Pod <%s> is not in the cache yet: judged in place", self.task.key)
            else:
                self.ssn, self.job = self._one_off_session(job)

    def _one_off_session(self, job: JobInfo) -> tuple[Session, JobInfo]:
        """A session that includes this pod: the cache lags kube-scheduler by a moment."""
        with self.acct.state.locked():
            snapshot = self.acct.state.shared_snapshot()
            own = job.clone()
            if self.task.uid not in own.tasks:
                own.add_task_info(self.task.clone())
            # The cache's per-queue sums, with this job as it is here instead of as the
            # cache has it: no walk over every job of the cluster for one pod.
            snapshot.put_job(own)
            self.acct.add_unseen_jobs(snapshot)
            ssn = open_session(
                snapshot, self.acct.conf, clone=False, read_only=True, memos=self.acct.memos
            )
            self.acct.replay_assumptions(ssn)
            self.acct.one_off_sessions += 1
        log.log(
            v(4), "Pod <%s> is not in the cache yet: one-off session %d", self.task.key, ssn.uid
        )
        return ssn, own

    @property
    def queue(self) -> QueueInfo | None:
        return self.ssn.queues.get(self.queue_name)


def pod_groups(pod: Mapping[str, Any]) -> tuple[str, str, bool]:
    """``two_groups(pod)`` and ``pod_job_id(pod)`` together: (why the pod names two pod
    groups or "", its job id, whether that job is a synthesized group of one).

    Asked for every pod a verb judges, so the common pod (decoded JSON naming no native
    PodGroup) is read once here, field by field as those two read it; any other shape (a
    native PodGroup named, a field of an unexpected type) takes those two functions."""
    if type(pod) is dict:
        meta, spec = pod.get("metadata"), pod.get("spec")
        annotations = meta.get("annotations") if type(meta) is dict else None
        if (
            type(meta) is dict
            and (spec is None or (type(spec) is dict and spec.get("schedulingGroup") is None))
            and (annotations is None or type(annotations) is dict)
        ):
            namespace = str(meta.get("namespace") or "default")
            group = annotations.get(GROUP_NAME_ANNOTATION) if annotations else None
            if isinstance(group, str) and group:
                return "", f"{namespace}/{group}", False
            uid = str(meta.get("uid") or f"{namespace}-{meta.get('name')}")
            return "", f"{namespace}/{synthesized_group_name(uid)}", True
    job_id, synthesized = pod_job_id(pod)
    return two_groups(pod), job_id, synthesized


def request_task(acct: QueueAccounting, pod: dict[str, Any], *, as_stored: bool) -> TaskInfo:
    """The task of a pod a verb judges, waiting and on no node, its own object: the cache's
    copied when ``as_stored`` and the cache converted this version of the pod
    (``ClusterState.cached_task``), else converted. Hold the state's lock."""
    cached = acct.state.cached_task(pod) if as_stored else None
    if cached is not None:
        return waiting_copy(cached)
    task = pod_to_task(pod, acct.state.priority_values())
    task.status, task.node_name = TaskStatus.PENDING, ""
    return task


def waiting_copy(task: TaskInfo) -> TaskInfo:
    """A copy of ``task`` as a verb judges it: waiting, on no node. The cache's own task is
    never changed."""
    copy = task.clone()
    copy.status, copy.node_name = TaskStatus.PENDING, ""
    return copy
