"""One status write-back pass: every PodGroup's next phase and facts and every Queue's
allocation, derived together from one view of the cluster.

The phases feed each other, so they are worked out in the order Volcano's own cycle reaches
them. First, every job whose placed members reach its minMember is Running, as the session
that bound them would have marked it; its reservation then counts in its queue as Volcano
counts a Running job's. Then the enqueue action runs once over the Pending jobs, in queue and
job order, each admission reserving its minResources before the next job is asked: two jobs
can no longer both be admitted to the same room because each was asked alone. Admission also
asks that the job's minResources fit its queue's real capability alongside what the queue
holds and has reserved, without the credit Volcano's check gives for running jobs' elastic
part: kube-scheduler places a pod only where its queue can take it, and the reclaim loop
frees room inside a queue only for a more important job, so a PodGroup admitted on that
credit would sit ``Inqueue`` with no pod able to start.

The pass works on its own copies of the jobs whose phase it moves; the cluster's objects are
never changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from scheduler_core.actions.enqueue import Enqueue
from scheduler_core.api.job import NATIVE_SOURCE, JobInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import PodGroupPhase, TaskStatus
from scheduler_core.cache.convert import NATIVE_JOB_PREFIX
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.engine import close_session, open_session
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v
from scheduler_core.report import queue_attrs

from .podgroup_status import (
    INQUEUE,
    NOT_ENOUGH_RESOURCES,
    NOT_ENOUGH_TASKS,
    PENDING,
    Hold,
    PodGroupFacts,
    next_phase,
)

log = logging.getLogger(__name__)

#: What the engine says holds one pending task: (rule code, sentence), or None.
HoldReason = Callable[[Session, JobInfo, TaskInfo], "tuple[str, str] | None"]
#: The network domain a topology gang lands in, as its PodGroup carries it, or None.
DomainOf = Callable[[Session, JobInfo], "str | None"]

#: The filter's rule codes as Volcano condition reasons.
RULE_REASONS: dict[str, str] = {
    "gang-invalid": NOT_ENOUGH_TASKS,
    "queue-capability": NOT_ENOUGH_RESOURCES,
    "queue-overused": NOT_ENOUGH_RESOURCES,
    "gang-unsatisfiable": NOT_ENOUGH_RESOURCES,
    "topology-no-domain": NOT_ENOUGH_RESOURCES,
    "queue-closed": "QueueClosed",
    "queue-missing": "QueueMissing",
}


@dataclass(frozen=True, slots=True)
class GroupStatus:
    """One PodGroup as the pass sees it: the phase it had (as last written, else as read),
    the facts of this cycle and the pods a queue or gang rule holds."""

    namespace: str
    name: str
    queue: str
    known_phase: str
    facts: PodGroupFacts
    held_pods: tuple[tuple[str, str, str, str], ...]  # (namespace, name, uid, rule code)
    #: A Kubernetes PodGroup: told about with events only, its status is kube-scheduler's.
    native: bool = False

    @property
    def key(self) -> str:
        prefix = NATIVE_JOB_PREFIX if self.native else ""
        return f"{self.namespace}/{prefix}{self.name}"

    @property
    def phase(self) -> str:
        """The phase this cycle gives it."""
        return next_phase(self.known_phase, self.facts)


@dataclass(frozen=True, slots=True)
class QueueStatus:
    name: str
    allocated: Resource


@dataclass(frozen=True, slots=True)
class StatusPass:
    groups: list[GroupStatus]
    queues: list[QueueStatus]


def job_key(job: JobInfo) -> str:
    return f"{job.namespace}/{job.name}"


def nothing_to_write(snapshot: ClusterSnapshot) -> bool:
    """No PodGroup and no Queue object: plain pods' groups of one are never written, so a
    pass over them (a copy of every job, a session) would be made for nothing."""
    return not any(
        _written(job) or job.source == NATIVE_SOURCE for job in snapshot.jobs.values()
    ) and all(queue.implicit for queue in snapshot.queues.values())


def _written(job: JobInfo) -> bool:
    """Whether the pass writes the job's PodGroup: a Volcano one. A lone pod's group of one
    has no object, and a Kubernetes PodGroup's status is kube-scheduler's own."""
    return not job.synthesized and job.source != NATIVE_SOURCE


def derive(
    snapshot: ClusterSnapshot,
    conf: SchedulerConfiguration,
    known: Mapping[str, str],
    hold_reason: HoldReason,
    *,
    managed: Iterable[str] = ("queue-scheduler",),
    namespaces: Iterable[str] = (),
    memos: SessionMemos | None = None,
    domain_of: DomainOf | None = None,
) -> StatusPass:
    """The pass over ``snapshot`` (its job map and usage sums are changed in place: give it
    one of its own, as ``sharing_tasks`` makes; the job objects are replaced, never changed,
    and the tasks are shared with the cache, so the session is opened with shared tasks).
    ``known`` is the phase of each PodGroup (``namespace/name``) as last written, where the
    snapshot may not show it yet; ``domain_of`` gives a topology gang's network domain."""
    managed = frozenset(managed)
    namespaces = frozenset(namespaces)
    if nothing_to_write(snapshot):
        return StatusPass([], [])
    before: dict[str, str] = {}
    for job in list(snapshot.jobs.values()):
        phase = known.get(job_key(job), job.phase.value) if _written(job) else job.phase
        before[job.uid] = str(phase)
        engine_phase = _engine_phase(job, str(phase))
        if engine_phase != job.phase or engine_phase == PodGroupPhase.PENDING:
            own = job.copy_sharing_tasks()
            own.phase = engine_phase
            snapshot.put_job(own)
    ssn = open_session(snapshot, conf, clone=False, shared_tasks=True, memos=memos)
    try:
        if any(_written(job) and job.phase == PodGroupPhase.PENDING for job in ssn.jobs.values()):
            # Enqueue moves only Pending jobs, and only a PodGroup's phase is written: with
            # none Pending its outcome is read by no one (it changes no allocation), so the
            # pass skips it rather than ordering every plain pod's group of one.
            Enqueue(also=fits_alongside).execute(ssn)
        allocated: dict[str, Resource] = {}
        for job in ssn.jobs.values():
            allocated.setdefault(job.queue, Resource.empty()).add(job.allocated)
        queues = [
            QueueStatus(name, allocated.get(name) or Resource.empty())
            for name, queue in sorted(ssn.queues.items())
            if not queue.implicit
        ]
        groups = [
            _group(ssn, job, before[job.uid], hold_reason, managed, domain_of)
            for job in ssn.jobs.values()
            if (_written(job) or job.source == NATIVE_SOURCE)
            and (not namespaces or job.namespace in namespaces)
        ]
    finally:
        close_session(ssn, update_phases=False)
    return StatusPass(groups, queues)


