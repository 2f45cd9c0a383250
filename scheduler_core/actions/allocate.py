"""allocate: place pending tasks of admitted jobs, queue by queue in fair-share order.

A job's placements are committed only once the job is ready (its gang is satisfied); a job
that can only be pipelined keeps its promises in the session, and one that can do neither
has its placements discarded, so a gang is never placed in part.
"""

from __future__ import annotations

import logging

from scheduler_core.actions.util.job_checks import skipped_invalid
from scheduler_core.api.job import JobInfo
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import ZERO
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import PodGroupPhase, TaskStatus, allocated_status
from scheduler_core.framework.priority_queue import PriorityQueue
from scheduler_core.framework.registry import Action
from scheduler_core.framework.resource_fit import resource_fit_error
from scheduler_core.framework.session import Session
from scheduler_core.framework.statement import Statement, StatementError
from scheduler_core.framework.status import Status
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.actions.allocate")


def resource_fit(task: TaskInfo, node: NodeInfo) -> Status | None:
    """Resource fit against future idle: the allocate action's own predicate."""
    return resource_fit_error(task, node, node.future_idle())


def need_continue_allocating(job: JobInfo, failed_roles: set[str]) -> bool:
    """Volcano's ``NeedContinueAllocating``: after a task found no node, keep going only if
    the job can still become ready with the tasks that are left."""
    pending_by_role: dict[str, int] = {}
    for task in job.tasks_with(TaskStatus.PENDING):
        pending_by_role[task.role] = pending_by_role.get(task.role, 0) + 1
    if job.min_available < job.task_min_available_total:
        left = sum(n for role, n in pending_by_role.items() if role not in failed_roles)
        return job.waiting_task_num() + job.ready_task_num() + left >= job.min_available
    allocated_by_role: dict[str, int] = {}
    for task in job.tasks.values():
        if allocated_status(task.status) or task.status == TaskStatus.SUCCEEDED:
            allocated_by_role[task.role] = allocated_by_role.get(task.role, 0) + 1
    for role in failed_roles:
        minimum = job.task_min_available.get(role, 0)
        if minimum and allocated_by_role.get(role, 0) < minimum:
            return False
    return True


class Allocate(Action):
    name = "allocate"

    def execute(self, ssn: Session) -> None:
        log.log(v(5), "Enter Allocate ...")
        enqueue_configured = "enqueue" in ssn.conf.actions
        queues: PriorityQueue[QueueInfo] = PriorityQueue(ssn.queue_order_fn)
        seen: set[str] = set()
        jobs_by_queue: dict[str, PriorityQueue[JobInfo]] = {}
        worksheets: dict[str, PriorityQueue[TaskInfo]] = {}

        for job in ssn.schedulable_jobs():
            if job.is_pending():
                if enqueue_configured:
                    log.log(
                        v(4),
                        "Job <%s> Queue <%s> skip allocate, reason: job status is pending.",
                        job.uid,
                        job.queue,
                    )
                    continue
                job.phase = PodGroupPhase.INQUEUE
            if skipped_invalid(ssn, job, "allocate", log):
                continue
            queue = ssn.queues.get(job.queue)
            if queue is None:
                log.warning(
                    "Skip adding Job <%s> because its queue %s is not found", job.uid, job.queue
                )
                continue
            tasks = [
                t
                for t in job.tasks_with(TaskStatus.PENDING)
                if not t.resreq.is_empty() and not t.gated
            ]
            if not tasks:
                continue
            worksheets[job.uid] = PriorityQueue(ssn.task_order_fn, tasks)
            jobs = jobs_by_queue.get(queue.name)
            if jobs is None:
                jobs = jobs_by_queue[queue.name] = ssn.job_queue()
            jobs.push(job)
            if queue.name not in seen:
                seen.add(queue.name)
                queues.push(queue)

        nodes = [ssn.nodes[name] for name in sorted(ssn.nodes)]
        while not queues.empty():
            queue = queues.pop()
            if ssn.overused(queue):
                log.log(v(3), "Queue <%s> is overused, ignore it.", queue.name)
                continue
            jobs = jobs_by_queue.get(queue.name)
            if jobs is None or jobs.empty():
                continue
            job = jobs.pop()
            log.log(v(3), "Try to allocate resource to Jobs in Queue <%s>", queue.name)
            worksheet = worksheets[job.uid]
            stmt = self._allocate_for_tasks(ssn, worksheet, job, queue, nodes)
            if not worksheet.empty():
                jobs.push(job)
            if stmt is not None and ssn.job_ready(job):
                stmt.commit()
            queues.push(queue)
        log.log(v(5), "Leaving Allocate ...")

    def _allocate_for_tasks(
        self,
        ssn: Session,
        tasks: PriorityQueue[TaskInfo],
        job: JobInfo,
        queue: QueueInfo,
        nodes: list[NodeInfo],
    ) -> Statement | None:
        stmt = Statement(ssn)
        failed_roles: set[str] = set()
        while not tasks.empty():
            task = tasks.pop()
            if not ssn.allocatable(queue, task):
                log.log(
                    v(3),
                    "Queue <%s> is overused when considering task <%s>, ignore it.",
                    queue.name,
                    task.key,
                )
                continue
            if task.role in failed_roles:
                continue
            err = ssn.pre_predicate(task)
            if err:
                log.log(v(3), "PrePredicate for task %s failed: %s", task.key, err)
                continue
            feasible = [
                node
                for node in nodes
                if resource_fit(task, node) is None and ssn.predicate(task, node) is None
            ]
            if not feasible:
                log.log(v(3), "Predicates failed in allocate for task <%s> on all nodes", task.key)
                failed_roles.add(task.role)
                if need_continue_allocating(job, failed_roles):
                    continue
                break
            node = self._best_node(ssn, task, feasible)
            try:
                if task.init_resreq.less_equal(node.idle, ZERO):
                    log.log(v(3), "Binding Task <%s> to node <%s>", task.key, node.name)
                    stmt.allocate(task, node)
                else:
                    log.log(
                        v(3),
                        "Predicates failed for task <%s> on node <%s> with limited "
                        "resources; pipelining it",
                        task.key,
                        node.name,
                    )
                    stmt.pipeline(task, node.name)
            except StatementError as exc:
                log.error("Failed to place task <%s> on <%s>: %s", task.key, node.name, exc)
                continue
            if ssn.job_ready(job) and not tasks.empty():
                break
        if ssn.job_ready(job) or ssn.job_pipelined(job):
            return stmt
        stmt.discard()
        return None

    @staticmethod
    def _best_node(ssn: Session, task: TaskInfo, feasible: list[NodeInfo]) -> NodeInfo:
        """Nodes where the task fits in idle resources first, then in future idle; highest
        node-order score wins, ties to the first by name (Volcano picks at random)."""
        idle_fit = [n for n in feasible if task.init_resreq.less_equal(n.idle, ZERO)]
        candidates = idle_fit or feasible
        if len(candidates) == 1:
            return candidates[0]
        scores = ssn.node_scores(task, candidates)
        best = candidates[0]
        for node in candidates[1:]:
            if scores[node.name] > scores[best.name]:
                best = node
        return best
