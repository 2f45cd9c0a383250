"""How the cache makes jobs: from a PodGroup, or for a plain pod the group of one Volcano's
PodGroup controller would make, and when a pod or queue update leaves what a session
derives of them as it was. Functions of their inputs only, shared by the live cache and
its forks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields

from scheduler_core.api.job import NATIVE_SOURCE, JobInfo
from scheduler_core.api.queue import DEFAULT_QUEUE, QueueInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import PodGroupPhase, TaskStatus
from scheduler_core.cache.convert import NATIVE_JOB_PREFIX, PodGroupInfo


def implicit_queue(name: str) -> QueueInfo:
    return QueueInfo(name=name, weight=1, implicit=True)


def job_from_podgroup(
    pg: PodGroupInfo, priority_classes: Mapping[str, int], global_default: int | None
) -> JobInfo:
    job = JobInfo(uid=pg.uid, name=pg.name, namespace=pg.namespace, queue=pg.queue)
    apply_podgroup(job, pg, priority_classes, global_default)
    return job


def apply_podgroup(
    job: JobInfo,
    pg: PodGroupInfo,
    priority_classes: Mapping[str, int],
    global_default: int | None,
) -> None:
    """Set a job's PodGroup fields in place, keeping its tasks."""
    if pg.priority is not None:
        priority = pg.priority
    elif pg.priority_class_name and pg.priority_class_name in priority_classes:
        priority = priority_classes[pg.priority_class_name]
    elif global_default is not None:
        priority = global_default
    else:
        priority = 0
    job.queue = pg.queue
    job.priority = priority
    job.min_available = pg.min_member
    job.task_min_available = dict(pg.min_task_member)
    job.min_resources = pg.min_resources
    job.phase = pg.phase
    job.preemptable = pg.preemptable
    job.creation_timestamp = pg.creation_timestamp
    job.min_runtime = pg.min_runtime
    job.network_topology = pg.network_topology
    job.synthesized = False
    job.source = pg.source
    job.topology_keys = pg.topology_keys
    if pg.source == NATIVE_SOURCE:
        job.phase = native_phase(job)


def native_phase(job: JobInfo) -> PodGroupPhase:
    """The phase a native group's job has: kube-scheduler writes none, so it is derived as
    for a lone pod's group: Running once minMember members are placed, else Pending (and
    admitted by enqueue, as a Volcano PodGroup no controller has admitted yet)."""
    placed = job.scheduled_task_num() + job.releasing_scheduled_task_num()
    return (
        PodGroupPhase.RUNNING if placed and placed >= job.min_available else PodGroupPhase.PENDING
    )


#: The statuses in which a lone pod's group of one runs, as one mask (an int test: the
#: flag arithmetic of ``TaskStatus`` makes enum members on every event).
_RUNNING_BITS = int(TaskStatus.RUNNING | TaskStatus.BOUND | TaskStatus.RELEASING)


def synthesized_queue(queue: str) -> str:
    """The queue of a plain pod's group of one: the pod's queue annotation, else the default."""
    return queue or DEFAULT_QUEUE


def synthesized_job(task: TaskInfo, queue: str) -> JobInfo:
    """The group of one that Volcano's PodGroup controller makes for a plain pod."""
    job = JobInfo(
        uid=task.job,
        name=task.job.split("/", 1)[1],
        namespace=task.namespace,
        queue=synthesized_queue(queue),
        min_available=1,
        synthesized=True,
    )
    respec_synthesized(job, task)
    return job


def respec_synthesized(job: JobInfo, task: TaskInfo) -> None:
    """Give a plain pod's group of one the spec ``synthesized_job`` derives from the pod as
    it is now (its task), keeping the object and its tasks: an update of the pod (its bind,
    mostly) re-derives the spec without making a job to copy it from."""
    min_resources = task.resreq.clone()
    if min_resources.scalars is not None:
        min_resources.scalars.pop("pods", None)
    running = int.__and__(task.status, _RUNNING_BITS)
    job.priority = task.pod_priority
    job.min_available = 1
    job.min_resources = min_resources
    job.phase = PodGroupPhase.RUNNING if running else PodGroupPhase.PENDING
    job.creation_timestamp = task.creation_timestamp


def same_sums(old: TaskInfo, new: TaskInfo) -> bool:
    """Whether a pod update leaves every sum a session derives as it was: its job's usage
    and its node's amounts read the task's job, status, node, requests and gating only.
    Everything else of a pod a decision reads (labels, priority, nomination...) is read
    from the cache's live objects when the decision is made, not derived at session open.
    """
    return (
        old.job == new.job
        and old.status == new.status
        and old.node_name == new.node_name
        and old.gated == new.gated
        and old.resreq.semantic_equal(new.resreq)
        and old.init_resreq.semantic_equal(new.init_resreq)
    )


def same_but_history(old: QueueInfo, new: QueueInfo) -> bool:
    """Whether two versions of a queue differ at most in their persisted usage history."""
    for spec in fields(QueueInfo):
        name = spec.name
        if name in ("usage_record", "usage_record_error"):
            continue
        was, now = getattr(old, name), getattr(new, name)
        if isinstance(was, Resource) and isinstance(now, Resource):
            if not was.semantic_equal(now):
                return False
        elif was != now:
            return False
    return True


def native_job(job_id: str) -> bool:
    """Whether a job id is a native PodGroup's (see ``NATIVE_JOB_PREFIX``)."""
    return job_id.partition("/")[2].startswith(NATIVE_JOB_PREFIX)
