"""priority: PriorityClass order for tasks and jobs, and who may preempt whom by it.

Between jobs only job priority counts (a PodGroup's priorityClassName); inside one job the
tasks' own priorities decide, so a job can replace its low-priority tasks with its
high-priority ones without touching another job of equal priority.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping
from typing import Protocol

from scheduler_core.api.job import JobInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.fit import PERMIT
from scheduler_core.framework.hooks import (
    JOB_ORDER,
    JOB_ORDER_KEY,
    JOB_STARVING,
    PREEMPTABLE,
    PREEMPTOR_KEY,
    TASK_ORDER,
)
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v
from scheduler_core.plugins.util.live_jobs import ReadsLive, with_known_jobs

log = logging.getLogger("scheduler_core.plugins.priority")


class _Ranked(Protocol):
    """A task or a job, as the priority orders compare them."""

    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def priority(self) -> int: ...


def _higher_first(message: str, left: _Ranked, right: _Ranked) -> int:
    """The higher priority first (0 for a tie), logging both sides with `message` at -v 4."""
    log.log(
        v(4),
        message,
        left.namespace,
        left.name,
        left.priority,
        right.namespace,
        right.name,
        right.priority,
    )
    if left.priority == right.priority:
        return 0
    return -1 if left.priority > right.priority else 1


def task_order(left: TaskInfo, right: TaskInfo) -> int:
    """Higher task priority first."""
    return _higher_first(
        "Priority TaskOrder: <%s/%s> priority is %d, <%s/%s> priority is %d", left, right
    )


def job_order_key(job: JobInfo) -> int:
    """``job_order`` as a sort key: the higher priority sorts first."""
    return -job.priority


def job_order(left: JobInfo, right: JobInfo) -> int:
    """Higher job priority first."""
    return _higher_first(
        "Priority JobOrderFn: <%s/%s> priority: %d, <%s/%s> priority: %d", left, right
    )


def job_starving(job: JobInfo) -> bool:
    """Some task is neither placed nor promised a place (minTaskMember is not considered)."""
    return job.ready_task_num() + job.waiting_task_num() < len(job.tasks)


def priority_victims(
    jobs: Mapping[str, JobInfo], preemptor: TaskInfo, preemptees: list[TaskInfo]
) -> list[TaskInfo]:
    """Preemptees of strictly lower priority: job priority across jobs, task priority within
    the preemptor's own job. Without the preemptor's job there is nothing to compare: none."""
    preemptor_job = jobs.get(preemptor.job)
    if preemptor_job is None:
        return []
    victims: list[TaskInfo] = []
    for preemptee, preemptee_job in with_known_jobs(jobs, preemptees, log):
        if preemptee_job.uid != preemptor_job.uid:
            if preemptee_job.priority >= preemptor_job.priority:
                log.log(
                    v(4),
                    "Can not preempt task <%s/%s> because preemptee job has greater or equal "
                    "job priority (%d) than preemptor (%d)",
                    preemptee.namespace,
                    preemptee.name,
                    preemptee_job.priority,
                    preemptor_job.priority,
                )
                continue
        elif preemptee.priority >= preemptor.priority:
            log.log(
                v(4),
                "Can not preempt task <%s/%s> because preemptee task has greater or equal "
                "task priority (%d) than preemptor (%d)",
                preemptee.namespace,
                preemptee.name,
                preemptee.priority,
                preemptor.priority,
            )
            continue
        victims.append(preemptee)
    log.log(v(4), "Victims from Priority plugins are %s", [t.key for t in victims])
    return victims


class PriorityPlugin(ReadsLive):
    name = "priority"

    def on_session_open(self, ssn: Session) -> None:
        jobs = ssn.jobs

        def preemptable(
            preemptor: TaskInfo, preemptees: list[TaskInfo]
        ) -> tuple[list[TaskInfo], int]:
            return priority_victims(jobs, preemptor, preemptees), PERMIT

        ssn.add_hook(TASK_ORDER, self.name, task_order)
        ssn.add_hook(JOB_ORDER, self.name, job_order)
        ssn.add_hook(JOB_ORDER_KEY, self.name, job_order_key)
        ssn.add_hook(PREEMPTABLE, self.name, preemptable)

        def preemptor_key(preemptor: TaskInfo) -> Hashable:
            # Across jobs only the preemptor's job priority is compared (no job: no victim).
            job = jobs.get(preemptor.job)
            return None if job is None else job.priority

        ssn.add_hook(PREEMPTOR_KEY, self.name, preemptor_key)
        ssn.add_hook(JOB_STARVING, self.name, job_starving)
