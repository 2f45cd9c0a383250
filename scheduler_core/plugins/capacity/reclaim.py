"""capacity's reclaim rules: which victims a reclaimer's queue may take (``reclaimable``)
and whether a queue may reclaim at all (``preemptive``), on the leaf queues and, with
``ancestorReclaimLevel`` in a hierarchy, on their ancestors."""

from __future__ import annotations

import logging

from scheduler_core.api.queue import ROOT_QUEUE, QueueInfo
from scheduler_core.api.resource import ZERO, Resource, intersection_with_ignored_scalar_resources
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.fit import PERMIT, REJECT
from scheduler_core.logutil import v
from scheduler_core.plugins.capacity.args import CapacityArgs
from scheduler_core.plugins.fairshare.attrs import QueueAttr, trace
from scheduler_core.plugins.fairshare.hierarchy import (
    ancestor_at_depth,
    ancestors_by_level,
    has_relevant_deserved,
)
from scheduler_core.plugins.fairshare.plugin import FairSharePlugin

log = logging.getLogger("scheduler_core.plugins.capacity")

_DISJOINT = (
    "[capacity] Reclaimee <%s>: <%s> does not have intersecting resource dimensions with "
    "reclaimer <%s>: <%s>, skip it."
)
NOT_READY = "Capacity plugin failed to check queue's hierarchical structure!"


class CapacityReclaim(FairSharePlugin[CapacityArgs]):
    """The reclaim half of capacity's rules, over the records its session built."""

    log = log
    #: whether the queues form a tree (``enableHierarchy``)
    hierarchy: bool
    #: false when the tree is unusable: every queue decision is then refused
    ready_to_schedule: bool

    def _reclaimable(
        self, reclaimer: TaskInfo, reclaimees: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        """Victims in eviction order: each must share a resource dimension with the
        reclaimer, leave its queue at or above guarantee, and either use nothing its queue
        deserves or come from a queue above deserved on a dimension it uses (per-call
        running totals). With ``ancestorReclaimLevel`` the victim's ancestors must agree."""
        victims: list[TaskInfo] = []
        if not self.ready_to_schedule or self._ssn is None:
            trace(log, v(3), NOT_READY)
            return victims, REJECT
        reclaimer_attr = self._attr_of_task(reclaimer, self.queue_opts)
        if reclaimer_attr is None:
            return victims, REJECT
        gated_by_ancestors = self.hierarchy and self.args.ancestor_reclaim_level > 0
        allocations: dict[str, Resource] = {}
        ordered = self._ssn.build_victims_priority_queue(reclaimees, reclaimer)
        while not ordered.empty():
            reclaimee = ordered.pop()
            attr = self._attr_of_task(reclaimee, self.queue_opts)
            if attr is None:
                continue
            if _disjoint(reclaimee, reclaimer):
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
        level = self.args.ancestor_reclaim_level
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
        mine = ancestors_by_level(reclaimer_attr, self.args.ancestor_reclaim_level)
        theirs = ancestors_by_level(attr, self.args.ancestor_reclaim_level)
        for level in range(1, self.args.ancestor_reclaim_level + 1):
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
            trace(log, v(3), NOT_READY)
            return False
        if self._closed(
            queue, "Queue <%s> current state: %s, is not open state, can not reclaim for tasks."
        ):
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
        names = _reclaims_on(attr, total_req)
        if names is not None:
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
        if self.hierarchy:
            for level in range(1, self.args.ancestor_reclaim_level + 1):
                name = ancestor_at_depth(attr, level)
                ancestor = self.queue_opts.get(name) if name and name != ROOT_QUEUE else None
                names = _reclaims_on(ancestor, total_req) if ancestor is not None else None
                if ancestor is not None and names is not None:
                    msg = "Queue's ancestor <%s> can reclaim on resource dimensions: %s."
                    trace(log, v(3), msg, ancestor.name, names)
                    return True
        trace(log, v(4), "Queue <%s> and its ancestors can not reclaim.", queue.name)
        return False


def _disjoint(reclaimee: TaskInfo, reclaimer: TaskInfo) -> bool:
    """Whether evicting ``reclaimee`` would free nothing ``reclaimer`` asks for (no resource
    dimension in common, ignored scalars aside): such a victim is never taken."""
    if intersection_with_ignored_scalar_resources(reclaimee.resreq, reclaimer.init_resreq):
        return False
    what = (reclaimee.key, reclaimee.resreq, reclaimer.key, reclaimer.init_resreq)
    trace(log, v(5), _DISJOINT, *what)
    return True


def _reclaims_on(attr: QueueAttr, total_req: Resource) -> list[str] | None:
    """The dimensions the candidates ask for on which ``attr``, grown by them, would still
    be at or below its deserved share (``None`` when there is none: it may not reclaim)."""
    future_used = attr.allocated.clone().add(total_req)
    reclaims, names = future_used.less_equal_partly_with_dimension_zero_filtered(
        attr.deserved, total_req
    )
    return names if reclaims else None
