"""enqueue: admit Pending PodGroups into their queues while the queues can hold them.

Queues take turns (re-pushed after each job) so one busy queue cannot admit all its jobs
before another gets one; a job whose ``minResources`` would exceed what its queue may hold
stays Pending.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from scheduler_core.api.job import JobInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.types import PodGroupPhase
from scheduler_core.framework.priority_queue import PriorityQueue
from scheduler_core.framework.registry import Action
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.actions.enqueue")


#: A further condition a caller may put on admission, asked after the plugins permitted it.
AdmitGate = Callable[[Session, JobInfo], bool]


class Enqueue(Action):
    """``also`` (none in a scheduling cycle) is a further condition on admission, asked only
    when the plugins permit a job, in the same turn, so a job it refuses reserves nothing
    for the jobs after it: the status write-back asks that a job's minResources fit its
    queue alongside what the queue holds (see ``controller.status_writer``)."""

    name = "enqueue"

    def __init__(self, also: AdmitGate | None = None) -> None:
        self.also = also

    def execute(self, ssn: Session) -> None:
        log.log(v(5), "Enter Enqueue ...")
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        seen: set[str] = set()
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        # Asked once: the per-job lines are neither formatted nor called when unread.
        traced = log.isEnabledFor(v(5))
        noted = log.isEnabledFor(v(3))
        for job in ssn.schedulable_jobs():
            queue = ssn.queues.get(job.queue)
            if queue is None:
                log.error("Failed to find Queue <%s> for Job <%s>", job.queue, job.uid)
                continue
            if queue.name not in seen:
                log.log(v(5), "Added Queue <%s> for Job <%s>", queue.name, job.uid)
                seen.add(queue.name)
                queues.push(queue)
            if job.is_pending():
                if traced:
                    log.log(v(5), "Added Job <%s> into Queue <%s>", job.uid, job.queue)
                jobs = jobs_by_queue.get(job.queue)
                if jobs is None:
                    jobs = jobs_by_queue[job.queue] = ssn.job_queue()
                jobs.push(job)

        log.log(v(3), "Try to enqueue PodGroup to %d Queues", len(jobs_by_queue))
        while not queues.empty():
            queue = queues.pop()
            jobs = jobs_by_queue.get(queue.name)
            if jobs is None or jobs.empty():
                continue
            job = jobs.pop()
            if (job.min_resources is None or ssn.job_enqueueable(job)) and (
                self.also is None or self.also(ssn, job)
            ):
                ssn.job_enqueued(job)
                job.phase = PodGroupPhase.INQUEUE
                if noted:
                    log.log(v(3), "Job <%s> enqueued into Queue <%s>", job.uid, queue.name)
            elif noted:
                log.log(
                    v(3),
                    "Job <%s> stays Pending: Queue <%s> cannot hold its minResources",
                    job.uid,
                    queue.name,
                )
            queues.push(queue)
        log.log(v(5), "Leaving Enqueue ...")
