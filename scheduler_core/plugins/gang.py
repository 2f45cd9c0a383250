"""gang: a job is worth running only when at least ``minAvailable`` of its tasks run together.

So the plugin refuses to start a job that cannot reach its gang (JobValid, JobReady,
JobPipelined), asks for preemption only while the gang is short (JobStarving), orders
unfinished gangs first, and never takes a victim that would drop its own job below
``minAvailable`` (Preemptable = Reclaimable).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Mapping

from scheduler_core.api.job import JobInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework import hooks
from scheduler_core.framework.fit import PERMIT, PERMITTED, REJECT, Vote
from scheduler_core.framework.session import Session
from scheduler_core.framework.status import Code, Status
from scheduler_core.logutil import v
from scheduler_core.plugins.util.live_jobs import ReadsLive, with_known_jobs

log = logging.getLogger("scheduler_core.plugins.gang")

#: PodGroup condition reasons (Volcano's ``v1beta1`` constants).
NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
NOT_ENOUGH_TASKS = "NotEnoughTasks"


def job_valid(job: JobInfo) -> Status | None:
    """Not worth scheduling at all: some role, or the whole job, lacks tasks to form a gang."""
    if not job.check_task_valid():
        return Status(
            Code.UNSCHEDULABLE,
            ["Not enough valid pods of each task for gang-scheduling"],
            "gang",
            reason_code=NOT_ENOUGH_PODS_OF_TASK,
        )
    valid = job.valid_task_num()
    if valid < job.min_available:
        return Status(
            Code.UNSCHEDULABLE,
            [
                "Not enough valid tasks for gang-scheduling, "
                f"valid: {valid}, min: {job.min_available}"
            ],
            "gang",
            reason_code=NOT_ENOUGH_TASKS,
        )
    return None


def job_ready(job: JobInfo) -> bool:
    return job.check_task_ready() and job.is_ready()


def job_pipelined(job: JobInfo) -> Vote:
    """A vote, not an abstention: a gang that cannot even be pipelined must be rolled back."""
    if job.check_task_pipelined() and job.is_pipelined():
        return PERMITTED
    placed = job.waiting_task_num() + job.ready_task_num() + job.pending_best_effort_task_num()
    return Vote(
        REJECT,
        f"gang {job.uid}: {placed} of minMember {job.min_available} tasks placed or pipelined"
        if placed < job.min_available
        else f"gang {job.uid}: a task role is below its minimum",
    )


def job_starving(job: JobInfo) -> bool:
    """Only the job-level count matters for preemption; minTaskMember is ignored on purpose."""
    return job.is_starving()


def reads_no_preemptor(_preemptor: TaskInfo) -> Hashable:
    """The victims hook judges the victims' gangs alone: any preemptor is alike."""
    return ()


def job_order(left: JobInfo, right: JobInfo) -> int:
    """Jobs still short of their gang go first: finishing a gang frees nobody, starting one
    that is nearly complete lets it run."""
    l_ready = left.is_ready()
    r_ready = right.is_ready()
    log.log(
        v(4),
        "Gang JobOrderFn: <%s/%s> is ready: %s, <%s/%s> is ready: %s",
        left.namespace,
        left.name,
        l_ready,
        right.namespace,
        right.name,
        r_ready,
    )
    if l_ready == r_ready:
        return 0
    return 1 if l_ready else -1


def job_order_key(job: JobInfo) -> bool:
    """``job_order`` as a sort key: a job short of its gang (False) sorts first."""
    return job.is_ready()


def gang_victims(jobs: Mapping[str, JobInfo], preemptees: list[TaskInfo]) -> list[TaskInfo]:
    """Victims that leave every job with more than ``minAvailable`` ready tasks.

    The count is kept per job across the whole call, so two victims of one job are checked
    against what is left after the first; a preemptee whose job the session does not know is
    never taken (its gang cannot be checked).
    """
    victims: list[TaskInfo] = []
    occupied: dict[str, int] = {}
    for preemptee, job in with_known_jobs(jobs, preemptees, log):
        ready = occupied.get(job.uid)
        if ready is None:
            ready = job.ready_task_num()
        if ready > job.min_available:
            occupied[job.uid] = ready - 1
            victims.append(preemptee)
        else:
            occupied[job.uid] = ready
            log.log(
                v(4),
                "Can not preempt task <%s/%s> because job %s ready num(%d) <= "
                "MinAvailable(%d) for gang-scheduling",
                preemptee.namespace,
                preemptee.name,
                job.name,
                ready,
                job.min_available,
            )
    log.log(v(4), "Victims from Gang plugins are %s", [t.key for t in victims])
    return victims


class GangPlugin(ReadsLive):
    name = "gang"

    def on_session_open(self, ssn: Session) -> None:
        jobs = ssn.jobs

        def victims(_evictor: TaskInfo, evictees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
            # Permit even when empty: an empty answer vetoes the whole tier, as in Volcano.
            return gang_victims(jobs, evictees), PERMIT

        ssn.add_hook(hooks.JOB_VALID, self.name, job_valid)
        ssn.add_hook(hooks.PREEMPTABLE, self.name, victims)
        ssn.add_hook(hooks.PREEMPTOR_KEY, self.name, reads_no_preemptor)
        ssn.add_hook(hooks.RECLAIMABLE, self.name, victims)
        ssn.add_hook(hooks.JOB_ORDER, self.name, job_order)
        ssn.add_hook(hooks.JOB_ORDER_KEY, self.name, job_order_key)
        ssn.add_hook(hooks.JOB_READY, self.name, job_ready)
        ssn.add_hook(hooks.JOB_PIPELINED, self.name, job_pipelined)
        ssn.add_hook(hooks.JOB_STARVING, self.name, job_starving)
