"""proportion's rules, all read from each queue's deserved share: who goes first, who is
overused, what a queue may take, whom it may reclaim from, which jobs it admits."""

from __future__ import annotations

import logging

from scheduler_core.api.job import JobInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import ZERO, Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.fit import PERMIT, PERMITTED, Vote
from scheduler_core.framework.session import CycleState
from scheduler_core.logutil import v
from scheduler_core.plugins.fairshare.attrs import QueueAttr, proportion_share, trace
from scheduler_core.plugins.fairshare.plugin import FairSharePlugin
from scheduler_core.plugins.fairshare.refusals import cannot_take_more, not_open, over_limit
from scheduler_core.plugins.proportion.args import ProportionArgs

log = logging.getLogger("scheduler_core.plugins.proportion")


class ProportionRules(FairSharePlugin[ProportionArgs]):
    """The hooks proportion fills, over the queue records its session derived."""

    log = log
    job_not_found = "Failed to find job <%s> of task <%s/%s>"
    queue_not_found = "Failed to find queue <%s> attributes of task <%s/%s>"

    def _share(self, attr: QueueAttr) -> float:
        return proportion_share(attr)

    # --- queue hooks ----------------------------------------------------------------------

    def _queue_order(self, l: QueueInfo, r: QueueInfo) -> int:
        """Higher queue priority first, then the queue furthest below its deserved share."""
        if l.priority != r.priority:
            return r.priority - l.priority
        lattr, rattr = self.queue_opts.get(l.name), self.queue_opts.get(r.name)
        if lattr is None or rattr is None or lattr.share == rattr.share:
            return 0
        return -1 if lattr.share < rattr.share else 1

    def _overused(self, queue: QueueInfo) -> bool:
        attr = self.queue_opts.get(queue.name)
        if attr is None:
            return False
        overused = attr.deserved.less_equal(attr.allocated, ZERO)
        if overused:
            trace(
                log,
                v(3),
                "Queue <%s> is overused: deserved <%s>, allocated <%s>, share <%s>",
                queue.name,
                attr.deserved,
                attr.allocated,
                attr.share,
            )
        return overused

    def _preemptive(self, queue: QueueInfo, candidates: list[TaskInfo]) -> bool:
        """Can the queue grow by ``candidates`` and stay within deserved on the dimensions
        they request (no epsilon)? Used both to allocate and to decide who may reclaim."""
        if self._closed(queue, "Queue <%s> current state: %s, is not in open state"):
            return False
        attr = self.queue_opts.get(queue.name)
        if attr is None:
            return False
        return _fits_deserved(queue.name, attr, candidates)

    def _allocatable(self, queue: QueueInfo, task: TaskInfo) -> Vote:
        if self._preemptive(queue, [task]):
            return PERMITTED
        if not queue.is_open():
            return not_open(queue.name, str(queue.state))
        attr = self.queue_opts.get(queue.name)
        if attr is None:
            return cannot_take_more(queue.name)
        return over_limit(queue.name, attr, task.resreq, "deserved share")

    def _reclaimable(
        self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        """A reclaimee is a victim while its queue, less the victims already chosen in this
        call, is still above deserved; the reclaimer does not matter here."""
        del reclaimer
        victims: list[TaskInfo] = []
        allocations: dict[str, Resource] = {}
        for reclaimee in reclaimees:
            job = self._ssn.jobs.get(reclaimee.job) if self._ssn is not None else None
            if job is None:
                continue
            attr = self.queue_opts.get(job.queue)
            if attr is None:
                continue
            allocated = allocations.get(job.queue)
            if allocated is None:
                allocated = allocations[job.queue] = attr.allocated.clone()
            if not allocated.less_equal(attr.deserved, ZERO):
                allocated.sub_without_assert(reclaimee.resreq)
                victims.append(reclaimee)
        trace(log, v(4), "Victims from proportion plugins are %s", [t.key for t in victims])
        return victims, PERMIT

    # --- job hooks ------------------------------------------------------------------------

    def _job_enqueueable(self, job: JobInfo) -> Vote:
        """Admit a job only if its minResources, on top of what the queue holds and has
        already admitted (less what it could give back), fits the real capability."""
        refusal = self._refuse_closed_queue(job)
        if refusal is not None:
            return refusal
        attr = self.queue_opts.get(job.queue)
        if attr is None or job.min_resources is None:
            return PERMITTED
        return self._admit(job, [attr], "Job <%s> cannot be enqueued into queue <%s>: %s")

    # --- simulation -----------------------------------------------------------------------

    def _simulate_allocatable(self, state: CycleState, queue: QueueInfo, task: TaskInfo) -> bool:
        """As AllocatableFn on the what-if copy; Volcano skips the open-state check here."""
        attrs = self._state(state)
        attr = attrs.get(queue.name) if attrs is not None else None
        if attr is None:
            return False
        return _fits_deserved(queue.name, attr, [task])


def _fits_deserved(queue_name: str, attr: QueueAttr, candidates: list[TaskInfo]) -> bool:
    # One candidate (every filter call's): its request is the sum itself, as far as the
    # check reads it (the amounts, never the pod count nor an empty scalar map).
    asked = candidates[0].resreq if len(candidates) == 1 else _total_request(candidates)
    future_used = attr.allocated.clone().add(asked)
    fits, _ = future_used.less_equal_with_dimension_and_resources_name(attr.deserved, asked)
    if not fits:
        total_req = _total_request(candidates)
        trace(
            log,
            v(3),
            "Queue <%s>: deserved <%s>, allocated <%s>; Candidate <%s>: resource request <%s>",
            queue_name,
            attr.deserved,
            attr.allocated,
            ", ".join(task.name for task in candidates),
            total_req,
        )
    return fits


def _total_request(candidates: list[TaskInfo]) -> Resource:
    """The candidates' requests summed into a fresh resource (what the trace prints)."""
    total_req = Resource.empty()
    for task in candidates:
        total_req.add(task.resreq)
    return total_req
