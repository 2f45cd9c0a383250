"""What would happen if these objects were submitted: a dry-run scheduling session over a
private copy of the live state.

The copy (``ClusterState.fork``) takes the added pods, PodGroups and queues through the same
code as the live cache, and the session runs the configured actions exactly as ``simulate``
does; so a what-if on the live state and a ``simulate`` of the same cluster plus the same
objects decide the same. The live state, the accounting session and its assumed pods are
only read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.types import TaskStatus
from scheduler_core.cache.convert import ConversionError, resource_list
from scheduler_core.cache.objects import ClusterObjects, collect
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.engine import close_session, open_session, run_actions
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.framework.session import Session
from scheduler_core.framework.topology_fit import choose_domain
from scheduler_core.insight.amounts import Amounts, amounts
from scheduler_core.insight.described import described
from scheduler_core.insight.domains import DomainView, domain_view
from scheduler_core.insight.queues import QueueView, queue_views
from scheduler_core.report import queue_attrs

#: The kinds a what-if may add; anything else is refused rather than silently ignored.
WHATIF_KINDS = ("Pod", "PodGroup", "Queue")
MAX_OBJECTS = 500
MAX_REMOVALS = 500
MAX_QUEUE_CHANGES = 100
#: The most work one what-if may do: pending tasks its session schedules times the nodes it
#: weighs each against (the allocate action's predicate loop), so a request's cost is bounded
#: whatever the cluster's size or the scope asked for. 500 pods on 5,000 nodes fit.
MAX_WORK = 2_500_000
#: Schedule only the submitted jobs (the question "what if I submit this"), or run the
#: whole session, every pending job of the cluster included (what ``simulate`` does).
SCOPES = ("submitted", "all")


class WhatIfError(ValueError):
    """The request cannot be answered as given: a sentence naming what is wrong."""


@dataclass(slots=True)
class QueueChange:
    name: str
    weight: int | None = None
    capability: Mapping[str, Any] | None = None


@dataclass(slots=True)
class WhatIfRequest:
    add: Sequence[Mapping[str, Any]] = field(default_factory=list)
    remove: Sequence[str] = field(default_factory=list)
    queues: list[QueueChange] = field(default_factory=list)
    scope: str = "submitted"


@dataclass(slots=True)
class Placement:
    pod: str
    node: str
    added: bool
    pipelined: bool


@dataclass(slots=True)
class EvictionView:
    pod: str
    node: str
    queue: str | None
    action: str
    preemptor: str | None
    reason: str


@dataclass(slots=True)
class QueueFigures:
    deserved: Amounts | None
    allocated: Amounts | None
    share: float
    overused: bool


@dataclass(slots=True)
class QueueChangeView:
    name: str
    before: QueueFigures | None
    after: QueueFigures | None


@dataclass(slots=True)
class WhatIfResult:
    actions: list[str]
    placed: list[Placement]
    evicted: list[EvictionView]
    unplaced: list[str]
    queues: list[QueueChangeView]
    #: Chosen as the filter verb would choose it before the actions ran.
    domains: list[DomainView] = field(
        default_factory=list,
        metadata=described("the network domain of each submitted gang that asks for one"),
    )


@dataclass(slots=True)
class PreparedWhatIf:
    """The private copy with the request applied, and the live figures to compare with:
    made under the live state's lock, then run without it (see ``run_prepared``)."""

    fork: ClusterState
    conf: SchedulerConfiguration
    added: set[str]
    before: dict[str, QueueView]
    #: The jobs the session may schedule; None: all of them (scope "all").
    schedulable: frozenset[str] | None
    #: The accounting's memos: the dry run's cluster is nearly the accounting's.
    memos: SessionMemos
    max_work: int = MAX_WORK
    #: Pods filter has let through and kube-scheduler has not bound yet, as (job, task uid):
    #: the live figures count them in their queues, so the dry run holds them too.
    assumed: list[tuple[str, str]] = field(default_factory=list)


def what_if(
    acct: QueueAccounting, conf: SchedulerConfiguration, request: WhatIfRequest
) -> WhatIfResult:
    """Raises ``WhatIfError`` for a request it cannot apply or that would take more than
    ``MAX_WORK`` (nothing is changed then)."""
    return run_prepared(prepare(acct, conf, request))


