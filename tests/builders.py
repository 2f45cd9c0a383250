"""The one test harness: Kubernetes objects as plain dicts → snapshot → session.

Tests describe clusters the way a person reads them (nodes, pods, PodGroups, queues) and go
through the real conversion (``collect`` + ``build_snapshot``), so plugins and actions run on
the model the service builds from the API server, with the real plugins.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

import scheduler_core.actions
import scheduler_core.plugins  # noqa: F401 - registers every plugin and action
from scheduler_core.api.resource import Resource
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.cache.builder import build_snapshot
from scheduler_core.cache.convert import GROUP_NAME_ANNOTATION, QUEUE_NAME_ANNOTATION
from scheduler_core.cache.objects import collect
from scheduler_core.conf import DEFAULT_CONF, SchedulerConfiguration, load_configuration
from scheduler_core.engine import run_session
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.session import Session

Obj = dict[str, Any]

PREEMPTABLE_KEY = "volcano.sh/preemptable"


def _default_without_binpack() -> str:
    """The default configuration's tiers without binpack: Volcano's Helm-chart tiers, whose
    node order (least-requested spreading) the action tests were written against."""
    raw = yaml.safe_load(DEFAULT_CONF)
    for tier in raw["tiers"]:
        tier["plugins"] = [p for p in tier["plugins"] if p["name"] != "binpack"]
    raw["actions"] = "{actions}"
    return yaml.safe_dump(raw, sort_keys=False) + "{configurations}"


#: The default tiers (less binpack) with preempt and reclaim on: gang and drf do not vote on
#: victims (``enablePreemptable: false``), so priority and conformance decide preempt and
#: proportion decides reclaim.
HELM_CONF = _default_without_binpack()

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


def tiers(*plugin_lists: str) -> str:
    """``tiers("gang", "priority, drf")`` → YAML with one tier per argument, no actions."""
    lines = ['actions: ""', "tiers:"]
    for names in plugin_lists:
        lines.append("- plugins:")
        for plugin_name in (n.strip() for n in names.split(",")):
            lines.append(f"  - name: {plugin_name}")
    return "\n".join(lines) + "\n"


# --- objects ------------------------------------------------------------------------------


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
    queue: str = "",
    priority: int | None = None,
    priority_class: str = "",
    preemptable: bool | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    tolerations: Iterable[Mapping[str, str]] = (),
    node_selector: Mapping[str, str] | None = None,
    affinity: Obj | None = None,
    started: str = "",
    created: str = "",
    nominated: str = "",
    preemption_policy: str = "",
    deleting: bool = False,
    disruption_target: bool = False,
    scheduler: str = "",
    host_ports: Iterable[Mapping[str, Any]] = (),
    spread: Iterable[Mapping[str, Any]] = (),
    spec: Mapping[str, Any] | None = None,
) -> Obj:
    """A pod: Running when it has a node, Pending otherwise (unless ``phase`` says);
    ``deleting`` sets a deletionTimestamp (the task is Releasing). ``spec`` sets raw spec
    fields last (``containers``, ``initContainers``, ``overhead``, pod-level ``resources``)
    for the conversion tests that need a shape the arguments do not model."""
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    requests.update(extra or {})
    notes = dict(annotations or {})
    if group is not None:
        notes[GROUP_NAME_ANNOTATION] = group
    if preemptable is not None:
        notes[PREEMPTABLE_KEY] = "true" if preemptable else "false"
    if queue:
        notes[QUEUE_NAME_ANNOTATION] = queue
    container: Obj = {"name": "c", "resources": {"requests": requests}}
    if host_ports:
        container["ports"] = [dict(p) for p in host_ports]
    body: Obj = {"containers": [container]}
    if spread:
        body["topologySpreadConstraints"] = [dict(c) for c in spread]
    if scheduler:
        body["schedulerName"] = scheduler
    if node_name:
        body["nodeName"] = node_name
    if priority is not None:
        body["priority"] = priority
    if priority_class:
        body["priorityClassName"] = priority_class
    if tolerations:
        body["tolerations"] = [dict(t) for t in tolerations]
    if node_selector:
        body["nodeSelector"] = dict(node_selector)
    if affinity:
        body["affinity"] = affinity
    if preemption_policy:
        body["preemptionPolicy"] = preemption_policy
    body.update(spec or {})
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
    status: Obj = {"phase": phase or ("Running" if node_name else "Pending")}
    if started:
        status["startTime"] = started
    if nominated:
        status["nominatedNodeName"] = nominated
    if disruption_target:
        status["conditions"] = [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ]
    return {"kind": "Pod", "metadata": meta, "spec": body, "status": status}


def namespace(name: str, labels: Mapping[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": dict(labels or {})},
    }


def selector(match_labels: Mapping[str, str] | None = None, *expressions: Obj) -> Obj:
    """A label selector: ``matchLabels`` and ``matchExpressions`` (built with ``expr``)."""
    out: Obj = {}
    if match_labels is not None:
        out["matchLabels"] = dict(match_labels)
    if expressions:
        out["matchExpressions"] = list(expressions)
    return out


def expr(key: str, operator: str, *values: str) -> Obj:
    out: Obj = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


def pod_term(
    labels: Obj | None,
    topology_key: str = "kubernetes.io/hostname",
    **fields: Any,
) -> Obj:
    """A pod affinity term: ``labels`` is its ``labelSelector`` (None leaves it out);
    ``fields`` adds ``namespaces``, ``namespaceSelector``, ``matchLabelKeys``..."""
    term: Obj = {"topologyKey": topology_key, **fields}
    if labels is not None:
        term["labelSelector"] = labels
    return term


def pod_affinity(
    required: Iterable[Obj] = (),
    anti: Iterable[Obj] = (),
    preferred: Iterable[tuple[int, Obj]] = (),
    preferred_anti: Iterable[tuple[int, Obj]] = (),
) -> Obj:
    """``spec.affinity`` with pod affinity and anti-affinity terms (from ``pod_term``)."""
    out: Obj = {}
    req = "requiredDuringSchedulingIgnoredDuringExecution"
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    for kind, hard, soft in (
        ("podAffinity", required, preferred),
        ("podAntiAffinity", anti, preferred_anti),
    ):
        block: Obj = {}
        if hard:
            block[req] = list(hard)
        if soft:
            block[pref] = [{"weight": w, "podAffinityTerm": t} for w, t in soft]
        if block:
            out[kind] = block
    return out


def spread_constraint(
    max_skew: int = 1,
    topology_key: str = "kubernetes.io/hostname",
    labels: Obj | None = None,
    when: str = "DoNotSchedule",
    **fields: Any,
) -> Obj:
    """A topology spread constraint; ``labels`` its ``labelSelector``."""
    out: Obj = {"maxSkew": max_skew, "topologyKey": topology_key, "whenUnsatisfiable": when}
    if labels is not None:
        out["labelSelector"] = labels
    out.update(fields)
    return out


def host_port(port: int, protocol: str | None = None, ip: str | None = None) -> Obj:
    out: Obj = {"containerPort": port, "hostPort": port}
    if protocol:
        out["protocol"] = protocol
    if ip:
        out["hostIP"] = ip
    return out


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


def with_min_resources(pg: Obj, resources: Mapping[str, str]) -> Obj:
    """``pg`` with ``spec.minResources`` set (the PodGroup field enqueue checks)."""
    pg["spec"]["minResources"] = dict(resources)
    return pg


def queue(
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
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
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


# --- sessions -----------------------------------------------------------------------------


def snapshot(objects: Iterable[Mapping[str, Any]]) -> ClusterSnapshot:
    return build_snapshot(collect(objects))


def session(
    objects: Iterable[Mapping[str, Any]],
    conf: SchedulerConfiguration | str,
    *,
    apply_defaults: bool = True,
) -> Session:
    """An open session (no action run) on the objects, for calling hooks and helpers
    directly; ``conf`` is a configuration or Volcano YAML (read with ``apply_defaults``)."""
    if isinstance(conf, str):
        conf = load_configuration(conf, apply_defaults=apply_defaults)
    return open_session(snapshot(objects), conf)


def run(objects: Iterable[Mapping[str, Any]], conf: SchedulerConfiguration) -> Session:
    """One full cycle with the configuration's actions; the closed session holds the result."""
    return run_session(snapshot(objects), conf)


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
    """The session's task for ``ns/name``."""
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if task.key == key:
                return task
    raise KeyError(key)


