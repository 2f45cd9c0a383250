"""Why the engine holds a pod back, said without a request: for the status write-back.

kube-scheduler relays the filter verb's reasons only when it calls filter; when every node is
already full it never does, and the preempt answer carries no text at all. These functions
give the same sentences for a pending task of the cache (a held gang) and for the victims
kube-scheduler proposed that the preempt verb refused, so they can be written as events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler_core.accounting.grants import Grant
from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.display import dims
from scheduler_core.api.job import JobInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.extender.context import PodContext
from scheduler_core.extender.filter_verb import check_pod
from scheduler_core.extender.preempt_verb import gangs_broken
from scheduler_core.framework.cannot_help import CANNOT_HELP_REASON, judge
from scheduler_core.framework.session import Session
from scheduler_core.plugins.fairshare.attrs import QueueAttr
from scheduler_core.report import queue_attrs


@dataclass(slots=True)
class _TaskContext:
    """A cached pending task seen the way ``check_pod`` sees a requesting pod."""

    acct: QueueAccounting
    ssn: Session
    job: JobInfo
    task: TaskInfo
    #: (The cache's task keeps no group annotation: a pod naming two groups is filter's.)
    two_groups: str = ""

    @property
    def job_id(self) -> str:
        return self.job.uid

    @property
    def queue_name(self) -> str:
        return self.job.queue

    @property
    def queue(self) -> QueueInfo | None:
        return self.ssn.queues.get(self.job.queue)


def hold_reason(
    acct: QueueAccounting, ssn: Session, job: JobInfo, task: TaskInfo
) -> tuple[str, str] | None:
    """(rule code, sentence) of the filter rule holding ``task``, or None if none does."""
    rejection = check_pod(_TaskContext(acct, ssn, job, task), keep_choice=False)
    return None if rejection is None else (rejection.reason_code, rejection.message)


@dataclass(frozen=True, slots=True)
class Refusal:
    """A victim kube-scheduler proposed that the queue rules protect, or a preemptor asking
    again while its earlier victims go: the event's reason (``NotReclaimable``,
    ``QueueNotOverused``, ``GangProtected``, ``PreemptionInProgress``, ...) and its
    sentence."""

    reason: str
    message: str


def preempt_refusals(
    acct: QueueAccounting,
    pod: dict[str, Any],
    candidates: dict[str, list[str]],
    chosen: dict[str, Any],
) -> list[Refusal]:
    """Why the proposed victims on the candidate nodes the verb left out (or answered with
    other victims) were refused, one entry per distinct reason; when the verb chose no
    victims anywhere and no eviction at all could place the pod, that first (the reclaim
    loop's ``ReclaimCannotHelp``, in the same words)."""
    ctx = PodContext(acct, pod)
    ssn, job = ctx.ssn, ctx.job
    if job is None or ctx.queue is None:
        return []
    own = acct.grants.held_by(ctx.task.key)
    if own and not chosen:
        # Asked again while victims handed out before are on their way out (a first call
        # that hands out none records no grant): no rule protects the others.
        return [_in_progress(own)]
    preemptor = job.tasks.get(ctx.task.uid, ctx.task)
    attrs = queue_attrs(ssn)
    found: dict[tuple[str, str], Refusal] = {}
    if not chosen:
        unaided = judge(ssn, job, preemptor)
        if unaided is not None:
            found[(CANNOT_HELP_REASON, unaided.note)] = Refusal(CANNOT_HELP_REASON, unaided.note)
    for node_name, proposed in candidates.items():
        node = ssn.nodes.get(node_name)
        kept = set(chosen[node_name].uids) if node_name in chosen else set()
        if node is None:
            continue
        for uid in proposed:
            victim = node.tasks.get(uid)
            if victim is None or uid in kept:
                continue
            refusal = _why_protected(ssn, attrs, preemptor, job, ctx.queue, victim)
            if refusal is not None:
                found.setdefault((refusal.reason, refusal.message), refusal)
    return list(found.values())


#: The event reason for a preemptor that asked again while its earlier victims go.
IN_PROGRESS_REASON = "PreemptionInProgress"


def _in_progress(own: Mapping[str, Grant]) -> Refusal:
    nodes = ", ".join(
        f"{node} ({len(grant.victims)} victim{'s' if len(grant.victims) != 1 else ''})"
        for node, grant in sorted(own.items())
    )
    return Refusal(
        IN_PROGRESS_REASON,
        f"victims chosen for this pod earlier are being evicted on {nodes}: no victims "
        "elsewhere until kube-scheduler's choice shows (the pod binds, or the grant ends "
        "after --assume-ttl)",
    )


def _why_protected(
    ssn: Session,
    attrs: Mapping[str, QueueAttr],
    preemptor: TaskInfo,
    job: JobInfo,
    queue: QueueInfo,
    victim: TaskInfo,
) -> Refusal | None:
    victim_job = ssn.jobs.get(victim.job)
    if victim_job is None:
        return None
    victim_queue = ssn.queues.get(victim_job.queue)
    if victim_queue is None:
        return None
    if victim_queue.name != queue.name:
        if ssn.overused(queue):
            attr = attrs.get(queue.name)
            numbers = (
                f" (allocated {dims(attr.allocated, skip_zero=True)} >= deserved "
                f"{dims(attr.deserved, skip_zero=True)})"
                if attr is not None
                else ""
            )
            return Refusal(
                "QueueOverused",
                f"queue {queue.name} of this pod is overused{numbers}: it may not reclaim "
                f"from queue {victim_queue.name}",
            )
        if not victim_queue.reclaimable():
            return Refusal(
                "NotReclaimable",
                f"queue {victim_queue.name} is not reclaimable: its pod {victim.key} is not "
                f"evicted for queue {queue.name}",
            )
        if not ssn.reclaimable(preemptor, [victim]):
            attr = attrs.get(victim_queue.name)
            if attr is not None and not ssn.overused(victim_queue):
                return Refusal(
                    "QueueNotOverused",
                    f"queue {victim_queue.name} is not overused (allocated "
                    f"{dims(attr.allocated, skip_zero=True)}, deserved "
                    f"{dims(attr.deserved, skip_zero=True)}): its pod "
                    f"{victim.key} is not reclaimed for queue {queue.name}",
                )
            return Refusal(
                "NotReclaimable",
                f"the queue rules keep pod {victim.key} of queue {victim_queue.name} from "
                f"being reclaimed for queue {queue.name}",
            )
    elif not ssn.preemptable(preemptor, [victim]):
        return Refusal(
            "NotPreemptable",
            f"pod {victim.key} of queue {queue.name} may not be preempted by this pod "
            "(priority or volcano.sh/preemptable)",
        )
    if gangs_broken(ssn, [victim]):
        return Refusal(
            "GangProtected",
            f"evicting {victim.key} would leave gang {victim_job.uid} below its minMember "
            f"{victim_job.min_available}",
        )
    return None
