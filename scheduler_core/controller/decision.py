"""What one reclaim cycle decides, without Kubernetes: the engine's own actions on a snapshot.

The live loop and the churn simulation call the same function, so what the simulation proves
about evictions is what the loop does. The loop's configuration is the served one with the
reclaim action's safety rules turned on (``live_configuration``); ``simulate`` keeps
Volcano's reclaim.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from scheduler_core.actions.util.reclaim_rules import (
    KEEP_GANGS,
    MAX_EVICTIONS,
    MAX_EVICTIONS_PER_QUEUE,
    MIN_RUNTIME,
    MINIMAL_VICTIMS,
    NO_BOUNDARY_VICTIMS,
    PREEMPT_EQUAL_PRIORITY_ONLY,
    PREEMPT_KEEP_GANGS,
    PREEMPT_MAX_EVICTIONS,
    PREEMPT_MAX_EVICTIONS_PER_QUEUE,
    PREEMPT_MIN_RUNTIME,
    ReclaimRules,
    min_runtime_set,
    overused_dimensions,
    reclaimed_dimensions,
)
from scheduler_core.api.job import JobInfo
from scheduler_core.api.resource import MIN_RESOURCE, Resource
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.cache.list_pager import GC_PAUSE
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.engine import close_session, open_session
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.cannot_help import CANNOT_HELP_REASON, CannotHelp, Kind
from scheduler_core.framework.hooks import ADJUST_WEIGHTS
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.framework.registry import action_builder
from scheduler_core.framework.session import QueueShare, Session
from scheduler_core.framework.status import Status

#: The actions a cycle runs, in this order, when the configuration lists them. Enqueue
#: changes nothing in the cluster; it admits waiting jobs within the session so the others
#: consider them. Preempt is for what kube-scheduler never starts: it preempts only for a
#: pod of higher *pod* priority, so jobs of one queue ordered by their PodGroup's priority
#: (or gang / drf job order) at equal pod priority would never displace each other.
#: Allocate is not run: kube-scheduler binds.
CYCLE_ACTIONS = ("enqueue", "preempt", "reclaim")

#: The reclaim rules that also apply inside one queue, under the preempt action's prefix.
_PREEMPT_RULES = {KEEP_GANGS: PREEMPT_KEEP_GANGS, MIN_RUNTIME: PREEMPT_MIN_RUNTIME}

#: What the live loop turns on unless the configuration sets it explicitly.
LIVE_RULES: dict[str, Any] = {
    NO_BOUNDARY_VICTIMS: True,
    MINIMAL_VICTIMS: True,
    KEEP_GANGS: True,
}


def live_configuration(
    conf: SchedulerConfiguration, *, max_evictions: int = 0, max_evictions_per_queue: int = 0
) -> SchedulerConfiguration:
    """``conf`` with the reclaim safety rules on (explicit arguments in ``conf`` win) and the
    loop's eviction limits; raises ``ValueError`` when an argument cannot be used.

    Preempt gets the rules that apply inside a queue: gangs kept, the reclaim minimum
    runtime unless ``preempt.minRuntime`` is set, the same limits (one budget for the
    whole cycle: the actions share the session's count), and only what kube-scheduler never
    preempts for (``preempt.equalPriorityOnly``)."""
    arguments = {**LIVE_RULES, **conf.action_arguments("reclaim")}
    if max_evictions:
        arguments[MAX_EVICTIONS] = max_evictions
    if max_evictions_per_queue:
        arguments[MAX_EVICTIONS_PER_QUEUE] = max_evictions_per_queue
    ReclaimRules.from_arguments(Arguments(arguments))
    configurations = {**conf.configurations, "reclaim": arguments}
    if "preempt" in conf.actions:
        preempt: dict[str, Any] = {
            target: arguments[source]
            for source, target in _PREEMPT_RULES.items()
            if source in arguments
        }
        preempt[PREEMPT_EQUAL_PRIORITY_ONLY] = True
        for source, target in (
            (MAX_EVICTIONS, PREEMPT_MAX_EVICTIONS),
            (MAX_EVICTIONS_PER_QUEUE, PREEMPT_MAX_EVICTIONS_PER_QUEUE),
        ):
            if arguments.get(source):
                preempt[target] = arguments[source]
        preempt.update(conf.action_arguments("preempt"))
        ReclaimRules.for_preempt(Arguments(preempt))
        configurations["preempt"] = preempt
    return replace(conf, configurations=configurations)


def cycle_actions(conf: SchedulerConfiguration) -> list[str]:
    return [name for name in CYCLE_ACTIONS if name in conf.actions]


@dataclass(frozen=True, slots=True)
class PlannedEviction:
    """One committed eviction and why, in words a person can check."""

    victim: TaskInfo
    victim_queue: str
    node: str
    action: str  # "reclaim" or "preempt"
    preemptor: TaskInfo | None
    preemptor_job: JobInfo | None
    preemptor_queue: str
    preemptor_node: str
    rule: str


@dataclass(slots=True)
class CycleDecision:
    evictions: list[PlannedEviction] = field(default_factory=list)
    #: action -> milliseconds it took
    latency_ms: dict[str, float] = field(default_factory=dict)
    #: every queue's allocation and deserved share as the cycle began
    shares: dict[str, QueueShare | None] = field(default_factory=dict)
    #: Whether the same cluster could be decided otherwise later: a minimum runtime is set
    #: somewhere, and a pod it protects now may have run long enough by then.
    time_sensitive: bool = False
    #: Waiting pods the actions considered and did not evict for because the engine cannot
    #: judge where they fit (pod key -> the pod and why), in the order they were met.
    not_evaluable: dict[str, tuple[TaskInfo, Status]] = field(default_factory=dict)
    #: Gangs with a network topology request that nothing was evicted for because no single
    #: domain could hold the whole gang even with the victims the queue rules allow (job
    #: uid -> its waiting members and the sentence that says so).
    no_domain: dict[str, tuple[tuple[TaskInfo, ...], str]] = field(default_factory=dict)
    #: Waiting pods the actions found no victims for and that no eviction at all could
    #: help (pod key -> the pod and what is missing), in the order they were met.
    cannot_help: dict[str, tuple[TaskInfo, CannotHelp]] = field(default_factory=dict)

    def unhelped(self) -> list[Unhelped]:
        """Every waiting pod the cycle evicted nothing for with a reason to tell it, and
        that reason: one list, so the loop writes them one way and each pod hears one."""
        told = [
            Unhelped(
                task,
                NOT_EVALUABLE_REASON,
                "not evicting for this pod: the scheduler extender cannot judge where it "
                f"fits ({err.plugin}): {'; '.join(err.reasons)}",
            )
            for task, err in self.not_evaluable.values()
        ]
        told += [
            Unhelped(task, CANNOT_HELP_REASON, verdict.note)
            for key, (task, verdict) in self.cannot_help.items()
            if key not in self.not_evaluable
        ]
        return told


#: The event reason on a waiting pod the loop does not evict for because it cannot judge it.
NOT_EVALUABLE_REASON = "NotEvaluable"


@dataclass(frozen=True, slots=True)
class Unhelped:
    """A waiting pod the cycle did not evict for, and the event that says why: its reason
    (``NotEvaluable``: the engine cannot judge it; ``ReclaimCannotHelp``: no eviction could
    make it fit) and note."""

    task: TaskInfo
    reason: str
    note: str


def decide(
    snapshot: ClusterSnapshot,
    conf: SchedulerConfiguration,
    *,
    clone: bool = False,
    memos: SessionMemos | None = None,
    now: datetime | None = None,
) -> CycleDecision:
    """Run the configuration's evicting actions on ``snapshot`` (its jobs and nodes changed
    in place unless ``clone``) and return the committed evictions, each with its rule.
    ``now`` is the time minimum runtimes are judged at (the local clock when None).

    The session copies a task before changing it, so ``snapshot`` may share its task objects
    with the live cache (``snapshot.sharing_tasks``): they are never changed here.

    The cyclic collector is paused meanwhile (``GC_PAUSE``): a cycle over ten thousand
    waiting jobs allocates hundreds of thousands of objects that live as long as it does,
    and with the collector on they set off several full collections over all of them, a
    third of the cycle, to find next to no garbage. The session is released as it closes
    (``Session.release``), so nothing of it waits for a collection: a caller that holds the
    pause from its copy of the cluster until it drops the copy (the loop) leaves the
    collector nothing of the cycle to walk."""
    with GC_PAUSE.paused():
        return _decide(snapshot, conf, clone=clone, memos=memos, now=now)


def _decide(
    snapshot: ClusterSnapshot,
    conf: SchedulerConfiguration,
    *,
    clone: bool,
    memos: SessionMemos | None,
    now: datetime | None,
) -> CycleDecision:
    ssn = open_session(snapshot, conf, clone=clone, shared_tasks=True, memos=memos)
    ssn.now = now
    result = CycleDecision()
    try:
        before = result.shares = {name: ssn.queue_share(q) for name, q in ssn.queues.items()}
        # Past usage fades with time: the same cluster may be decided otherwise later.
        result.time_sensitive = bool(ssn.hook_fns(ADJUST_WEIGHTS)) or _min_runtime_anywhere(
            ssn, conf
        )
        for name in cycle_actions(conf):
            builder = action_builder(name)
            if builder is None:
                continue
            action = builder()
            action.initialize(Arguments(conf.action_arguments(name)))
            started = time.perf_counter()
            action.execute(ssn)
            result.latency_ms[name] = (time.perf_counter() - started) * 1e3
        result.not_evaluable = dict(ssn.not_evaluable)
        result.no_domain = dict(ssn.no_domain)
        result.cannot_help = dict(ssn.cannot_help)
        for members, sentence in result.no_domain.values():
            # A topology gang no single domain can hold after reclaim is told like any other
            # pod no eviction can help, under the same reason, its kind saying why.
            for member in members:
                result.cannot_help.setdefault(
                    member.key, (member, CannotHelp(Kind.TOPOLOGY, sentence))
                )
        for eviction in ssn.evictions:
            result.evictions.append(
                _planned(
                    ssn, eviction.task, eviction.node, eviction.reason, eviction.preemptor, before
                )
            )
    finally:
        close_session(ssn, update_phases=False)
        ssn.release()
    return result


def _min_runtime_anywhere(ssn: Session, conf: SchedulerConfiguration) -> bool:
    for action in ("reclaim", "preempt"):
        if action in conf.actions:
            rules = (
                ReclaimRules.from_arguments if action == "reclaim" else ReclaimRules.for_preempt
            )(Arguments(conf.action_arguments(action)))
            if rules.min_runtime > 0:
                return True
    return min_runtime_set(ssn)


def _planned(
    ssn: Session,
    victim: TaskInfo,
    node: str,
    action: str,
    preemptor: TaskInfo | None,
    before: dict[str, QueueShare | None],
) -> PlannedEviction:
    victim_job = ssn.jobs.get(victim.job)
    victim_queue = victim_job.queue if victim_job is not None else ""
    preemptor_job = ssn.jobs.get(preemptor.job) if preemptor is not None else None
    if preemptor is not None and preemptor_job is not None:
        # The session's own copy, placed where it was pipelined (an eviction may name the
        # shared object it was asked for before the statement copied it).
        preemptor = preemptor_job.tasks.get(preemptor.uid, preemptor)
    preemptor_queue = preemptor_job.queue if preemptor_job is not None else ""
    who = (
        f"{preemptor.key} of queue {preemptor_queue}" if preemptor is not None else "a waiting pod"
    )
    dims = reclaimed_dimensions(preemptor) if preemptor is not None else ["cpu"]
    share = before.get(victim_queue)
    over = overused_dimensions(share, dims) if share is not None else []
    if action == "reclaim" and share is not None and over:
        dims = over
        rule = (
            f"queue {victim_queue} is overused (allocated {format_dims(share.allocated, dims)} > "
            f"deserved {format_dims(share.deserved, dims)}{_moved(share, dims)}); "
            f"reclaimed for {who}"
        )
    elif action == "reclaim":
        rule = f"queue {victim_queue} lends beyond its share; reclaimed for {who}"
    else:
        rule = f"preempted within queue {victim_queue} for {who}, which is more important"
    return PlannedEviction(
        victim=victim,
        victim_queue=victim_queue,
        node=node,
        action=action,
        preemptor=preemptor,
        preemptor_job=preemptor_job,
        preemptor_queue=preemptor_queue,
        preemptor_node=preemptor.node_name if preemptor is not None else "",
        rule=rule,
    )


def _moved(share: QueueShare, dims: list[str]) -> str:
    """`` (weighted 8, reduced by its usage over the last 7d (half-life))`` when the queue's
    past usage moved its deserved share on these dimensions; else nothing."""
    weighted = share.weighted
    if weighted is None:
        return ""
    lower = any(share.deserved.get(d) < weighted.get(d) - MIN_RESOURCE for d in dims)
    higher = any(share.deserved.get(d) > weighted.get(d) + MIN_RESOURCE for d in dims)
    if not lower and not higher:
        return ""
    how = "reduced" if lower else "raised"
    return f" (weighted {format_dims(weighted, dims)}, {how} by {share.moved_by})"


def format_dims(resource: Resource, dims: list[str]) -> str:
    """``cpu 6, memory 12Gi``: cores and GiB as people write them."""
    parts = []
    for name in dims:
        amount = resource.get(name)
        if name == "cpu":
            parts.append(f"cpu {amount / 1000:g}")
        elif name == "memory":
            parts.append(f"memory {amount / 2**30:.3g}Gi")
        else:
            parts.append(f"{name} {amount / 1000:g}")
    return ", ".join(parts) or "nothing"
