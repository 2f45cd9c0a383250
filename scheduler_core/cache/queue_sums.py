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
    #: False: every change takes the job's whole usage from its queue's sums, adds the new
    #: one and tells the history of each queue it touched, the full path that the shortcuts
    #: (``_moved``, ``_told``) are tested against.
    incremental = True

    def __init__(self) -> None:
        #: Job id -> the queue it counted in and what it counted.
        self.job_usage: dict[str, tuple[str, JobUsage]] = {}
        self.queue_usage: dict[str, JobUsage] = {}
        self.queue_jobs: Counter[str] = Counter()
        #: Each queue's usage over time, told of every change of what a queue holds (set by
        #: whoever wants it measured: the live cache's builder); a fork reads it, never
        #: feeds it (a what-if's pods were never held).
        self._usage_history: UsageHistory | None = None
        self.feeds_history = True
        #: The queues whose history was told the total they hold now: a change that moves
        #: none of a queue's allocated sum need not tell it again.
        self._told: set[str] = set()
        #: Queue name -> why its persisted usage history was refused (the leader reports
        #: each as an event and drops it from here).
        self.usage_refusals: dict[str, str] = {}

    @property
    def usage_history(self) -> UsageHistory | None:
        return self._usage_history

    @usage_history.setter
    def usage_history(self, history: UsageHistory | None) -> None:
        self._usage_history = history
        self._told = set()

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
        if (
            self.incremental
            and previous is not None
            and job is not None
            and previous[0] == job.queue
            and self.queue_jobs[job.queue] > 1
        ):
            # The job stays in its queue beside others (a pod's update, mostly): only the
            # sums whose part moved are taken and added again (see ``_moved``).
            queue = job.queue
            usage = job_usage(job)
            self.job_usage[job_id] = (queue, usage)
            total = self.queue_usage[queue]
            if _moved(total, previous[1], usage) or queue not in self._told:
                self._tell_history(queue, total)
            return
        # The queues whose allocated sum may have moved, and those it cannot have.
        moved: set[str] = set()
        kept: set[str] = set()
        if previous is not None:
            queue, usage = previous
            usage.take_from(self.queue_usage[queue])
            self.queue_jobs[queue] -= 1
            if not self.queue_jobs[queue]:
                del self.queue_jobs[queue]
                del self.queue_usage[queue]
                moved.add(queue)
            else:
                (moved if _differs(_NOTHING, usage.allocated) else kept).add(queue)
        if job is not None:
            queue = job.queue
            usage = job_usage(job)
            self.job_usage[job_id] = (queue, usage)
            if queue not in self.queue_usage:
                self.queue_usage[queue] = JobUsage.empty()
                moved.add(queue)
            elif _differs(_NOTHING, usage.allocated):
                moved.add(queue)
            else:
                kept.add(queue)
            usage.add_to(self.queue_usage[queue])
            self.queue_jobs[queue] += 1
        for queue in moved | (kept - self._told if self.incremental else kept):
            self._tell_history(queue, self.queue_usage.get(queue))

    def _tell_history(self, queue: str, total: JobUsage | None) -> None:
        """Tell the history what ``queue`` holds now (``total`` None: nothing)."""
        history = self._usage_history
        if history is not None and self.feeds_history:
            history.held(queue, total.allocated if total is not None else Resource.empty())
            self._told.add(queue)

    def take_up_history(self, queue: QueueInfo) -> None:
        """The first sight of a queue: its persisted usage, if any, is taken up (once)."""
        if self.usage_history is None or not self.feeds_history:
            return
        if queue.usage_record_error:
            self.usage_refusals[queue.name] = queue.usage_record_error
        self.usage_history.restore(queue.name, queue.usage_record)

    def forget_queue(self, name: str) -> None:
        """A queue deleted: its history goes with it."""
        self._told.discard(name)
        if self.usage_history is not None and self.feeds_history:
            self.usage_history.forget(name)


def _moved(total: JobUsage, was: JobUsage, now: JobUsage) -> bool:
    """``was.take_from(total)`` then ``now.add_to(total)``, skipping each of the four sums
    whose part is the same before and after; whether the allocated sum moved. Taking an
    amount and adding it back leaves the sum as it was: amounts are whole numbers
    (milli-units, bytes, counts), which floats add and subtract exactly, and the total
    holds every scalar the part names (it was added)."""
    allocated = _differs(was.allocated, now.allocated)
    if allocated:
        total.allocated.sub_without_assert(was.allocated).add(now.allocated)
    if _differs(was.request, now.request):
        total.request.sub_without_assert(was.request).add(now.request)
    if _differs(was.inqueue, now.inqueue):
        total.inqueue.sub_without_assert(was.inqueue).add(now.inqueue)
    if _differs(was.elastic, now.elastic):
        total.elastic.sub_without_assert(was.elastic).add(now.elastic)
    return allocated


#: Nothing: what a part that adds nothing to a sum is compared with.
_NOTHING = Resource.empty()


def _differs(before: Resource, after: Resource) -> bool:
    """Whether taking ``before`` from a sum and adding ``after`` may change it (a missing
    scalar map and an empty one take and add nothing alike)."""
    return (
        before.milli_cpu != after.milli_cpu
        or before.memory != after.memory
        or (before.scalars or None) != (after.scalars or None)
    )