def keys(tasks: Iterable[TaskInfo]) -> list[str]:
    return [t.key for t in tasks]


# --- volumes kube-scheduler filters on -----------------------------------------------------


def with_claims(pod_obj: Obj, claims: Iterable[str]) -> Obj:
    """``pod_obj`` mounting each PersistentVolumeClaim (by name) as a volume."""
    pod_obj["spec"]["volumes"] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": claim}}
        for i, claim in enumerate(claims)
    ]
    return pod_obj


def local_pv(
    name: str, node_name: str, claim: tuple[str, str] | None = None, storage: str = "1Gi"
) -> Obj:
    """A local PersistentVolume on ``node_name`` (its required node affinity), bound to the
    claim ``(namespace, name)`` when given."""
    spec: Obj = {
        "capacity": {"storage": storage},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": "local",
        "local": {"path": f"/mnt/{name}"},
        "nodeAffinity": {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/hostname",
                                "operator": "In",
                                "values": [node_name],
                            }
                        ]
                    }
                ]
            }
        },
    }
    if claim is not None:
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": claim[0],
            "name": claim[1],
        }
    return {"kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def bound_pvc(name: str, volume: str, *, namespace: str = "ns", storage: str = "1Gi") -> Obj:
    """A PersistentVolumeClaim bound to ``volume`` (the PV controller's bind-completed mark set,
    which is what kube-scheduler's volume binding reads as bound)."""
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "volumeName": volume,
            "resources": {"requests": {"storage": storage}},
        },
    }


def unbound_pvc(name: str, storage_class: str, *, namespace: str = "ns") -> Obj:
    """A PersistentVolumeClaim no volume is bound to yet."""
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def no_provisioner_class(name: str, binding_mode: str = "WaitForFirstConsumer") -> Obj:
    """A StorageClass without a provisioner (local volumes), binding as ``binding_mode``."""
    return {
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": binding_mode,
    }
