"""Build a ClusterSnapshot from Kubernetes objects, with Volcano's cache rules.

Used by ``simulate`` (objects from a YAML file) and by the live cluster state. The rules:
a pod without a PodGroup becomes a job of one in its annotated queue (what Volcano's PodGroup
controller would create); a PodGroup whose queue does not exist is not a job (Volcano leaves
it out of the session) but its pods still use their nodes; a ``default`` queue exists unless
one is defined, and so does ``root`` (the hierarchy's top, which Volcano's queue controller
creates).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.api.job import JobInfo
from scheduler_core.api.node import NodeError, NodeInfo
from scheduler_core.api.pdb import PodDisruptionBudget
from scheduler_core.api.queue import DEFAULT_QUEUE, ROOT_QUEUE, QueueInfo
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import PodGroupPhase, TaskStatus, completed_status
from scheduler_core.cache.convert import (
    PodGroupInfo,
    node_to_info,
    pdb_to_info,
    pod_job_id,
    pod_queue_annotation,
    pod_to_task,
    podgroup_to_info,
    priority_class_value,
    queue_to_info,
)

log = logging.getLogger("scheduler_core.cache")


def implicit_queue(name: str) -> QueueInfo:
    return QueueInfo(name=name, weight=1, implicit=True)


@dataclass(slots=True)
class ClusterObjects:
    """Converted objects, before they are tied together into a snapshot."""

    pods: list[Mapping[str, Any]] = field(default_factory=list)
    nodes: list[NodeInfo] = field(default_factory=list)
    queues: list[QueueInfo] = field(default_factory=list)
    podgroups: list[PodGroupInfo] = field(default_factory=list)
    priority_classes: dict[str, int] = field(default_factory=dict)
    global_default_priority: int | None = None
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)


def job_from_podgroup(
    pg: PodGroupInfo, priority_classes: Mapping[str, int], global_default: int | None
) -> JobInfo:
    if pg.priority_class_name and pg.priority_class_name in priority_classes:
        priority = priority_classes[pg.priority_class_name]
    elif global_default is not None:
        priority = global_default
    else:
        priority = 0
    return JobInfo(
        uid=pg.uid,
        name=pg.name,
        namespace=pg.namespace,
        queue=pg.queue,
        priority=priority,
        min_available=pg.min_member,
        task_min_available=dict(pg.min_task_member),
        min_resources=pg.min_resources,
        phase=pg.phase,
        preemptable=pg.preemptable,
        creation_timestamp=pg.creation_timestamp,
    )


def synthesized_job(task: TaskInfo, queue: str) -> JobInfo:
    """The group of one Volcano's PodGroup controller makes for a plain pod."""
    min_resources = task.resreq.clone()
    if min_resources.scalars is not None:
        min_resources.scalars.pop("pods", None)
    running = task.status & (TaskStatus.RUNNING | TaskStatus.BOUND | TaskStatus.RELEASING)
    return JobInfo(
        uid=task.job,
        name=task.job.split("/", 1)[1],
        namespace=task.namespace,
        queue=queue or DEFAULT_QUEUE,
        priority=task.pod_priority,
        min_available=1,
        min_resources=min_resources,
        phase=PodGroupPhase.RUNNING if running else PodGroupPhase.PENDING,
        creation_timestamp=task.creation_timestamp,
        synthesized=True,
    )


def build_snapshot(objects: ClusterObjects) -> ClusterSnapshot:
    queues: dict[str, QueueInfo] = {q.name: q for q in objects.queues}
    for name in (DEFAULT_QUEUE, ROOT_QUEUE):
        queues.setdefault(name, implicit_queue(name))

    nodes: dict[str, NodeInfo] = {n.name: n for n in objects.nodes}
    jobs: dict[str, JobInfo] = {}
    for pg in objects.podgroups:
        jobs[pg.uid] = job_from_podgroup(
            pg, objects.priority_classes, objects.global_default_priority
        )

    for pod in objects.pods:
        task = pod_to_task(pod, objects.priority_classes)
        job_id, synthesized = pod_job_id(pod)
        job = jobs.get(job_id)
        if job is None and synthesized:
            job = synthesized_job(task, pod_queue_annotation(pod))
            jobs[job_id] = job
        if job is not None:
            job.add_task_info(task)
        node = nodes.get(task.node_name) if task.node_name else None
        if node is not None and not completed_status(task.status):
            try:
                node.add_task(task)
            except NodeError as exc:
                log.warning("%s", exc)

    # Volcano's snapshot leaves out jobs whose queue does not exist.
    session_jobs = {uid: job for uid, job in jobs.items() if job.queue in queues}
    for uid, job in jobs.items():
        if uid not in session_jobs:
            log.warning("Job <%s> names queue <%s> which does not exist: skipped", uid, job.queue)
    return ClusterSnapshot(
        jobs=session_jobs,
        nodes=nodes,
        queues=queues,
        pdbs=list(objects.pdbs),
        priority_classes=dict(objects.priority_classes),
    )


def add_object(out: ClusterObjects, obj: Mapping[str, Any]) -> None:
    """Convert one object of a kind the engine reads into ``out`` (raises ConversionError)."""
    kind = obj.get("kind")
    if kind == "Pod":
        pod_to_task(obj)  # validate now, so a bad pod is reported with its document
        out.pods.append(obj)
    elif kind == "Node":
        out.nodes.append(node_to_info(obj))
    elif kind == "Queue":
        out.queues.append(queue_to_info(obj))
    elif kind == "PodGroup":
        out.podgroups.append(podgroup_to_info(obj))
    elif kind == "PriorityClass":
        name, value, global_default = priority_class_value(obj)
        out.priority_classes[name] = value
        if global_default:
            out.global_default_priority = value
    elif kind == "PodDisruptionBudget":
        out.pdbs.append(pdb_to_info(obj))


def collect(objects: Iterable[Mapping[str, Any]]) -> ClusterObjects:
    """Convert objects of the kinds the engine reads; other kinds are ignored."""
    out = ClusterObjects()
    for obj in objects:
        add_object(out, obj)
    return out
