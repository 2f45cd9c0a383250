"""The reclaim action's safety rules for a live cluster, off by default.

Volcano's reclaim evicts a "boundary pod" (one whose queue drops below its deserved share
once it goes), so the next cycle can reclaim it back: an eviction loop
(https://github.com/volcano-sh/volcano/issues/4949). It evicts greedily, lowest value first,
so a node can lose more pods than the preemptor needs, and it may break a gang below its
minMember. ``simulate`` keeps Volcano's behaviour; a loop that really evicts turns these on
through the action's arguments (``configurations: - name: reclaim``):

``reclaim.noBoundaryVictims``
    a task is a victim only if its queue's allocation, less every victim taken from it so
    far, stays at or above its deserved share in every dimension the preemptor asks for;
    and the preemptor's queue may not go above its own deserved share by the placement.
    Together: after a reclaim neither side can reclaim the other's pods back while demands
    stay the same. Both sides compare only the dimensions the queue's deserved names (see
    ``compared_dimensions``): a capacity queue whose ``spec.deserved`` says cpu and memory
    has no opinion on a GPU or on the pod count.
``reclaim.minimalVictims``
    on a node, victims are chosen by the minimal-set search (remove lowest value first until
    the preemptor fits every predicate, then reprieve whoever is not needed), not greedily,
    and then the fewest: a set with fewer victims among all candidates, if a bounded search
    finds one (``victims.FewestVictims``).
``reclaim.keepGangs``
    a victim's job keeps at least minMember running tasks, or every running task of it goes
    (only when all of them sit on the node being freed).
``reclaim.minRuntime``
    a pod that has run for less than its minimum runtime is never a victim. The pod's
    annotation ``kube-queue-extender.io/min-runtime`` wins, then its PodGroup's, then its
    Queue's, then this argument (a duration: "10m", "90s"; default 0).
``reclaim.maxEvictions`` / ``reclaim.maxEvictionsPerQueue``
    at most this many evictions per session, in total and taken from any one queue (0: no
    limit). A job whose evictions would pass the total is left for a later cycle. Evictions
    an earlier action of the session committed (preempt) count against them.

The preempt action reads the rules that make sense inside one queue under its own prefix:
``preempt.keepGangs``, ``preempt.minRuntime``, ``preempt.maxEvictions`` and
``preempt.maxEvictionsPerQueue`` (a preemption moves nothing between queues, so there is no
boundary to keep, and it already stops evicting as soon as the preemptor fits), and one of its
own:

``preempt.equalPriorityOnly``
    only what kube-scheduler never preempts for: a victim's pod priority is at least the
    preemptor's (kube-scheduler evicts lower-priority pods itself, through the extender's
    preempt verb; doing it here too would race it), and a preemptor that fits a node's idle
    capacity evicts nothing (kube-scheduler will place it).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from scheduler_core.api.duration import DurationError, parse_duration
from scheduler_core.api.job import JobInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import IGNORED_SCALARS, MIN_RESOURCE, Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.session import QueueShare, Session
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.actions.reclaim")

NO_BOUNDARY_VICTIMS = "reclaim.noBoundaryVictims"
MINIMAL_VICTIMS = "reclaim.minimalVictims"
KEEP_GANGS = "reclaim.keepGangs"
MIN_RUNTIME = "reclaim.minRuntime"
MAX_EVICTIONS = "reclaim.maxEvictions"
MAX_EVICTIONS_PER_QUEUE = "reclaim.maxEvictionsPerQueue"

PREEMPT_KEEP_GANGS = "preempt.keepGangs"
PREEMPT_MIN_RUNTIME = "preempt.minRuntime"
PREEMPT_MAX_EVICTIONS = "preempt.maxEvictions"
PREEMPT_MAX_EVICTIONS_PER_QUEUE = "preempt.maxEvictionsPerQueue"
PREEMPT_EQUAL_PRIORITY_ONLY = "preempt.equalPriorityOnly"

#: Rounding slack when comparing an allocation with a deserved share (milli-cpu, bytes).
_SLACK = 1e-6


@dataclass(frozen=True, slots=True)
class ReclaimRules:
    no_boundary_victims: bool = False
    minimal_victims: bool = False
    keep_gangs: bool = False
    min_runtime: float = 0.0
    max_evictions: int = 0
    max_evictions_per_queue: int = 0
    equal_priority_only: bool = False

    @classmethod
    def from_arguments(cls, arguments: Arguments) -> ReclaimRules:
        """Raises ``ValueError`` naming the argument when a value cannot be used."""
        return cls._read(arguments, "reclaim")

    @classmethod
    def for_preempt(cls, arguments: Arguments) -> ReclaimRules:
        """The preempt action's rules (``preempt.*``): gangs, minimum runtime and limits."""
        return cls._read(arguments, "preempt")

    @classmethod
    def _read(cls, arguments: Arguments, action: str) -> ReclaimRules:
        raw = arguments.raw()
        runtime_key = f"{action}.minRuntime"
        min_runtime = 0.0
        if raw.get(runtime_key) is not None:
            try:
                min_runtime = parse_duration(str(raw[runtime_key]))
            except DurationError as exc:
                raise ValueError(f"{action} argument {runtime_key}: {exc}") from exc
        limits = []
        for key in (f"{action}.maxEvictions", f"{action}.maxEvictionsPerQueue"):
            value = raw.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{action} argument {key}: {value!r} is not a count >= 0")
            limits.append(value)
        reclaim = action == "reclaim"
        return cls(
            no_boundary_victims=reclaim and arguments.get_bool(NO_BOUNDARY_VICTIMS, False),
            minimal_victims=reclaim and arguments.get_bool(MINIMAL_VICTIMS, False),
            keep_gangs=arguments.get_bool(f"{action}.keepGangs", False),
            min_runtime=min_runtime,
            max_evictions=limits[0],
            max_evictions_per_queue=limits[1],
            equal_priority_only=not reclaim
            and arguments.get_bool(PREEMPT_EQUAL_PRIORITY_ONLY, False),
        )


