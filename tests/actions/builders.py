"""Cluster builders for the action tests: Kubernetes objects as plain dicts → snapshot → session.

Clusters go through the real conversion (``collect`` + ``build_snapshot``), so the actions
run on the model the service builds from the API server, with the real plugins.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import scheduler_core.actions
import scheduler_core.plugins  # noqa: F401 - registers every plugin and action
from scheduler_core.api.resource import Resource
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.cache.builder import build_snapshot
from scheduler_core.cache.objects import collect
from scheduler_core.conf import SchedulerConfiguration, load_configuration
from scheduler_core.engine import run_session
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.session import Session

Obj = dict[str, Any]

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
PREEMPTABLE_KEY = "volcano.sh/preemptable"

#: Volcano's Helm-chart tiers with preempt and reclaim on: gang and drf do not vote on
#: victims (``enablePreemptable: false``), so priority and conformance decide preempt and
#: proportion decides reclaim.
HELM_CONF = """
actions: "{actions}"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
{configurations}"""

#: Gang protects victims (its Preemptable/Reclaimable vote) in the same tier as priority,
#: conformance and proportion, so one intersection decides both preempt and reclaim victims
#: and no later tier can overrule it (tier 2 votes on neither).
GANG_CONF = """
actions: "{actions}"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: proportion
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: nodeorder
{configurations}"""


def configuration(
    template: str, actions: str, arguments: Mapping[str, Mapping[str, Any]] | None = None
) -> SchedulerConfiguration:
    """``template`` with its actions and optional ``configurations`` entries filled in."""
    lines: list[str] = []
    if arguments:
        lines.append("configurations:")
        for name, args in arguments.items():
            lines.append(f"- name: {name}")
            lines.append("  arguments:")
            for key, value in args.items():
                rendered = str(value).lower() if isinstance(value, bool) else value
                lines.append(f"    {key}: {rendered}")
    text = template.format(actions=actions, configurations="\n".join(lines))
    return load_configuration(text)


# --- objects ------------------------------------------------------------------------------


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    *,
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
) -> Obj:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": str(pods)},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str,
    *,
    namespace: str = "ns",
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    node_name: str = "",
    phase: str | None = None,
    group: str | None = None,
    priority: int | None = None,
    priority_class: str = "",
    preemptable: bool | None = None,
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    started: str = "",
    created: str = "",
    nominated: str = "",
    preemption_policy: str = "",
    deleting: bool = False,
    disruption_target: bool = False,
    queue: str = "",
) -> Obj:
    """A pod: Running when it has a node, Pending otherwise (unless ``phase`` says)."""
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    annotations: dict[str, str] = {}
    if group is not None:
        annotations[GROUP_ANNOTATION] = group
    if preemptable is not None:
        annotations[PREEMPTABLE_KEY] = "true" if preemptable else "false"
    if queue:
        annotations["scheduling.volcano.sh/queue-name"] = queue
    spec: Obj = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if preemption_policy:
        spec["preemptionPolicy"] = preemption_policy
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "uid": f"{namespace}-{name}",
        "labels": dict(labels or {}),
        "annotations": annotations,
    }
    if created:
        meta["creationTimestamp"] = created
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    status: Obj = {"phase": phase or ("Running" if node_name else "Pending")}
    if started:
        status["startTime"] = started
    if nominated:
        status["nominatedNodeName"] = nominated
    if disruption_target:
        status["conditions"] = [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ]
    return {"kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def podgroup(
    name: str,
    min_member: int = 1,
    *,
    namespace: str = "ns",
    queue: str = "default",
    priority_class: str = "",
    phase: str = "Running",
) -> Obj:
    spec: Obj = {"minMember": min_member, "queue": queue}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {"phase": phase},
    }


def queue(
    name: str,
    weight: int = 1,
    *,
    reclaimable: bool | None = None,
    capability: Mapping[str, str] | None = None,
    priority: int | None = None,
    state: str = "Open",
) -> Obj:
    spec: Obj = {"weight": weight}
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    if capability is not None:
        spec["capability"] = dict(capability)
    if priority is not None:
        spec["priority"] = priority
    return {"kind": "Queue", "metadata": {"name": name}, "spec": spec, "status": {"state": state}}


def priority_class(name: str, value: int) -> Obj:
    return {"kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def pdb(name: str, match_labels: Mapping[str, str], allowed: int, namespace: str = "ns") -> Obj:
    return {
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": dict(match_labels)}},
        "status": {"disruptionsAllowed": allowed},
    }


PRIORITY_CLASSES = [
    priority_class("low", 1),
    priority_class("mid", 10),
    priority_class("high", 100),
]


# --- sessions -----------------------------------------------------------------------------


def snapshot(objects: Iterable[Mapping[str, Any]]) -> ClusterSnapshot:
    return build_snapshot(collect(objects))


def run(objects: Iterable[Mapping[str, Any]], conf: SchedulerConfiguration) -> Session:
    """One full cycle with the configuration's actions; the closed session holds the result."""
    return run_session(snapshot(objects), conf)


def session(objects: Iterable[Mapping[str, Any]], conf: SchedulerConfiguration) -> Session:
    """An open session (no action run) for calling helpers directly."""
    return open_session(snapshot(objects), conf)


def evictions(ssn: Session) -> list[tuple[str, str, str, str]]:
    """(victim, node, reason, preemptor) of every committed eviction, in commit order."""
    return [
        (e.task.key, e.node, e.reason, e.preemptor.key if e.preemptor is not None else "")
        for e in ssn.evictions
    ]


def evicted_keys(ssn: Session) -> list[str]:
    return [e.task.key for e in ssn.evictions]


def pipelined(ssn: Session) -> dict[str, str]:
    """Pipelined task → node."""
    return {
        t.key: t.node_name
        for job in ssn.jobs.values()
        for t in job.tasks_with(TaskStatus.PIPELINED)
    }


def task_of(ssn: Session, key: str) -> TaskInfo:
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if task.key == key:
                return task
    raise KeyError(key)


def task(
    name: str,
    cpu: float = 1000,
    *,
    priority: int = 0,
    labels: dict[str, str] | None = None,
    started: str = "",
    job: str = "ns/j",
    role: str = "",
) -> TaskInfo:
    """A running task built directly, for helpers that need no cluster around it."""
    req = Resource(cpu, 0, {"pods": 1})
    return TaskInfo(
        uid=name,
        name=name,
        namespace="ns",
        job=job,
        resreq=req,
        init_resreq=req,
        status=TaskStatus.RUNNING,
        pod_priority=priority,
        labels=labels or {},
        start_time=started,
        role=role,
    )