def prepare(
    acct: QueueAccounting, conf: SchedulerConfiguration, request: WhatIfRequest
) -> PreparedWhatIf:
    """Everything that reads the live state and the accounting: call it where the verbs
    run (they change both). Raises ``WhatIfError``."""
    _check_sizes(request)
    objects = _collect(request.add)
    fork = acct.state.fork()
    queues: dict[str, QueueInfo] = fork.queues()
    for queue in objects.queues:
        queues[queue.name] = queue
    for change in request.queues:
        objects.queues.append(_changed_queue(queues, change))
    for key in request.remove:
        if fork.task(key) is None:
            raise WhatIfError(f"cannot remove pod {key}: the extender's cache does not hold it")
    fork.apply_objects(objects)
    for key in request.remove:
        fork.delete("Pod", key)
    added = {_pod_key(pod) for pod in objects.pods}
    before = {v.name: v for v in queue_views(acct)}
    schedulable = None if request.scope == "all" else _submitted_jobs(fork, objects, added)
    assumed = [(a.task.job, a.task.uid) for a in acct.assumed.values()]
    return PreparedWhatIf(fork, conf, added, before, schedulable, acct.memos, assumed=assumed)


def run_prepared(prepared: PreparedWhatIf) -> WhatIfResult:
    """The dry-run session; touches only the private copy, so it may run on another thread
    while the verbs go on."""
    ssn = open_session(
        prepared.fork.shared_snapshot(),
        prepared.conf,
        clone=False,
        shared_tasks=True,
        memos=prepared.memos,
    )
    ssn.schedulable = prepared.schedulable
    _hold_assumed(ssn, prepared.assumed)
    work = _work(ssn)
    if work > prepared.max_work:
        close_session(ssn, update_phases=False)
        raise WhatIfError(
            f"too much work: {work} (pending pods x nodes; at most {prepared.max_work}); "
            "submit fewer pods or use scope 'submitted'"
        )
    domains = _domains(ssn)
    run_actions(ssn)
    close_session(ssn)
    placed = _placements(ssn, prepared.added)
    return WhatIfResult(
        actions=list(prepared.conf.actions),
        placed=placed,
        evicted=_evictions(ssn),
        unplaced=sorted(prepared.added - {p.pod for p in placed}),
        queues=_queue_changes(ssn, prepared.before),
        domains=domains,
    )


def _domains(ssn: Session) -> list[DomainView]:
    """The domain of every gang the dry run may schedule that asks for one, by job."""
    views: list[DomainView] = []
    for uid, job in sorted(ssn.jobs.items()):
        if job.network_topology is None or (
            ssn.schedulable is not None and uid not in ssn.schedulable
        ):
            continue
        if not job.tasks_with(TaskStatus.PENDING):
            continue
        view = domain_view(ssn, job, choose_domain(ssn, job))
        if view is not None:
            views.append(view)
    return views


def _work(ssn: Session) -> int:
    """Pending tasks the session may schedule, times its nodes."""
    pending = sum(
        1
        for uid, job in ssn.jobs.items()
        if ssn.schedulable is None or uid in ssn.schedulable
        for task in job.tasks.values()
        if task.status == TaskStatus.PENDING
    )
    return pending * len(ssn.nodes)


def _hold_assumed(ssn: Session, assumed: Sequence[tuple[str, str]]) -> None:
    """Give each assumed pod the fork still has pending its place, as the live accounting
    does: charged to its queue (so "before" and "after" count the same pods), present for its
    gang, and not for the dry run to place a second time. It has no node yet (filter passed
    several), so no node is charged: the same as the accounting session. A pod the cache has
    not shown yet is not in the fork, and not held."""
    for job_uid, task_uid in assumed:
        job = ssn.jobs.get(job_uid)
        task = job.tasks.get(task_uid) if job is not None else None
        if job is None or task is None or task.status != TaskStatus.PENDING:
            continue  # bound meanwhile (counted as such), removed by the request, or unseen
        mine = ssn.own(task)
        job.update_task_status(mine, TaskStatus.ALLOCATED)
        ssn.fire_allocate(mine)


