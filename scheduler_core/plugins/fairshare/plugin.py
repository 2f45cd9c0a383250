"""The frame proportion and capacity both build their rules in: the session they serve, the
queue records they keep, the six queue hooks wired the same way, and the admission of a job
into an open queue within its real capability, which Volcano words the same in both.

Each plugin writes its own rules (what deserved is, who may reclaim, what allocatable
checks); what they share stands once here so the two cannot drift apart where Volcano's do
not. Traces go through the plugin's own logger, so a person raising one plugin's verbosity
sees all of that plugin's reasoning.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Iterable, Mapping
from typing import ClassVar

from scheduler_core.api.job import JobInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.usage import deduct_sch_gated_resources
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.fit import PERMITTED, Vote
from scheduler_core.framework.hooks import (
    ALLOCATABLE,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    PREEMPTIVE,
    RECLAIMABLE,
    SIMULATE_ALLOCATABLE,
)
from scheduler_core.framework.registry import ArgsT, Plugin
from scheduler_core.framework.session import CycleState, Session
from scheduler_core.logutil import v
from scheduler_core.plugins.fairshare import charging
from scheduler_core.plugins.fairshare.attrs import QueueAttr, trace
from scheduler_core.plugins.fairshare.charging import QueueCharging
from scheduler_core.plugins.fairshare.refusals import over_real_capability, queue_not_open
from scheduler_core.plugins.fairshare.spec import format_resource_names


class FairSharePlugin(QueueCharging, Plugin[ArgsT]):
    """``queue_opts`` (queue name -> its record) stays readable after the session closes, so
    reporting (simulate, /metrics, explain) can show what the session decided from."""

    #: The plugin's own logger (its name is what a person filters on).
    log: ClassVar[logging.Logger]
    #: Its warnings when a task's job, or that job's queue record, is not in the session
    #: (each with the job or queue, then the task's namespace and name).
    job_not_found: ClassVar[str]
    queue_not_found: ClassVar[str]

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.total_resource = Resource.empty()
        self.total_guarantee = Resource.empty()
        self.queue_opts: dict[str, QueueAttr] = {}
        #: job uid -> why the queue refused to admit it (Volcano records a PodGroup event).
        self.unschedulable_reasons: dict[str, str] = {}
        self._ssn: Session | None = None

    # --- the rules each plugin writes -------------------------------------------------------

    @abstractmethod
    def _reclaimable(
        self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        """Which of ``reclaimees`` may be evicted for ``reclaimer``, and the vote."""

    @abstractmethod
    def _preemptive(self, queue: QueueInfo, candidates: list[TaskInfo]) -> bool:
        """May ``queue`` reclaim from others for ``candidates``."""

    @abstractmethod
    def _allocatable(self, queue: QueueInfo, task: TaskInfo) -> Vote:
        """May ``queue`` take ``task`` now; a refusal says why."""

    @abstractmethod
    def _job_enqueueable(self, job: JobInfo) -> Vote:
        """May ``job`` be admitted into its queue."""

    @abstractmethod
    def _simulate_allocatable(self, state: CycleState, queue: QueueInfo, task: TaskInfo) -> bool:
        """``_allocatable`` on a what-if copy of the queue records."""

    # --- what both do the same way ----------------------------------------------------------

    def _register_queue_hooks(self, ssn: Session) -> None:
        """The hooks both plugins fill with their rules, and the charging of tasks to
        queues (each plugin adds its own queue order)."""
        ssn.add_hook(RECLAIMABLE, self.name, self._reclaimable)
        ssn.add_hook(PREEMPTIVE, self.name, self._preemptive)
        ssn.add_hook(ALLOCATABLE, self.name, self._allocatable)
        ssn.add_hook(JOB_ENQUEUEABLE, self.name, self._job_enqueueable)
        ssn.add_hook(JOB_ENQUEUED, self.name, self._job_enqueued)
        ssn.add_hook(SIMULATE_ALLOCATABLE, self.name, self._simulate_allocatable)
        charging.register(ssn, self)

    def on_session_close(self, ssn: Session) -> None:
        self._ssn = None

    def _attr_of_task(self, task: TaskInfo, opts: Mapping[str, QueueAttr]) -> QueueAttr | None:
        job = self._ssn.jobs.get(task.job) if self._ssn is not None else None
        if job is None:
            self.log.warning(self.job_not_found, task.job, task.namespace, task.name)
            return None
        attr = opts.get(job.queue)
        if attr is None:
            self.log.warning(self.queue_not_found, job.queue, task.namespace, task.name)
        return attr

    def _closed(self, queue: QueueInfo, msg: str, *args: object) -> bool:
        """Whether ``queue`` is not open (traced at V(3) with ``msg``, whose first two
        arguments are the queue's name and state, when it is not)."""
        if queue.is_open():
            return False
        trace(self.log, v(3), msg, queue.name, queue.state, *args)
        return True

    def _refuse_closed_queue(self, job: JobInfo) -> Vote | None:
        """The refusal of ``job`` when its queue is missing or not open; None when open."""
        queue = self._ssn.queues.get(job.queue) if self._ssn is not None else None
        if queue is not None and queue.is_open():
            return None
        trace(
            self.log,
            v(3),
            "Queue <%s> current state: %s, is not open state, reject job <%s>.",
            job.queue,
            queue.state if queue is not None else "missing",
            job.uid,
        )
        return queue_not_open(job, str(queue.state) if queue is not None else "missing")

    def _admit(self, job: JobInfo, levels: Iterable[QueueAttr], msg: str) -> Vote:
        """Admit ``job`` only if its minResources, on top of what each of ``levels`` (its
        queue, then any ancestors) holds and has already admitted, less what it could give
        back, fit that level's real capability. The first level it does not fit refuses,
        recorded as the job's unschedulable reason and traced with ``msg`` (job uid, queue,
        reason)."""
        # Only read below (each level works on its own copy): the job's own, not a copy.
        min_req = job.min_resources if job.min_resources is not None else Resource.empty()
        for level in levels:
            r = min_req.clone().add(level.allocated).add(level.inqueue)
            r.sub_without_assert(level.elastic)
            fits, names = r.less_equal_with_dimension_and_resources_name(
                level.real_capability, min_req
            )
            if not fits:
                message = format_resource_names(
                    "queue resource quota insufficient", "insufficient", names
                )
                self.unschedulable_reasons[job.uid] = message
                trace(self.log, v(3), msg, job.uid, level.name, message)
                return over_real_capability(job, level, names)
        return PERMITTED

    def _job_enqueued(self, job: JobInfo) -> None:
        """The admitted job's minResources are reserved in its queue (and the ancestors its
        usage is carried to) for the rest of the session."""
        attr = self.queue_opts.get(job.queue)
        if attr is None or job.min_resources is None:
            return
        reserved = deduct_sch_gated_resources(job, job.get_min_resources())
        attr.inqueue.add(reserved)
        for ancestor in self._lineage(attr, self.queue_opts):
            ancestor.inqueue.add(reserved)