def reclaimed_dimensions(preemptor: TaskInfo) -> list[str]:
    """What the preemptor asks for, less the pod count (every pod asks for one)."""
    return [n for n in preemptor.init_resreq.resource_names() if n not in IGNORED_SCALARS]


def names_dimension(deserved: Resource, name: str) -> bool:
    """Whether a deserved share says anything about ``name``. Volcano's Resource always has
    cpu and memory, so for those a share below the epsilon says nothing (what its
    ``*_with_relevant_dimensions`` comparisons skip); a scalar is named when its key is
    there, even at zero: a missing scalar is no opinion, a zero one is "deserves none"."""
    if name == "cpu":
        return deserved.milli_cpu >= MIN_RESOURCE
    if name == "memory":
        return deserved.memory >= MIN_RESOURCE
    return deserved.scalars is not None and name in deserved.scalars


def compared_dimensions(share: QueueShare, dims: Sequence[str]) -> list[str]:
    """The dimensions among ``dims`` (what the preemptor asks for) that the queue's deserved
    share names: the only ones the live rules weigh for that queue. Comparing the others
    as if their share were zero would make a queue deserving "cpu: 2, memory: 4Gi" look
    above its share in anything else the preemptor happens to request."""
    return [n for n in dims if n not in IGNORED_SCALARS and names_dimension(share.deserved, n)]


def overused_dimensions(share: QueueShare, dims: list[str]) -> list[str]:
    """The dimensions among ``dims`` that the queue's deserved names and in which it holds
    more than that share: the ones a reclaim takes back (memory a queue holds within its
    share is not reclaimed just because the preemptor also asks for some)."""
    return [
        n
        for n in compared_dimensions(share, dims)
        if share.allocated.get(n) > share.deserved.get(n) + _SLACK
    ]