def _check_sizes(request: WhatIfRequest) -> None:
    for what, items, limit in (
        ("objects to add", request.add, MAX_OBJECTS),
        ("pods to remove", request.remove, MAX_REMOVALS),
        ("queue changes", request.queues, MAX_QUEUE_CHANGES),
    ):
        if len(items) > limit:
            raise WhatIfError(f"too many {what}: {len(items)} (at most {limit})")
    if not (request.add or request.remove or request.queues):
        raise WhatIfError("nothing to try: give objects to add, pods to remove or queue changes")
    if request.scope not in SCOPES:
        raise WhatIfError(f"scope {request.scope!r} is not one of {', '.join(SCOPES)}")


def _collect(objects: Sequence[Mapping[str, Any]]) -> ClusterObjects:
    for i, obj in enumerate(objects):
        kind = obj.get("kind") if isinstance(obj, Mapping) else None
        if kind not in WHATIF_KINDS:
            raise WhatIfError(
                f"object {i}: kind {kind!r} cannot be added in a what-if "
                f"(one of {', '.join(WHATIF_KINDS)})"
            )
    try:
        return collect(objects)
    except ConversionError as exc:
        raise WhatIfError(str(exc)) from exc


def _submitted_jobs(fork: ClusterState, objects: ClusterObjects, added: set[str]) -> frozenset[str]:
    """The jobs of the added pods (a pod may join an existing PodGroup) and the added
    PodGroups: the only ones a ``submitted``-scope session schedules."""
    jobs = {pg.uid for pg in objects.podgroups}
    for key in added:
        task = fork.task(key)
        if task is not None:
            jobs.add(task.job)
    return frozenset(jobs)


def _changed_queue(queues: Mapping[str, QueueInfo], change: QueueChange) -> QueueInfo:
    queue = queues.get(change.name)
    if queue is None:
        raise WhatIfError(f"queue {change.name} does not exist (add it as a Queue object)")
    updates: dict[str, Any] = {}
    if change.weight is not None:
        if change.weight < 1:
            raise WhatIfError(f"queue {change.name}: weight must be at least 1")
        updates["weight"] = change.weight
    if change.capability is not None:
        try:
            capability: Resource = resource_list(
                change.capability, f"queue {change.name}: capability"
            )
        except ConversionError as exc:
            raise WhatIfError(str(exc)) from exc
        updates["capability"] = capability if not capability.is_empty() else None
    return dataclasses.replace(queue, **updates)


def _pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name')}"


def _placements(ssn: Session, added: set[str]) -> list[Placement]:
    rows = [Placement(t.key, t.node_name, t.key in added, False) for t in ssn.bound]
    rows += [
        Placement(t.key, t.node_name, t.key in added, True)
        for job in ssn.jobs.values()
        for t in job.tasks_with(TaskStatus.PIPELINED)
    ]
    return sorted(rows, key=lambda p: (not p.added, p.pod))


def _evictions(ssn: Session) -> list[EvictionView]:
    rows = []
    for e in ssn.evictions:
        job = ssn.jobs.get(e.task.job)
        queue = job.queue if job is not None else None
        by = e.preemptor.key if e.preemptor is not None else "another pod"
        if e.reason == "reclaim":
            why = f"reclaimed from queue {queue} (above its deserved share) for {by}"
        elif e.reason == "preempt":
            why = f"preempted in queue {queue} by the higher-priority {by}"
        else:
            why = f"{e.reason} for {by}"
        rows.append(
            EvictionView(
                pod=e.task.key,
                node=e.node,
                queue=queue,
                action=e.reason,
                preemptor=e.preemptor.key if e.preemptor is not None else None,
                reason=why,
            )
        )
    return sorted(rows, key=lambda r: (r.pod, r.action))


def _queue_changes(ssn: Session, before: Mapping[str, Any]) -> list[QueueChangeView]:
    attrs = queue_attrs(ssn)
    rows = []
    for name in sorted(set(before) | set(attrs)):
        was = before.get(name)
        attr = attrs.get(name)
        queue = ssn.queues.get(name)
        rows.append(
            QueueChangeView(
                name=name,
                before=None
                if was is None
                else QueueFigures(was.deserved, was.allocated, was.share, was.overused),
                after=None
                if attr is None or queue is None
                else QueueFigures(
                    amounts(attr.deserved),
                    amounts(attr.allocated),
                    round(float(attr.share), 6),
                    ssn.overused(queue),
                ),
            )
        )
    return rows
