"""capacity: queues with a deserved share written in their spec (Volcano's ``capacity`` plugin).

Unlike proportion there is no water-filling: ``spec.deserved`` is what a queue may reclaim
up to, and ``realCapability`` (capability, less the others' guarantees) is the hard limit on
what it may hold. With ``enableHierarchy: true`` queues form a tree under ``root`` through
``spec.parent``; only leaves hold jobs, usage is added up to every ancestor, and a task is
allocatable only if the leaf and every ancestor stay within their real capability.

The DRA quota and the queue-allocation-gate reservation of Volcano's plugin are not built:
a task's request is checked against ``allocated + request`` without any reserved part.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from scheduler_core.api.job import JobInfo
from scheduler_core.api.queue import ROOT_QUEUE, QueueInfo
from scheduler_core.api.resource import (
    INFINITY,
    ZERO,
    Resource,
    intersection_with_ignored_scalar_resources,
    res_max,
)
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.usage import deduct_sch_gated_resources, job_usage
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.fit import PERMIT, PERMITTED, REJECT, Vote
from scheduler_core.framework.hooks import (
    ALLOCATABLE,
    JOB_ENQUEUEABLE,
    JOB_ENQUEUED,
    PREEMPTIVE,
    QUEUE_ORDER,
    RECLAIMABLE,
    SIMULATE_ALLOCATABLE,
    VICTIM_QUEUE_ORDER,
)
from scheduler_core.framework.registry import Plugin, register_plugin
from scheduler_core.framework.session import CycleState, Session
from scheduler_core.logutil import v
from scheduler_core.plugins.fairshare import charging
from scheduler_core.plugins.fairshare.attrs import (
    DerivationStep,
    QueueAttr,
    capacity_share,
    record_step,
    start_derivation,
    trace,
)
from scheduler_core.plugins.fairshare.charging import QueueCharging
from scheduler_core.plugins.fairshare.hierarchy import (
    HierarchyError,
    ancestor_at_depth,
    ancestors_by_level,
    ancestry,
    check_hierarchical_queue,
    compare_share_with_deserved,
    has_relevant_deserved,
    queue_level,
)
from scheduler_core.plugins.fairshare.refusals import (
    cannot_take_more,
    not_open,
    over_limit,
    over_real_capability,
    queue_not_open,
)
from scheduler_core.plugins.fairshare.spec import (
    flat_capability,
    flat_real_capability,
    format_resource_names,
    hierarchy_enabled,
    spec_guarantee,
    total_guarantee,
)

log = logging.getLogger("scheduler_core.plugins.capacity")

ANCESTOR_RECLAIM_LEVEL = "ancestorReclaimLevel"
#: Volcano's MaxInt64 for the unlimited root scalars (a float, like every Resource value).
_MAX_INT64 = float(2**63 - 1)
_NOT_READY = "Capacity plugin failed to check queue's hierarchical structure!"


@register_plugin
class CapacityPlugin(QueueCharging, Plugin):
    """``queue_opts`` (queue name -> attributes, with ``ancestors``/``children`` in a
    hierarchy) stays readable after the session closes, for reporting."""

    name = "capacity"
    log_label = "[capacity]"

    def _share(self, attr: QueueAttr) -> float:
        return capacity_share(attr)

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        level = arguments.get_int(ANCESTOR_RECLAIM_LEVEL, 0)
        if level < 0:
            log.warning(
                "%s should be non-negative, got %d. Falling back to 0.",
                ANCESTOR_RECLAIM_LEVEL,
                level,
            )
            level = 0
        self.ancestor_reclaim_level = level
        self.total_resource = Resource.empty()
        self.total_guarantee = Resource.empty()
        self.queue_opts: dict[str, QueueAttr] = {}
        #: queue name -> how its deserved and real capability were reached this session
        #: (the explain API's record of this computation)
        self.derivation: dict[str, list[DerivationStep]] = {}
        self.hierarchy = False
        self.ready_to_schedule = True
        #: why the hierarchy is unusable ("" when it is fine)
        self.not_ready_reason = ""
        #: job uid -> why the queue refused to admit it (Volcano records a PodGroup event).
        self.unschedulable_reasons: dict[str, str] = {}
        self._ssn: Session | None = None

    # --- session --------------------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        self.total_resource = ssn.total_resource.clone()
        trace(log, v(4), "The total resource is <%s>", self.total_resource)
        trace(
            log,
            v(4),
            "[capacity] reclaim ancestor level configured as %d",
            self.ancestor_reclaim_level,
        )
        self.hierarchy = hierarchy_enabled(ssn.conf, self.name)
        if self.hierarchy:
            trace(log, v(4), "Hierarchy is enabled in capacity plugin")
            try:
                self._build_hierarchical(ssn)
            except HierarchyError as exc:
                self.ready_to_schedule = False
                self.not_ready_reason = str(exc)
                log.warning("Capacity plugin refuses every queue decision this session: %s", exc)
        else:
            self._build_flat(ssn)

        ssn.add_hook(RECLAIMABLE, self.name, self._reclaimable)
        ssn.add_hook(PREEMPTIVE, self.name, self._preemptive)
        ssn.add_hook(ALLOCATABLE, self.name, self._allocatable)
        ssn.add_hook(JOB_ENQUEUEABLE, self.name, self._job_enqueueable)
        ssn.add_hook(JOB_ENQUEUED, self.name, self._job_enqueued)
        ssn.add_hook(SIMULATE_ALLOCATABLE, self.name, self._simulate_allocatable)
        charging.register(ssn, self)

    def on_session_close(self, ssn: Session) -> None:
        self._ssn = None

    # --- building the attributes ----------------------------------------------------------

    def _build_flat(self, ssn: Session) -> None:
        """Queues with jobs only; deserved from the spec, capped by the real capability and
        raised to the guarantee."""
        self.total_guarantee = total_guarantee(ssn.queues.values())
        trace(log, v(4), "The total guarantee resource is <%s>", self.total_guarantee)
        for job in ssn.jobs.values():
            attr = self.queue_opts.get(job.queue)
            if attr is None:
                queue = ssn.queues.get(job.queue)
                if queue is None:
                    continue
                capability = flat_capability(queue)
                guarantee = spec_guarantee(queue)
                attr = QueueAttr(
                    name=queue.name,
                    weight=queue.weight,
                    deserved=_spec_deserved(queue),
                    capability=capability if capability is not None else Resource.empty(),
                    real_capability=flat_real_capability(
                        self.total_resource, self.total_guarantee, guarantee, capability
                    ),
                    guarantee=guarantee,
                )
                self.queue_opts[queue.name] = attr
                trace(log, v(4), "Added Queue <%s> attributes.", queue.name)
            job_usage(job).add_to(attr)
        for attr in self.queue_opts.values():
            steps = start_derivation(self.derivation, attr, "spec.deserved", attr.deserved)
            record_step(
                steps,
                "real capability: cluster - all guarantees + own guarantee, capped by capability",
                attr.real_capability,
                attr.real_capability,
            )
            before = attr.deserved.clone()
            attr.deserved.min_dimension_resource(attr.real_capability, INFINITY)
            record_step(steps, "deserved capped by real capability", attr.deserved, before)
            before = attr.deserved.clone()
            attr.deserved = res_max(attr.deserved, attr.guarantee) or Resource.empty()
            record_step(steps, "deserved raised to guarantee", attr.deserved, before)
            attr.share = capacity_share(attr)
            _log_attr(attr)
        ssn.add_hook(QUEUE_ORDER, self.name, self._flat_queue_order)

    def _build_hierarchical(self, ssn: Session) -> None:
        """Every queue gets attributes; a job's usage counts in its leaf and all ancestors;
        real capabilities are derived top-down from the root. Raises HierarchyError when the
        tree is unusable (unknown parent, cycle, job in a non-leaf queue, no root)."""
        opts = self.queue_opts
        for queue in ssn.queues.values():
            opts[queue.name] = QueueAttr(
                name=queue.name,
                weight=queue.weight,
                deserved=_spec_deserved(queue),
                capability=queue.capability.clone()
                if queue.capability is not None
                else Resource.empty(),
                guarantee=spec_guarantee(queue),
            )
        for name, node in opts.items():
            node.ancestors = ancestry(ssn.queues, name)
            if node.ancestors:
                opts[node.ancestors[-1]].children.append(name)

        for job in ssn.jobs.values():
            attr = opts.get(job.queue)
            if attr is None:
                log.warning(
                    "Job <%s/%s> references queue %s which is not found in session "
                    "queues, skipping",
                    job.namespace,
                    job.name,
                    job.queue,
                )
                continue
            if not attr.is_leaf():
                raise HierarchyError(
                    f"The Queue <{attr.name}> of Job <{job.namespace}/{job.name}> is not leaf queue"
                )
            usage = job_usage(job)
            usage.add_to(attr)
            for ancestor in attr.ancestors:
                usage.add_to(opts[ancestor])

        root = opts.get(ROOT_QUEUE)
        if root is None:
            raise HierarchyError(f'Root queue "{ROOT_QUEUE}" not found in session queues')
        if root.capability.is_empty():
            # Users may submit more than the cluster has now; only queues they create limit.
            unlimited = Resource.infinite()
            for name in self.total_resource.scalars or {}:
                unlimited.set_scalar(name, _MAX_INT64)
            root.capability = unlimited
        root.real_capability = root.capability.clone()
        check_hierarchical_queue(self.queue_opts, self.derivation, root)

        for attr in opts.values():
            attr.share = capacity_share(attr)
            _log_attr(attr)
        ssn.add_hook(QUEUE_ORDER, self.name, self._hierarchical_queue_order)
        ssn.add_hook(VICTIM_QUEUE_ORDER, self.name, self._victim_queue_order)

    # --- lookups --------------------------------------------------------------------------

    def _attr_of_task(self, task: TaskInfo, opts: Mapping[str, QueueAttr]) -> QueueAttr | None:
        job = self._ssn.jobs.get(task.job) if self._ssn is not None else None
        if job is None:
            log.warning(
                "[capacity] job <%s> of task <%s/%s> not found in session",
                task.job,
                task.namespace,
                task.name,
            )
            return None
        attr = opts.get(job.queue)
        if attr is None:
            log.warning(
                "[capacity] queue <%s> of task <%s/%s> not found in queueOpts",
                job.queue,
                task.namespace,
                task.name,
            )
        return attr

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

    # --- reclaim --------------------------------------------------------------------------

    def _reclaimable(
        self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        """Victims in eviction order: each must share a resource dimension with the
        reclaimer, leave its queue at or above guarantee, and either use nothing its queue
        deserves or come from a queue above deserved on a dimension it uses (per-call
        running totals). With ``ancestorReclaimLevel`` the victim's ancestors must agree."""
        victims: list[TaskInfo] = []
        if not self.ready_to_schedule or self._ssn is None:
            trace(log, v(3), _NOT_READY)
            return victims, REJECT
        reclaimer_attr = self._attr_of_task(reclaimer, self.queue_opts)
        if reclaimer_attr is None:
            return victims, REJECT
        gated_by_ancestors = self.hierarchy and self.ancestor_reclaim_level > 0
        allocations: dict[str, Resource] = {}
        ordered = self._ssn.build_victims_priority_queue(reclaimees, reclaimer)
        while not ordered.empty():
            reclaimee = ordered.pop()
            attr = self._attr_of_task(reclaimee, self.queue_opts)
            if attr is None:
                continue
            if not intersection_with_ignored_scalar_resources(
                reclaimee.resreq, reclaimer.init_resreq
            ):
                trace(
                    log,
                    v(5),
                    "[capacity] Reclaimee <%s>: <%s> does not have intersecting "
                    "resource dimensions with reclaimer <%s>: <%s>, skip it.",
                    reclaimee.key,
                    reclaimee.resreq,
                    reclaimer.key,
                    reclaimer.init_resreq,
                )
                continue
            allocated = allocations.get(attr.name)
            if allocated is None:
                allocated = allocations[attr.name] = attr.allocated.clone()
            except_reclaimee = allocated.clone().sub_without_assert(reclaimee.resreq)
            if not attr.guarantee.less_equal(except_reclaimee, ZERO):
                continue
            if not has_relevant_deserved(reclaimee, attr.deserved):
                if (
                    gated_by_ancestors
                    and self._shares_non_root_ancestor(reclaimer_attr, attr)
                    and not has_relevant_deserved(reclaimer, reclaimer_attr.deserved)
                ):
                    continue
            elif not allocated.greater_partly_with_relevant_dimensions(
                attr.deserved, reclaimee.resreq
            )[0]:
                continue
            checked: list[Resource] = []
            if gated_by_ancestors and not self._ancestors_agree(
                reclaimer_attr, attr, reclaimee, allocations, checked
            ):
                continue
            allocated.sub_without_assert(reclaimee.resreq)
            for ancestor_allocated in checked:
                ancestor_allocated.sub_without_assert(reclaimee.resreq)
            victims.append(reclaimee)
        trace(
            log,
            v(4),
            "[capacity] Victims from capacity plugin: victims=%s reclaimer=%s.",
            [t.key for t in victims],
            reclaimer.key,
        )
        return victims, PERMIT

    def _shares_non_root_ancestor(self, a: QueueAttr, b: QueueAttr) -> bool:
        level = self.ancestor_reclaim_level
        mine = set(ancestors_by_level(a, level).values())
        theirs = set(ancestors_by_level(b, level).values())
        return any(name != ROOT_QUEUE and name in theirs for name in mine)

    def _ancestors_agree(
        self,
        reclaimer_attr: QueueAttr,
        attr: QueueAttr,
        reclaimee: TaskInfo,
        allocations: dict[str, Resource],
        checked: list[Resource],
    ) -> bool:
        """For each level up to ``ancestorReclaimLevel``, the victim's ancestor there (unless
        it is the root or also the reclaimer's) must itself be above deserved on a dimension
        the victim uses, or deserve none of them. ``checked`` collects the per-call totals
        to charge the victim to."""
        mine = ancestors_by_level(reclaimer_attr, self.ancestor_reclaim_level)
        theirs = ancestors_by_level(attr, self.ancestor_reclaim_level)
        for level in range(1, self.ancestor_reclaim_level + 1):
            name = theirs.get(level)
            if name is None or name == ROOT_QUEUE or mine.get(level) == name:
                continue
            ancestor = self.queue_opts.get(name)
            if ancestor is None:
                log.warning(
                    "[capacity] Skip reclaimee <%s>: ancestor check target at level %d is nil",
                    reclaimee.key,
                    level,
                )
                return False
            allocated = allocations.get(name)
            if allocated is None:
                allocated = allocations[name] = ancestor.allocated.clone()
            checked.append(allocated)
            if not has_relevant_deserved(reclaimee, ancestor.deserved):
                continue
            if not allocated.greater_partly_with_relevant_dimensions(
                ancestor.deserved, reclaimee.resreq
            )[0]:
                return False
        return True

    def _preemptive(self, queue: QueueInfo, candidates: list[TaskInfo]) -> bool:
        """May this queue reclaim for ``candidates``: within real capability after growing by
        them, and still at or below deserved on some requested dimension in use (or, with
        ``ancestorReclaimLevel``, some ancestor is)."""
        if not self.ready_to_schedule:
            trace(log, v(3), _NOT_READY)
            return False
        if not queue.is_open():
            trace(
                log,
                v(3),
                "Queue <%s> current state: %s, is not open state, can not reclaim for tasks.",
                queue.name,
                queue.state,
            )
            return False
        attr = self.queue_opts.get(queue.name)
        if attr is None:
            return False
        total_req = Resource.empty()
        for task in candidates:
            total_req.add(task.resreq)
        future_used = attr.allocated.clone().add(total_req)
        if not future_used.less_equal_with_dimension_and_resources_name(
            attr.real_capability, total_req
        )[0]:
            trace(
                log,
                v(3),
                "Queue <%s> cannot reclaim because futureUsed <%s> exceeds realCapability <%s>.",
                queue.name,
                future_used,
                attr.real_capability,
            )
            return False
        preemptive, names = future_used.less_equal_partly_with_dimension_zero_filtered(
            attr.deserved, total_req
        )
        if preemptive:
            trace(
                log,
                v(3),
                "Queue <%s> can reclaim on resource dimensions: %s. The futureUsed: "
                "%s, deserved: %s, allocated: %s, tasks requested: %s",
                queue.name,
                names,
                future_used,
                attr.deserved,
                attr.allocated,
                total_req,
            )
            return True
        trace(
            log,
            v(4),
            "Queue <%s> itself can not reclaim, futureUsed: %s, deserved: %s, requested: %s",
            queue.name,
            future_used,
            attr.deserved,
            total_req,
        )
        if self.hierarchy and self.ancestor_reclaim_level > 0:
            for level in range(1, self.ancestor_reclaim_level + 1):
                name = ancestor_at_depth(attr, level)
                ancestor = self.queue_opts.get(name) if name and name != ROOT_QUEUE else None
                if ancestor is None:
                    continue
                ancestor_future = ancestor.allocated.clone().add(total_req)
                preemptive, names = ancestor_future.less_equal_partly_with_dimension_zero_filtered(
                    ancestor.deserved, total_req
                )
                if preemptive:
                    trace(
                        log,
                        v(3),
                        "Queue's ancestor <%s> can reclaim on resource dimensions: %s.",
                        ancestor.name,
                        names,
                    )
                    return True
        trace(log, v(4), "Queue <%s> and its ancestors can not reclaim.", queue.name)
        return False

    # --- allocate -------------------------------------------------------------------------

    def _allocatable(self, queue: QueueInfo, task: TaskInfo) -> Vote:
        if not queue.is_open():
            trace(
                log,
                v(3),
                "Queue <%s> current state: %s, cannot allocate task <%s>.",
                queue.name,
                queue.state,
                task.name,
            )
            return not_open(queue.name, str(queue.state))
        return self._allocatable_in(self.queue_opts, queue, task)

    def _allocatable_in(
        self, opts: Mapping[str, QueueAttr], queue: QueueInfo, task: TaskInfo
    ) -> Vote:
        """From the leaf up to the root, every queue must stay within its real capability
        on the dimensions the task requests."""
        if not self.ready_to_schedule:
            trace(log, v(3), _NOT_READY)
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
        return Vote(REJECT, f"{_NOT_READY}{reason}")

    # --- enqueue --------------------------------------------------------------------------

    def _job_enqueueable(self, job: JobInfo) -> Vote:
        if not self.ready_to_schedule or self._ssn is None:
            trace(log, v(3), _NOT_READY)
            return self._not_ready()
        attr = self.queue_opts.get(job.queue)
        if self.hierarchy and (attr is None or not attr.is_leaf()):
            return Vote(
                REJECT,
                f"queue {job.queue} cannot admit job {job.uid}: with a queue hierarchy only "
                "a leaf queue holds jobs",
            )
        queue = self._ssn.queues.get(job.queue)
        if queue is None or not queue.is_open():
            trace(
                log,
                v(3),
                "Queue <%s> current state: %s, is not open state, reject job <%s>.",
                job.queue,
                queue.state if queue is not None else "missing",
                job.uid,
            )
            return queue_not_open(job, str(queue.state) if queue is not None else "missing")
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
        min_req = job.get_min_resources()
        for name in [attr.name, *reversed(attr.ancestors)]:
            level_attr = self.queue_opts[name]
            r = min_req.clone().add(level_attr.allocated).add(level_attr.inqueue)
            r.sub_without_assert(level_attr.elastic)
            fits, names = r.less_equal_with_dimension_and_resources_name(
                level_attr.real_capability, min_req
            )
            if not fits:
                message = format_resource_names(
                    "queue resource quota insufficient", "insufficient", names
                )
                self.unschedulable_reasons[job.uid] = message
                trace(
                    log, v(3), "Job <%s> cannot be enqueued, queue <%s>: %s", job.uid, name, message
                )
                return over_real_capability(job, level_attr, names)
        return PERMITTED

    def _job_enqueued(self, job: JobInfo) -> None:
        attr = self.queue_opts.get(job.queue)
        if attr is None or job.min_resources is None:
            return
        reserved = deduct_sch_gated_resources(job, job.get_min_resources())
        attr.inqueue.add(reserved)
        for ancestor in self._lineage(attr, self.queue_opts):
            ancestor.inqueue.add(reserved)
        trace(log, v(5), "job <%s> enqueued", job.uid)

    # --- simulation -----------------------------------------------------------------------

    def _simulate_allocatable(self, state: CycleState, queue: QueueInfo, task: TaskInfo) -> bool:
        attrs = self._state(state)
        return attrs is not None and not self._allocatable_in(attrs, queue, task).rejected


def _spec_deserved(queue: QueueInfo) -> Resource:
    return queue.deserved.clone() if queue.deserved is not None else Resource.empty()


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


def _log_attr(attr: QueueAttr) -> None:
    trace(
        log,
        v(4),
        "The attributes of queue <%s> in capacity: deserved <%s>, realCapability <%s>, "
        "allocate <%s>, request <%s>, elastic <%s>, share <%0.2f>",
        attr.name,
        attr.deserved,
        attr.real_capability,
        attr.allocated,
        attr.request,
        attr.elastic,
        attr.share,
    )
