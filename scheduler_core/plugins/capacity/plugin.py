"""capacity's session and its allocate and admission rules: the queue records it builds as
a session opens, how queues are ordered, and what a queue may take or admit."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import ClassVar

from scheduler_core.api.job import JobInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.fit import PERMITTED, REJECT, Vote
from scheduler_core.framework.hooks import QUEUE_ORDER, VICTIM_QUEUE_ORDER
from scheduler_core.framework.session import CycleState, Session
from scheduler_core.logutil import v
from scheduler_core.plugins.capacity.args import CapacityArgs
from scheduler_core.plugins.capacity.build import build_flat, build_hierarchical
from scheduler_core.plugins.capacity.reclaim import NOT_READY, CapacityReclaim
from scheduler_core.plugins.fairshare.attrs import (
    DerivationStep,
    QueueAttr,
    capacity_share,
    trace,
)
from scheduler_core.plugins.fairshare.hierarchy import (
    HierarchyError,
    compare_share_with_deserved,
    queue_level,
)
from scheduler_core.plugins.fairshare.refusals import cannot_take_more, not_open, over_limit
from scheduler_core.plugins.fairshare.spec import hierarchy_enabled, total_guarantee

log = logging.getLogger("scheduler_core.plugins.capacity")


class CapacityPlugin(CapacityReclaim):
    """Queues with a deserved share written in their spec; ``queue_opts`` (queue name ->
    its record, with ``ancestors``/``children`` in a hierarchy) stays readable after the
    session closes, for reporting."""

    name = "capacity"
    log_label = "[capacity]"
    job_not_found = "[capacity] job <%s> of task <%s/%s> not found in session"
    queue_not_found = "[capacity] queue <%s> of task <%s/%s> not found in queueOpts"
    args_type: ClassVar[type[CapacityArgs]] = CapacityArgs

    def _share(self, attr: QueueAttr) -> float:
        return capacity_share(attr)

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        #: queue name -> how its deserved and real capability were reached this session
        #: (the explain API's record of this computation)
        self.derivation: dict[str, list[DerivationStep]] = {}
        self.hierarchy = False
        self.ready_to_schedule = True
        #: why the hierarchy is unusable ("" when it is fine)
        self.not_ready_reason = ""

    # --- session --------------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        self.total_resource = ssn.total_resource.clone()
        trace(log, v(4), "The total resource is <%s>", self.total_resource)
        trace(
            log,
            v(4),
            "[capacity] reclaim ancestor level configured as %d",
            self.args.ancestor_reclaim_level,
        )
        self.hierarchy = hierarchy_enabled(ssn.conf, self.name)
        if self.hierarchy:
            trace(log, v(4), "Hierarchy is enabled in capacity plugin")
            try:
                build_hierarchical(ssn, self.total_resource, self.queue_opts, self.derivation)
            except HierarchyError as exc:
                self.ready_to_schedule = False
                self.not_ready_reason = str(exc)
                log.warning("Capacity plugin refuses every queue decision this session: %s", exc)
            else:
                ssn.add_hook(QUEUE_ORDER, self.name, self._hierarchical_queue_order)
                ssn.add_hook(VICTIM_QUEUE_ORDER, self.name, self._victim_queue_order)
        else:
            self.total_guarantee = total_guarantee(ssn.queues.values())
            trace(log, v(4), "The total guarantee resource is <%s>", self.total_guarantee)
            build_flat(
                ssn, self.total_resource, self.total_guarantee, self.queue_opts, self.derivation
            )
            ssn.add_hook(QUEUE_ORDER, self.name, self._flat_queue_order)
        self._register_queue_hooks(ssn)

    # --- lookups --------------------------------------------------------------------------

    def _lineage(self, attr: QueueAttr, opts: Mapping[str, QueueAttr]) -> list[QueueAttr]:
        """The queue's ancestors that usage is propagated to (none outside a hierarchy)."""
        if not self.hierarchy:
            return []
        return [opts[name] for name in attr.ancestors if name in opts]

    # --- ordering -------------------------------------------------------------------------

    def _flat_queue_order(self, l: QueueInfo, r: QueueInfo) -> int:
        if l.priority != r.priority:
            return r.priority - l.priority
        lattr, rattr = self.queue_opts.get(l.name), self.queue_opts.get(r.name)
        if lattr is None or rattr is None:
            return 0
        return compare_share_with_deserved(lattr, rattr)

    def _hierarchical_queue_order(self, l: QueueInfo, r: QueueInfo) -> int:
        """Priority, then leaves before inner queues, then — for two leaves — the shares of
        the two subtrees they belong to just below their deepest common ancestor."""
        if l.priority != r.priority:
            return r.priority - l.priority
        lattr, rattr = self.queue_opts.get(l.name), self.queue_opts.get(r.name)
        if lattr is None or rattr is None:
            return 0
        l_leaf, r_leaf = lattr.is_leaf(), rattr.is_leaf()
        if l_leaf != r_leaf:
            return -1 if l_leaf else 1
        if not l_leaf:
            return compare_share_with_deserved(lattr, rattr)
        level = queue_level(lattr, rattr)
        l_side = lattr.ancestors[level + 1] if level + 1 < len(lattr.ancestors) else lattr.name
        r_side = rattr.ancestors[level + 1] if level + 1 < len(rattr.ancestors) else rattr.name
        return compare_share_with_deserved(self.queue_opts[l_side], self.queue_opts[r_side])

    def _victim_queue_order(self, l: QueueInfo, r: QueueInfo, preemptor: QueueInfo) -> int:
        """Evict first from the queue most closely related to the preemptor's."""
        lattr = self.queue_opts.get(l.name)
        rattr = self.queue_opts.get(r.name)
        pattr = self.queue_opts.get(preemptor.name)
        if lattr is None or rattr is None or pattr is None:
            return 0
        l_level, r_level = queue_level(lattr, pattr), queue_level(rattr, pattr)
        if l_level == r_level:
            return 0
        return -1 if l_level > r_level else 1

    # --- allocate -------------------------------------------------------------------------

    def _allocatable(self, queue: QueueInfo, task: TaskInfo) -> Vote:
        if self._closed(
            queue, "Queue <%s> current state: %s, cannot allocate task <%s>.", task.name
        ):
            return not_open(queue.name, str(queue.state))
        return self._allocatable_in(self.queue_opts, queue, task)

    def _allocatable_in(
        self, opts: Mapping[str, QueueAttr], queue: QueueInfo, task: TaskInfo
    ) -> Vote:
        """From the leaf up to the root, every queue must stay within its real capability
        on the dimensions the task requests."""
        if not self.ready_to_schedule:
            trace(log, v(3), NOT_READY)
            return self._not_ready()
        attr = opts.get(queue.name)
        if attr is None:
            return cannot_take_more(queue.name)
        if self.hierarchy and not attr.is_leaf():
            trace(
                log,
                v(3),
                "Queue <%s> is not a leaf queue, can not allocate task <%s>.",
                queue.name,
                task.name,
            )
            return Vote(
                REJECT, f"queue {queue.name} is not a leaf queue: only leaf queues hold pods"
            )
        for name in [queue.name, *reversed(attr.ancestors)]:
            level_attr = opts.get(name)
            if level_attr is None:
                return cannot_take_more(name)
            if not _within_real_capability(level_attr, task):
                return over_limit(queue.name, level_attr, task.resreq, "capability")
        return PERMITTED

    def _not_ready(self) -> Vote:
        reason = f" ({self.not_ready_reason})" if self.not_ready_reason else ""
        return Vote(REJECT, f"{NOT_READY}{reason}")

    # --- enqueue --------------------------------------------------------------------------

    def _job_enqueueable(self, job: JobInfo) -> Vote:
        if not self.ready_to_schedule or self._ssn is None:
            trace(log, v(3), NOT_READY)
            return self._not_ready()
        attr = self.queue_opts.get(job.queue)
        if self.hierarchy and (attr is None or not attr.is_leaf()):
            return Vote(
                REJECT,
                f"queue {job.queue} cannot admit job {job.uid}: with a queue hierarchy only "
                "a leaf queue holds jobs",
            )
        refusal = self._refuse_closed_queue(job)
        if refusal is not None:
            return refusal
        if attr is None:
            trace(
                log,
                v(4),
                "Capability of queue <%s> was not set, allow job <%s> to Inqueue.",
                job.queue,
                job.uid,
            )
            return PERMITTED
        if job.min_resources is None:
            trace(log, v(4), "job %s MinResources is null.", job.name)
            return PERMITTED
        levels = (self.queue_opts[name] for name in [attr.name, *reversed(attr.ancestors)])
        return self._admit(job, levels, "Job <%s> cannot be enqueued, queue <%s>: %s")

    def _job_enqueued(self, job: JobInfo) -> None:
        super()._job_enqueued(job)
        if job.queue in self.queue_opts and job.min_resources is not None:
            trace(log, v(5), "job <%s> enqueued", job.uid)

    # --- simulation -----------------------------------------------------------------------

    def _simulate_allocatable(self, state: CycleState, queue: QueueInfo, task: TaskInfo) -> bool:
        attrs = self._state(state)
        return attrs is not None and not self._allocatable_in(attrs, queue, task).rejected


def _within_real_capability(attr: QueueAttr, task: TaskInfo) -> bool:
    """``queueAllocatableWithReserved`` without DRA and without gate reservations."""
    future_used = attr.allocated.clone().add(task.resreq)
    fits, _ = future_used.less_equal_with_dimension_and_resources_name(
        attr.real_capability, task.resreq
    )
    if not fits:
        trace(
            log,
            v(3),
            "Queue <%s>: realCapability <%s>, allocated <%s>, reserved <%s>; Candidate <%s>: "
            "resource request <%s>",
            attr.name,
            attr.real_capability,
            attr.allocated,
            Resource.empty(),
            task.name,
            task.resreq,
        )
    return fits