def lends_beyond_share(share: QueueShare, dims: list[str]) -> bool:
    """Whether the queue may give up something of ``dims`` at all: it is above its deserved
    share in one of them, or its share names none of them (it deserves none of what the
    preemptor asks for, so all it holds there is lent; Volcano's capacity plugin lets such
    a queue be reclaimed whole). Such a queue can never reclaim back: by
    ``within_share`` a placement in it is never within a share that names nothing."""
    return not compared_dimensions(share, dims) or bool(overused_dimensions(share, dims))


def within_share(share: QueueShare, request: Resource, dims: list[str]) -> bool:
    """Whether adding ``request`` keeps the queue at or below its deserved share in every
    dimension of ``dims`` the share names; False when it names none of them (the queue
    deserves none of what is asked, so any placement would put it above its share)."""
    compared = compared_dimensions(share, dims)
    if not compared:
        return False
    return all(
        share.allocated.get(n) + request.get(n) <= share.deserved.get(n) + _SLACK for n in compared
    )


def keeps_share(share: QueueShare, gone: Resource, dims: list[str]) -> bool:
    """Whether the queue, without ``gone``, still holds at least its deserved share in every
    dimension of ``dims`` it is above it in (a queue whose share names none of ``dims``
    deserves none of them: it keeps its share whatever it gives)."""
    if not compared_dimensions(share, dims):
        return True
    over = overused_dimensions(share, dims)
    if not over:
        return False
    return all(share.allocated.get(n) - gone.get(n) >= share.deserved.get(n) - _SLACK for n in over)


def min_runtime_of(
    task: TaskInfo, job: JobInfo | None, queue: QueueInfo | None, default: float
) -> float:
    for value in (
        task.min_runtime,
        job.min_runtime if job else None,
        queue.min_runtime if queue else None,
    ):
        if value is not None:
            return value
    return default


