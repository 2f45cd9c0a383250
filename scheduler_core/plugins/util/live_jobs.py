"""What the plugins that read jobs and tasks live share (gang, priority, conformance): they
keep nothing per session that a change of usage could make stale, and they judge victims
only within the jobs the session knows."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping

from scheduler_core.api.job import JobInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.arguments import NoArgs
from scheduler_core.framework.registry import FollowStep, Plugin, UsageChange, follows_nothing
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v


class ReadsLive(Plugin[NoArgs]):
    """A plugin whose hooks read the session's jobs and tasks as they are at each call: it is
    always followed in place, with nothing to bring up to date."""

    def can_follow(self, ssn: Session) -> bool:
        return True

    def follow(self, ssn: Session, change: UsageChange) -> FollowStep:
        """Nothing to bring up to date: this plugin reads jobs and tasks live."""
        return follows_nothing


def with_known_jobs(
    jobs: Mapping[str, JobInfo], preemptees: list[TaskInfo], log: logging.Logger
) -> Iterator[tuple[TaskInfo, JobInfo]]:
    """Each preemptee with its job; one whose job the session does not know is never a victim
    (its job's rules cannot be checked), and the plugin's own log says so at -v 4."""
    for preemptee in preemptees:
        job = jobs.get(preemptee.job)
        if job is None:
            log.log(
                v(4),
                "Can not preempt task <%s/%s> because its job <%s> is not in the session",
                preemptee.namespace,
                preemptee.name,
                preemptee.job,
            )
            continue
        yield preemptee, job
