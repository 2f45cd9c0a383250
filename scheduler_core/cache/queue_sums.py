"""Each queue's usage, kept as its jobs change (one job's contribution re-derived per event,
so a session need not walk every job to sum it), and the usage history those sums feed."""

from __future__ import annotations

from collections import Counter

from scheduler_core.api.job import JobInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.usage import JobUsage, job_usage
from scheduler_core.api.usage_history import UsageHistory


class QueueSums:
    def __init__(self) -> None:
        #: Job id -> the queue it counted in and what it counted.
        self.job_usage: dict[str, tuple[str, JobUsage]] = {}
        self.queue_usage: dict[str, JobUsage] = {}
        self.queue_jobs: Counter[str] = Counter()
        #: Each queue's usage over time, told of every change of what a queue holds (set by
        #: whoever wants it measured: the live cache's builder); a fork reads it, never
        #: feeds it (a what-if's pods were never held).
        self.usage_history: UsageHistory | None = None
        self.feeds_history = True
        #: Queue name -> why its persisted usage history was refused (the leader reports
        #: each as an event and drops it from here).
        self.usage_refusals: dict[str, str] = {}

    def fork(self) -> QueueSums:
        """A copy that reads the history and never feeds it."""
        other = QueueSums()
        # Job usages are replaced, never changed, on an event: sharing them is safe.
        other.job_usage = dict(self.job_usage)
        other.queue_usage = {q: u.clone() for q, u in self.queue_usage.items()}
        other.queue_jobs = Counter(self.queue_jobs)
        other.usage_history = self.usage_history
        other.feeds_history = False
        return other

    def touch(self, job_id: str, job: JobInfo | None) -> None:
        """Re-derive one job's contribution to its queue's usage (O(1) per event); ``job``
        is the job as it is now, None once it is gone."""
        previous = self.job_usage.pop(job_id, None)
        if previous is not None:
            queue, usage = previous
            usage.take_from(self.queue_usage[queue])
            self.queue_jobs[queue] -= 1
            if not self.queue_jobs[queue]:
                del self.queue_jobs[queue]
                del self.queue_usage[queue]
        if job is not None:
            usage = job_usage(job)
            self.job_usage[job_id] = (job.queue, usage)
            usage.add_to(self.queue_usage.setdefault(job.queue, JobUsage.empty()))
            self.queue_jobs[job.queue] += 1
        if self.usage_history is not None and self.feeds_history:
            moved = {previous[0]} if previous is not None else set()
            if job is not None:
                moved.add(job.queue)
            for queue in moved:
                total = self.queue_usage.get(queue)
                self.usage_history.held(
                    queue, total.allocated if total is not None else Resource.empty()
                )

    def take_up_history(self, queue: QueueInfo) -> None:
        """The first sight of a queue: its persisted usage, if any, is taken up (once)."""
        if self.usage_history is None or not self.feeds_history:
            return
        if queue.usage_record_error:
            self.usage_refusals[queue.name] = queue.usage_record_error
        self.usage_history.restore(queue.name, queue.usage_record)

    def forget_queue(self, name: str) -> None:
        """A queue deleted: its history goes with it."""
        if self.usage_history is not None and self.feeds_history:
            self.usage_history.forget(name)