def _engine_phase(job: JobInfo, phase: str) -> PodGroupPhase:
    """The phase the session should see: Running once the placed members reach minMember
    (as the session that placed them would have set it), else the known one."""
    scheduled = job.scheduled_task_num() + job.releasing_scheduled_task_num()
    if phase in (PENDING, INQUEUE) and scheduled > 0 and scheduled >= job.min_available:
        return PodGroupPhase.RUNNING
    try:
        return PodGroupPhase(phase)
    except ValueError:
        return PodGroupPhase.PENDING


def fits_alongside(ssn: Session, job: JobInfo) -> bool:
    """The job's minResources fit its queue's (and, in a hierarchy, every ancestor's) real
    capability alongside what the queue holds and has reserved for admitted jobs, in the
    dimensions minResources names; no credit for the queue's elastic part."""
    if job.min_resources is None:
        return True
    attrs = queue_attrs(ssn)
    attr = attrs.get(job.queue)
    if attr is None:
        return True
    wanted = job.get_min_resources()
    for name in [attr.name, *reversed(attr.ancestors)]:
        level = attrs.get(name)
        if level is None:
            continue
        total = wanted.clone().add(level.allocated).add(level.inqueue)
        fits, short = total.less_equal_with_dimension_and_resources_name(
            level.real_capability, wanted
        )
        if not fits:
            log.log(
                v(3),
                "PodGroup <%s> stays Pending: queue <%s> cannot hold its minResources <%s> "
                "alongside what it holds <%s> and reserves <%s> (real capability <%s>, short "
                "of %s)",
                job_key(job),
                name,
                wanted,
                level.allocated,
                level.inqueue,
                level.real_capability,
                ", ".join(short),
            )
            return False
    return True


def _group(
    ssn: Session,
    job: JobInfo,
    phase: str,
    hold_reason: HoldReason,
    managed: frozenset[str],
    domain_of: DomainOf | None = None,
) -> GroupStatus:
    queue = ssn.queues.get(job.queue)
    held: list[tuple[str, str, str, str]] = []
    hold: Hold | None = None
    ready = job.is_ready()
    invalid = ssn.job_valid(job)
    if not ready:
        if invalid is not None:
            hold = Hold(
                invalid.reason_code or NOT_ENOUGH_TASKS, invalid.message or invalid.reason_code
            )
        else:
            pending = sorted(job.tasks_with(TaskStatus.PENDING), key=lambda t: t.name)
            for task in pending:
                found = hold_reason(ssn, job, task)
                if found is None:
                    continue
                code, sentence = found
                if hold is None:
                    unready = max(0, job.min_available - job.ready_task_num())
                    hold = Hold(
                        RULE_REASONS.get(code, NOT_ENOUGH_RESOURCES),
                        f"{unready}/{len(job.tasks)} tasks in gang unschedulable: {sentence}",
                    )
                if task.scheduler_name in managed:
                    held.append((task.namespace, task.name, task.uid, code))
    # Admitted by this pass's enqueue (which only moves Pending jobs), into an open queue.
    admitted = (
        queue is not None
        and queue.is_open()
        and invalid is None
        and job.phase == PodGroupPhase.INQUEUE
    )
    facts = PodGroupFacts(
        min_member=job.min_available,
        scheduled=job.scheduled_task_num() + job.releasing_scheduled_task_num(),
        running=len(job.status_index.get(TaskStatus.RUNNING, {})),
        succeeded=len(job.status_index.get(TaskStatus.SUCCEEDED, {})),
        failed=len(job.status_index.get(TaskStatus.FAILED, {})),
        ready=ready,
        admitted=admitted,
        hold=hold,
        domain=(
            domain_of(ssn, job)
            if domain_of is not None and job.network_topology is not None
            else None
        ),
    )
    return GroupStatus(
        job.namespace,
        job.name,
        job.queue,
        phase,
        facts,
        tuple(held),
        native=job.source == NATIVE_SOURCE,
    )
