"""drf: Dominant Resource Fairness between jobs.

A job's share is its largest fraction of any cluster resource. Jobs with a smaller share go
first, and a preemptor may only take from jobs that would still hold at least as large a
share as the preemptor after the eviction, so preemption never makes the allocation less fair.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from scheduler_core.api.job import JobInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.arguments import Arguments, NoArgs
from scheduler_core.framework.fit import PERMIT
from scheduler_core.framework.hooks import JOB_ORDER, JOB_ORDER_KEY, PREEMPTABLE, PREEMPTOR_KEY
from scheduler_core.framework.registry import FollowStep, Plugin, UsageChange
from scheduler_core.framework.session import EventHandler, Session
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.plugins.drf")
_V4 = v(4)
#: The scalars of an allocation that holds none (read only).
_NO_SCALARS: Mapping[str, float] = MappingProxyType({})

#: Shares closer than this are equal: preemption between equal shares is allowed.
SHARE_DELTA = 1e-6


@dataclass(slots=True)
class DrfAttr:
    """A job's allocation and the dominant share derived from it (when ``current``; else
    worked out again from ``allocated`` before it is read)."""

    allocated: Resource = field(default_factory=Resource.empty)
    share: float = 0.0
    dominant_resource: str = ""
    current: bool = True


def calculate_share(
    allocated: Resource, total: Resource, names: list[str] | None = None
) -> tuple[str, float]:
    """(dominant resource, its share) over the dimensions the cluster has (``total``'s
    names, unless the caller passes them precomputed)."""
    dominant = ""
    result = 0.0
    held = allocated.scalars or _NO_SCALARS
    whole_scalars = total.scalars or _NO_SCALARS
    for name in names if names is not None else total.resource_names():
        # ``share(allocated.get(name), total.get(name))`` written out: it runs on every
        # allocate event and for every job the job order compares.
        if name == "cpu":
            used, whole = allocated.milli_cpu, total.milli_cpu
        elif name == "memory":
            used, whole = allocated.memory, total.memory
        else:
            used, whole = held.get(name, 0.0), whole_scalars.get(name, 0.0)
        value = (0.0 if used == 0 else 1.0) if whole == 0 else used / whole
        if value > result:
            result = value
            dominant = name
    return dominant, result


class DrfPlugin(Plugin[NoArgs]):
    name = "drf"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.total_resource = Resource.empty()
        self._names: list[str] = []
        self.job_attrs: dict[str, DrfAttr] = {}
        #: The session's jobs, when their attributes are derived on first use (read-only).
        self._jobs: Mapping[str, JobInfo] = {}

    def on_session_open(self, ssn: Session) -> None:
        self.total_resource = ssn.total_resource.clone()
        self._names = self.total_resource.resource_names()
        self.job_attrs = {}
        log.log(v(4), "Total Allocatable %r", self.total_resource)
        if self._hierarchy_enabled(ssn):
            log.warning(
                "drf: enableHierarchy (hierarchical DRF) is not supported by this scheduler; "
                "drf behaves as flat DRF (no queue order, no reclaimable hook)"
            )

        self._jobs = ssn.jobs if ssn.read_only else {}
        if not ssn.read_only:
            for job in ssn.jobs.values():
                self.job_attrs[job.uid] = self._new_attr(job)
        # A read-only session asks for a few jobs' shares (a preemptor's, its victims'):
        # deriving each on first use gives the same numbers, since nothing there changes a
        # job's own allocated sum, and spares 2,000 share computations per cluster change.

        ssn.add_hook(PREEMPTABLE, self.name, self.preemptable)
        ssn.add_hook(PREEMPTOR_KEY, self.name, self.preemptor_share)
        ssn.add_hook(JOB_ORDER, self.name, self.job_order)
        ssn.add_hook(JOB_ORDER_KEY, self.name, self.job_share_key)
        ssn.add_event_handler(
            EventHandler(
                allocate=self._on_allocate,
                deallocate=self._on_deallocate,
                charge_back=self._charge_back,
            )
        )

    def on_session_close(self, ssn: Session) -> None:
        self.job_attrs = {}
        self._jobs = {}

    def can_follow(self, ssn: Session) -> bool:
        return True

    def follow(self, ssn: Session, change: UsageChange) -> FollowStep:
        """Forget the records of the jobs whose sums moved or whose charged assumption ended
        (and of jobs gone): a read-only session derives them again from the live jobs on
        first use, and the open assumptions charged back after the step are charged only
        to those (``_charge_back``). A job's record is its own sum over the cluster's
        total, so the others of its queue stay as they are."""
        moved = change.jobs

        def forget() -> None:
            attrs, jobs = self.job_attrs, ssn.jobs
            for uid in moved:
                attrs.pop(uid, None)
            gone = [uid for uid in attrs if uid not in jobs]
            for uid in gone:
                del attrs[uid]

        return forget

    def _new_attr(self, job: JobInfo) -> DrfAttr:
        attr = DrfAttr()
        attr.allocated.add(job.allocated)  # the job's running sum of allocated tasks
        self._update_share(attr)
        return attr

    def _attr(self, job_uid: str) -> DrfAttr | None:
        """The job's record with its share current: derived on first use in a read-only
        session, and worked out again after the events that moved its allocation (an
        allocate event leaves it owed: the accounting session charges every filtered pod
        and charges its open assumptions back after each follow, and reads few shares)."""
        attr = self.job_attrs.get(job_uid)
        if attr is None:
            job = self._jobs.get(job_uid)
            if job is None:
                return None
            attr = self.job_attrs[job_uid] = self._new_attr(job)
        elif not attr.current:
            self._update_share(attr)
        return attr

    # --- state ----------------------------------------------------------------------------

    def _hierarchy_enabled(self, ssn: Session) -> bool:
        return any(
            option.name == self.name and option.enabled("enableHierarchy")
            for tier in ssn.tiers
            for option in tier.plugins
        )

    def _update_share(self, attr: DrfAttr) -> None:
        attr.dominant_resource, attr.share = calculate_share(
            attr.allocated, self.total_resource, self._names
        )
        attr.current = True

    def job_share(self, job_uid: str) -> float:
        """The job's current dominant share (0 for a job this session does not know)."""
        attr = self._attr(job_uid)
        return attr.share if attr is not None else 0.0

    # --- hooks ----------------------------------------------------------------------------

    def preemptable(
        self, preemptor: TaskInfo, preemptees: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        """Victims whose job keeps a share >= the preemptor job's share after the move.

        Each examined preemptee is subtracted from a per-call copy of its job's allocation,
        victim or not, so several preemptees of one job are judged cumulatively.
        """
        preemptor_attr = self._attr(preemptor.job)
        if preemptor_attr is None:
            return [], PERMIT
        wanted = preemptor_attr.allocated.clone().add(preemptor.resreq)
        _, ls = calculate_share(wanted, self.total_resource, self._names)

        allocations: dict[str, Resource] = {}
        victims: list[TaskInfo] = []
        for preemptee in preemptees:
            remaining = allocations.get(preemptee.job)
            if remaining is None:
                attr = self._attr(preemptee.job)
                if attr is None:
                    continue
                remaining = allocations[preemptee.job] = attr.allocated.clone()
            remaining.sub_without_assert(preemptee.resreq)
            _, rs = calculate_share(remaining, self.total_resource, self._names)
            if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                victims.append(preemptee)
        log.log(v(4), "Victims from DRF plugins are %s", [t.key for t in victims])
        return victims, PERMIT

    def preemptor_share(self, preemptor: TaskInfo) -> Hashable:
        """What ``preemptable`` reads of the preemptor: its job's share once it runs too
        (None without the job's record: no victim)."""
        preemptor_attr = self._attr(preemptor.job)
        if preemptor_attr is None:
            return None
        wanted = preemptor_attr.allocated.clone().add(preemptor.resreq)
        return calculate_share(wanted, self.total_resource, self._names)[1]

    def job_order(self, left: JobInfo, right: JobInfo) -> int:
        """Smaller dominant share first: the job furthest behind its fair share runs next."""
        l_share = self.job_share(left.uid)
        r_share = self.job_share(right.uid)
        log.log(
            v(4),
            "DRF JobOrderFn: <%s/%s> share state: %s, <%s/%s> share state: %s",
            left.namespace,
            left.name,
            l_share,
            right.namespace,
            right.name,
            r_share,
        )
        if l_share == r_share:
            return 0
        return -1 if l_share < r_share else 1

    def job_share_key(self, job: JobInfo) -> float:
        """``job_order`` as a sort key: the smaller dominant share sorts first."""
        return self.job_share(job.uid)

    # --- event handlers -------------------------------------------------------------------

    def _on_allocate(self, task: TaskInfo) -> None:
        attr = self.job_attrs.get(task.job)
        if attr is None:
            # A job this session has not shared yet (each filtered pod's, after a follow):
            # its share is worked out once, below, not also before the task is added.
            job = self._jobs.get(task.job)
            if job is None:
                return
            attr = self.job_attrs[task.job] = DrfAttr(job.allocated.added_to_zero())
        attr.allocated.add(task.resreq)
        attr.current = False  # (the share is a function of the sum: worked out when read)
        if log.isEnabledFor(_V4):  # every filtered pod's assumption: no call below -v 4
            self._update_share(attr)
            log.log(
                _V4,
                "DRF AllocateFunc: task <%s/%s>, resreq <%r>,  share <%s>",
                task.namespace,
                task.name,
                task.resreq,
                attr.share,
            )

    def _charge_back(self, tasks: Sequence[TaskInfo]) -> None:
        """The open assumptions charged back after a follow: only those of the jobs whose
        record the step forgot. A job's record, once made, holds every open assumption of
        the job (each was charged to it, or the record was made after by a charge-back
        like this one), so a record that was kept already counts them."""
        attrs = self.job_attrs
        forgotten = {task.job for task in tasks if task.job not in attrs}
        for task in tasks:
            if task.job in forgotten:
                self._on_allocate(task)

    def _on_deallocate(self, task: TaskInfo) -> None:
        attr = self._attr(task.job)
        if attr is None:
            return
        attr.allocated.sub_without_assert(task.resreq)
        self._update_share(attr)
        log.log(
            v(4),
            "DRF EvictFunc: task <%s/%s>, resreq <%r>,  share <%s>",
            task.namespace,
            task.name,
            task.resreq,
            attr.share,
        )