def running_seconds(task: TaskInfo, now: datetime) -> float:
    """Since ``status.startTime``; a pod without one has not started (0)."""
    if not task.start_time:
        return 0.0
    try:
        started = datetime.fromisoformat(task.start_time.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    return max(0.0, (now - started).total_seconds())


class ReclaimGuard:
    """The rules applied within one session: which tasks may be victims at all, how a
    plugin-approved victim list is narrowed, and the eviction budget."""

    def __init__(self, ssn: Session, rules: ReclaimRules, now: datetime | None = None) -> None:
        self.ssn = ssn
        self.rules = rules
        self.now = now or ssn.now or datetime.now(UTC)
        self.committed = 0
        self.committed_per_queue: dict[str, int] = {}
        #: Whether any minimum runtime is set anywhere: checking one costs a date parse per
        #: victim, which a cluster that sets none should not pay.
        self.check_runtime = rules.min_runtime > 0 or min_runtime_set(ssn)
        self._donors: dict[tuple[str, ...], set[str]] = {}
        # The limits are the session's: what an earlier action committed counts.
        self.record([self.queue_of(e.task) for e in ssn.evictions])

    @property
    def narrows(self) -> bool:
        rules = self.rules
        return bool(
            rules.no_boundary_victims
            or rules.keep_gangs
            or rules.max_evictions_per_queue
            or self.check_runtime
        )

    # --- candidates ---------------------------------------------------------------------

    def old_enough(self, task: TaskInfo) -> bool:
        job = self.ssn.jobs.get(task.job)
        queue = self.ssn.queues.get(job.queue) if job is not None else None
        needed = min_runtime_of(task, job, queue, self.rules.min_runtime)
        return needed <= 0 or running_seconds(task, self.now) >= needed

    def queue_of(self, task: TaskInfo) -> str:
        job = self.ssn.jobs.get(task.job)
        return job.queue if job is not None else ""

    def budget_left(self, queue: str, tentative: dict[str, int]) -> bool:
        per_queue = self.rules.max_evictions_per_queue
        if per_queue <= 0:
            return True
        used = self.committed_per_queue.get(queue, 0) + tentative.get(queue, 0)
        return used < per_queue

    def exhausted(self) -> bool:
        return 0 < self.rules.max_evictions <= self.committed

    def over_total(self, more: int) -> bool:
        return 0 < self.rules.max_evictions < self.committed + more

    def record(self, queues: Sequence[str]) -> None:
        self.committed += len(queues)
        for queue in queues:
            self.committed_per_queue[queue] = self.committed_per_queue.get(queue, 0) + 1

    def gangs_kept(self, victims: Sequence[TaskInfo]) -> bool:
        """With ``keepGangs``, every job that lost a task to ``victims`` (already evicted in
        the session) still has minMember ready tasks, or none left at all."""
        if not self.rules.keep_gangs:
            return True
        for job_id in {t.job for t in victims}:
            job = self.ssn.jobs.get(job_id)
            if job is not None and 0 < job.ready_task_num() < job.min_available:
                return False
        return True

    def new_job(self) -> None:
        """Forget the donor sets: another job's statement may have changed the shares."""
        self._donors.clear()

    def donor_queues(self, preemptor: TaskInfo) -> set[str] | None:
        """With no boundary victims, the only queues a victim can come from: above their
        deserved share in a dimension the preemptor asks for, or deserving none of them
        (``lends_beyond_share``). Evictions only
        shrink this set, so it is computed once per job and dimension set (a superset is
        safe: ``narrow`` decides each victim exactly). None: every queue may give."""
        if not self.rules.no_boundary_victims:
            return None
        dims = tuple(reclaimed_dimensions(preemptor))
        donors = self._donors.get(dims)
        if donors is None:
            donors = set()
            for queue in self.ssn.queues.values():
                share = self.ssn.queue_share(queue)
                if share is None:
                    continue
                if lends_beyond_share(share, list(dims)):
                    donors.add(queue.name)
            self._donors[dims] = donors
        return donors

    # --- the preemptor's side -----------------------------------------------------------

    def preemptor_within_share(self, queue: QueueInfo, preemptor: TaskInfo) -> bool:
        """The placement keeps the preemptor's queue at or below its deserved share in the
        dimensions it asks for that the share names (else it would be the next cycle's
        victim); a share naming none of them is never within."""
        if not self.rules.no_boundary_victims:
            return True
        share = self.ssn.queue_share(queue)
        if share is None:
            log.log(
                v(3),
                "Queue <%s> has no deserved share from any fair-share plugin: nothing is "
                "reclaimed for task <%s>",
                queue.name,
                preemptor.key,
            )
            return False
        return within_share(share, preemptor.resreq, reclaimed_dimensions(preemptor))

    def could_go(
        self, victim: TaskInfo, dims: list[str], shares: dict[str, QueueShare | None]
    ) -> bool:
        """A quick, necessary condition for ``victim`` to survive ``narrow`` on its own (old
        enough; its queue keeps its share without it). ``shares`` caches queue shares for
        one search: nothing changes them until an eviction is decided."""
        if not (self.rules.no_boundary_victims or self.check_runtime):
            return True
        job = self.ssn.jobs.get(victim.job)
        if job is None:
            return False
        if self.check_runtime and not self.old_enough(victim):
            return False
        if not self.rules.no_boundary_victims:
            return True
        if job.queue not in shares:
            queue = self.ssn.queues.get(job.queue)
            shares[job.queue] = self.ssn.queue_share(queue) if queue is not None else None
        share = shares[job.queue]
        if share is None:
            return False
        return keeps_share(share, victim.resreq, dims)

    # --- narrowing a victim list --------------------------------------------------------

    def narrow(
        self, preemptor: TaskInfo, victims: list[TaskInfo], tentative: dict[str, int]
    ) -> list[TaskInfo]:
        """Walk ``victims`` in the given order (lowest value first) and keep each one that
        the rules still allow once the ones kept before it are gone."""
        rules = self.rules
        if not self.narrows:
            return victims
        dims = reclaimed_dimensions(preemptor)
        taken_res: dict[str, Resource] = {}
        taken_count: dict[str, int] = dict(tentative)
        taken_in_job: dict[str, int] = {}
        on_node = _count_by_job(victims)
        kept: list[TaskInfo] = []
        for victim in victims:
            job = self.ssn.jobs.get(victim.job)
            if job is None:
                continue
            if self.check_runtime and not self.old_enough(victim):
                continue
            if not self.budget_left(job.queue, taken_count):
                continue
            if rules.no_boundary_victims:
                taken = taken_res.get(job.queue, Resource.empty())
                if not self._stays_at_share(job.queue, taken, victim, dims):
                    continue
            if rules.keep_gangs:
                left = job.ready_task_num() - taken_in_job.get(job.uid, 0) - 1
                # Breaking the gang is allowed only if every running task of it can go here.
                if 0 < left < job.min_available and on_node[job.uid] < job.ready_task_num():
                    continue
            kept.append(victim)
            taken_res.setdefault(job.queue, Resource.empty()).add(victim.resreq)
            taken_count[job.queue] = taken_count.get(job.queue, 0) + 1
            taken_in_job[job.uid] = taken_in_job.get(job.uid, 0) + 1
        return kept

    def _stays_at_share(
        self, queue_name: str, taken: Resource, victim: TaskInfo, dims: list[str]
    ) -> bool:
        """In the dimensions the preemptor asks for and the queue holds beyond its share, the
        queue keeps at least its deserved share without ``victim`` (and ``taken``)."""
        queue = self.ssn.queues.get(queue_name)
        share = self.ssn.queue_share(queue) if queue is not None else None
        if share is None:
            return False
        return keeps_share(share, taken.clone().add(victim.resreq), dims)

    def complete_gangs(
        self,
        preemptor: TaskInfo,
        victims: list[TaskInfo],
        candidates: list[TaskInfo],
        tentative: dict[str, int],
    ) -> list[TaskInfo] | None:
        """``victims`` plus the rest of every gang they would break (from ``candidates``,
        this node's allowed victims); None when a gang cannot go whole within the rules."""
        if not self.rules.keep_gangs:
            return victims
        chosen = {t.uid for t in victims}
        taken = _count_by_job(victims)
        result = list(victims)
        for job_id, count in taken.items():
            job = self.ssn.jobs.get(job_id)
            if job is None:
                return None
            left = job.ready_task_num() - count
            if 0 < left < job.min_available:
                rest = [t for t in candidates if t.job == job_id and t.uid not in chosen]
                if len(rest) != left:
                    return None
                result.extend(rest)
        if len(result) == len(victims):
            return victims
        if len(self.narrow(preemptor, result, tentative)) != len(result):
            return None
        return result


#: The slot of a session's own memos that keeps ``min_runtime_set``'s answer.
_MIN_RUNTIME_SLOT = "reclaim_rules.min-runtime-set"


def min_runtime_set(ssn: Session) -> bool:
    """Whether a queue, job or pod of the session sets a minimum runtime. Asked by each
    evicting action's guard and by the decision, each a walk over every job and pod; a
    session whose jobs no event changes (not read-only) keeps the answer: its statements
    only change a task's status and node, never what it sets."""
    if ssn.read_only:
        return _any_min_runtime(ssn)
    kept: list[bool] = ssn.shared.slot(_MIN_RUNTIME_SLOT, list)
    if not kept:
        kept.append(_any_min_runtime(ssn))
    return kept[0]


def _any_min_runtime(ssn: Session) -> bool:
    if any(q.min_runtime for q in ssn.queues.values()):
        return True
    for job in ssn.jobs.values():
        if job.min_runtime or any(t.min_runtime for t in job.tasks.values()):
            return True
    return False


def _count_by_job(tasks: Sequence[TaskInfo]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for task in tasks:
        counts[task.job] = counts.get(task.job, 0) + 1
    return counts
