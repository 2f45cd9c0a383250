"""Shared builders for plugin tests: Kubernetes objects as plain dicts → snapshot → session.

Tests describe clusters the way a person reads them (nodes, pods, PodGroups, queues) and go
through the real conversion (``collect`` + ``build_snapshot``), so a plugin is exercised on the
same model the service builds from the API server.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import scheduler_core.plugins  # noqa: F401 - registers every plugin
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.cache.builder import build_snapshot
from scheduler_core.cache.objects import collect
from scheduler_core.conf import load_configuration
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.session import Session

Obj = dict[str, Any]

GROUP_ANNOTATION = "scheduling.k8s.io/group-name"


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    *,
    pods: int | None = 110,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, str]] = (),
    unschedulable: bool = False,
    extra: Mapping[str, str] | None = None,
) -> Obj:
    """A Ready node; ``pods=None`` leaves the pod count out of allocatable."""
    allocatable: dict[str, Any] = {"cpu": cpu, "memory": memory}
    if pods is not None:
        allocatable["pods"] = str(pods)
    allocatable.update(extra or {})
    spec: Obj = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
        "status": {
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str,
    *,
    namespace: str = "ns",
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    extra: Mapping[str, str] | None = None,
    node_name: str = "",
    phase: str | None = None,
    group: str | None = None,
    priority: int | None = None,
    priority_class: str = "",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    tolerations: Iterable[Mapping[str, str]] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Obj | None = None,
    created: str = "",
    deleting: bool = False,
) -> Obj:
    """A pod: Running when it has a node, Pending otherwise (unless ``phase`` says);
    ``deleting`` sets a deletionTimestamp (the task is Releasing)."""
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    requests.update(extra or {})
    notes = dict(annotations or {})
    if group is not None:
        notes[GROUP_ANNOTATION] = group
    spec: Obj = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    if affinity:
        spec["affinity"] = affinity
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "uid": f"{namespace}-{name}",
        "labels": dict(labels or {}),
        "annotations": notes,
    }
    if created:
        meta["creationTimestamp"] = created
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase or ("Running" if node_name else "Pending")},
    }


def podgroup(
    name: str,
    min_member: int = 1,
    *,
    namespace: str = "ns",
    queue: str = "default",
    priority_class: str = "",
    min_task_member: Mapping[str, int] | None = None,
    phase: str = "Running",
    created: str = "",
) -> Obj:
    spec: Obj = {"minMember": min_member, "queue": queue}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if min_task_member:
        spec["minTaskMember"] = dict(min_task_member)
    meta: Obj = {"name": name, "namespace": namespace}
    if created:
        meta["creationTimestamp"] = created
    return {"kind": "PodGroup", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def queue(name: str, weight: int = 1) -> Obj:
    return {
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": weight},
        "status": {"state": "Open"},
    }


def priority_class(name: str, value: int) -> Obj:
    return {"kind": "PriorityClass", "metadata": {"name": name}, "value": value}


def snapshot(objects: Iterable[Mapping[str, Any]]) -> ClusterSnapshot:
    return build_snapshot(collect(objects))


def session(
    objects: Iterable[Mapping[str, Any]], conf: str, *, apply_defaults: bool = True
) -> Session:
    """Open a real session on the objects with the tiers of ``conf`` (Volcano YAML)."""
    return open_session(snapshot(objects), load_configuration(conf, apply_defaults=apply_defaults))


def tiers(*plugin_lists: str) -> str:
    """``tiers("gang", "priority, drf")`` → YAML with one tier per argument."""
    lines = ['actions: ""', "tiers:"]
    for names in plugin_lists:
        lines.append("- plugins:")
        for plugin_name in (n.strip() for n in names.split(",")):
            lines.append(f"  - name: {plugin_name}")
    return "\n".join(lines) + "\n"


def task_of(ssn: Session, key: str) -> TaskInfo:
    """The session's task for ``ns/name``."""
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if task.key == key:
                return task
    raise KeyError(key)


def keys(tasks: Iterable[TaskInfo]) -> list[str]:
    return [t.key for t in tasks]


# --- fair-share builders (proportion / capacity tests) ------------------------------------


def fair_queue(
    name: str,
    weight: int = 1,
    *,
    capability: Mapping[str, str] | None = None,
    guarantee: Mapping[str, str] | None = None,
    deserved: Mapping[str, str] | None = None,
    parent: str = "",
    state: str = "Open",
    priority: int | None = None,
    reclaimable: bool | None = None,
) -> Obj:
    """A Queue with the fair-share fields of its spec; unset fields are left out."""
    spec: Obj = {"weight": weight}
    if capability is not None:
        spec["capability"] = dict(capability)
    if guarantee is not None:
        spec["guarantee"] = {"resource": dict(guarantee)}
    if deserved is not None:
        spec["deserved"] = dict(deserved)
    if parent:
        spec["parent"] = parent
    if priority is not None:
        spec["priority"] = priority
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    return {"kind": "Queue", "metadata": {"name": name}, "spec": spec, "status": {"state": state}}


def with_min_resources(pg: Obj, resources: Mapping[str, str]) -> Obj:
    """``pg`` with ``spec.minResources`` set (the PodGroup field enqueue checks)."""
    pg["spec"]["minResources"] = dict(resources)
    return pg
