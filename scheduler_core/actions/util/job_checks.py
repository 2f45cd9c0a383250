"""The job-level checks the evicting actions ask of every waiting job, asked once per state.

Preempt and reclaim ask each starving job, again and again within one pass, whether it still
starves: before each of its tasks and after. With ten thousand waiting jobs that was a
third of a million walks through the plugins' chains a cycle, nearly all of them over a
session nothing had changed in since the last one. The plugins' answers read the job's tasks
and the session's placements; those change only by a statement's operations (each one
fires a placement event, ``Session.placements``) or by its commit (an eviction recorded, a
task bound). So an answer is kept until the session's count of those moves, across the
session's actions (``Session.kept``), and so are its validity and pipelined answers.
"""

from __future__ import annotations

import logging

from scheduler_core.api.job import JobInfo
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v


class JobChecks:
    """``Session.job_starving`` and ``job_pipelined`` for the evicting actions, each job's
    answer kept (``Session.kept``) until the session places, evicts or commits anything:
    across the actions of one session, not only within one pass."""

    def __init__(self, ssn: Session) -> None:
        self.session = ssn

    def starving(self, job: JobInfo) -> bool:
        ssn = self.session
        return ssn.kept("starving", job, ssn.job_starving)

    def pipelined(self, job: JobInfo) -> bool:
        ssn = self.session
        return ssn.kept("pipelined", job, ssn.job_pipelined)


def skipped_invalid(ssn: Session, job: JobInfo, action: str, log: logging.Logger) -> bool:
    """Whether the plugins find ``job`` invalid (its gang cannot be whole): the action
    skips it, and says why at V(4)."""
    result = ssn.kept("valid", job, ssn.job_valid)
    if result is None or result.is_success:
        return False
    log.log(
        v(4),
        "Job <%s/%s> Queue <%s> skip %s, reason: %s, message %s",
        job.namespace,
        job.name,
        job.queue,
        action,
        result.reason_code,
        result.message,
    )
    return True
