"""Opening, running and closing a session: Volcano's ``framework.OpenSession`` and the
scheduler's per-cycle loop, without the cache writes (the caller decides what to apply)."""

from __future__ import annotations

import logging

from scheduler_core.api.job import JobInfo
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.types import PodGroupPhase, TaskStatus
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.framework.registry import action_builder, plugin_builder
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.framework")


def open_session(
    snapshot: ClusterSnapshot,
    conf: SchedulerConfiguration,
    *,
    clone: bool = True,
    read_only: bool = False,
    shared_tasks: bool = False,
    memos: SessionMemos | None = None,
) -> Session:
    """Build plugins tier by tier and let each register its hooks.

    A plugin named in the configuration that the engine does not have is skipped with a
    warning naming it, as Volcano does; the session still opens. ``read_only`` promises
    that no action or statement will run in the session (only the plugins' hooks are asked,
    and event handlers fired for tasks outside the jobs' own sums). ``shared_tasks``: the
    snapshot's jobs and nodes are private but its tasks are not (``ClusterState.fork``).
    ``memos``: what the plugins remember across the sessions of the caller (the owner of
    sessions opened one after another passes its own; without, the session starts afresh).
    """
    ssn = Session(
        snapshot=snapshot.clone() if clone else snapshot,
        conf=conf,
        read_only=read_only,
        shared_tasks=shared_tasks,
        memos=memos if memos is not None else SessionMemos(),
    )
    for tier in conf.tiers:
        for option in tier.plugins:
            builder = plugin_builder(option.name)
            if builder is None:
                log.warning("Failed to get plugin %s: not available, skipped", option.name)
                continue
            plugin = builder(Arguments(option.arguments, parsed=option.args))
            plugin.on_session_open(ssn)
            ssn.plugins[option.name] = plugin
    log.log(
        v(5),
        "Open Session %d with <%d> Job and <%d> Queues",
        ssn.uid,
        len(ssn.jobs),
        len(ssn.queues),
    )
    return ssn


def run_actions(ssn: Session, actions: list[str] | None = None) -> None:
    for name in actions if actions is not None else ssn.conf.actions:
        builder = action_builder(name)
        if builder is None:
            log.warning("Failed to get action %s: not available, skipped", name)
            continue
        action = builder()
        action.initialize(Arguments(ssn.conf.action_arguments(name)))
        action.execute(ssn)


def close_session(ssn: Session, *, update_phases: bool = True) -> None:
    """``update_phases=False`` for read-only sessions over the live cache (the extender's
    accounting): their jobs are the cache's own objects and must keep their real phase."""
    for plugin in ssn.plugins.values():
        plugin.on_session_close(ssn)
    if update_phases:
        for job in ssn.jobs.values():
            job.phase = pod_group_phase(job)
    log.log(v(5), "Close Session %d", ssn.uid)


def pod_group_phase(job: JobInfo) -> PodGroupPhase:
    """Volcano's ``jobStatus``: Running once enough tasks are scheduled, Completed when all
    scheduled tasks finished, otherwise the phase stays (Pending or Inqueue)."""

    scheduled = job.scheduled_task_num() + job.releasing_scheduled_task_num()
    if scheduled >= job.min_available:
        completed = len(job.status_index.get(TaskStatus.SUCCEEDED, {})) + len(
            job.status_index.get(TaskStatus.FAILED, {})
        )
        if scheduled > 0 and completed == scheduled:
            return PodGroupPhase.COMPLETED
        return PodGroupPhase.RUNNING
    if job.phase == PodGroupPhase.INQUEUE:
        return PodGroupPhase.INQUEUE
    return PodGroupPhase.PENDING
