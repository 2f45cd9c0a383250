"""The one test harness: Kubernetes objects as plain dicts → snapshot → session.

Tests describe clusters the way a person reads them (nodes, pods, PodGroups, queues) and go
through the real conversion (``collect`` + ``build_snapshot``), so plugins and actions run on
the model the service builds from the API server, with the real plugins.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple, TypeVar

import yaml

import scheduler_core.actions
import scheduler_core.plugins  # noqa: F401 - registers every plugin and action
from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.resource import Resource
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.topology import NetworkTopologyRequest, Topology, build_from_labels
from scheduler_core.api.types import TaskStatus
from scheduler_core.cache.builder import build_snapshot
from scheduler_core.cache.convert import GROUP_NAME_ANNOTATION, QUEUE_NAME_ANNOTATION
from scheduler_core.cache.objects import collect
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import (
    DEFAULT_CONF,
    SchedulerConfiguration,
    default_configuration,
    load_configuration,
)
from scheduler_core.engine import run_session
from scheduler_core.extender.decisions import FilterResult
from scheduler_core.extender.filter_verb import filter_pod
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.framework.registry import Plugin
from scheduler_core.framework.session import Session
from scheduler_core.framework.status import Code, Status

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

#: The default tiers with capacity in proportion's place, as Volcano's capacity guide writes
#: them: queues carry their deserved share in ``spec.deserved``.
CAPACITY_CONF = HELM_CONF.replace("name: proportion", "name: capacity")


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
    unschedulable: bool = False,
    scheduler: str = "",
    host_ports: Iterable[Mapping[str, Any]] = (),
    spread: Iterable[Mapping[str, Any]] = (),
    spec: Mapping[str, Any] | None = None,
    scheduling_group: str = "",
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
    if scheduling_group:
        body["schedulingGroup"] = {"podGroupName": scheduling_group}
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
    conditions: list[Obj] = []
    if disruption_target:
        conditions.append(
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        )
    if unschedulable:
        conditions.append({"type": "PodScheduled", "status": "False", "reason": "Unschedulable"})
    if conditions:
        status["conditions"] = conditions
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


def native_podgroup(
    name: str,
    min_count: int | None = 1,
    *,
    namespace: str = "ns",
    version: str = "v1alpha2",
    queue: str = "",
    queue_on: str = "labels",
    priority: int | None = None,
    priority_class: str = "",
    topology: Iterable[str] = (),
    disruption_mode: str = "",
) -> Obj:
    """A Kubernetes PodGroup (``scheduling.k8s.io``): a gang of ``min_count``, or a ``basic``
    group when None; ``queue`` goes on its ``labels`` or ``annotations`` (``queue_on``)."""
    policy: Obj = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    spec: Obj = {"schedulingPolicy": policy}
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": k} for k in topology]}
    if disruption_mode:
        spec["disruptionMode"] = disruption_mode
    meta: Obj = {"name": name, "namespace": namespace, "labels": {}, "annotations": {}}
    if queue:
        meta[queue_on][QUEUE_NAME_ANNOTATION] = queue
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": spec,
        "status": {},
    }


def with_min_resources(pg: Obj, resources: Mapping[str, str]) -> Obj:
    """``pg`` with ``spec.minResources`` set (the PodGroup field enqueue checks)."""
    pg["spec"]["minResources"] = dict(resources)
    return pg


def with_network_topology(
    pg: Obj, mode: str | None = "hard", tier: int | None = None, tier_name: str | None = None
) -> Obj:
    """``pg`` with ``spec.networkTopology`` (Volcano's topology request); ``None`` leaves a
    field out."""
    request: Obj = {}
    if mode is not None:
        request["mode"] = mode
    if tier is not None:
        request["highestTierAllowed"] = tier
    if tier_name is not None:
        request["highestTierName"] = tier_name
    pg["spec"]["networkTopology"] = request
    return pg


def hypernode(
    name: str,
    tier: int,
    *,
    nodes: Iterable[str] = (),
    hypernodes: Iterable[str] = (),
    node_regex: str = "",
    node_labels: Mapping[str, str] | None = None,
    tier_name: str = "",
) -> Obj:
    """A HyperNode (``topology.volcano.sh/v1alpha1``): exact node and HyperNode members, and
    optionally one node member by regular expression and one by labels."""
    members: list[Obj] = [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes]
    members += [{"type": "HyperNode", "selector": {"exactMatch": {"name": h}}} for h in hypernodes]
    if node_regex:
        members.append({"type": "Node", "selector": {"regexMatch": {"pattern": node_regex}}})
    if node_labels is not None:
        members.append(
            {"type": "Node", "selector": {"labelMatch": {"matchLabels": dict(node_labels)}}}
        )
    spec: Obj = {"tier": tier, "members": members}
    if tier_name:
        spec["tierName"] = tier_name
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": spec,
    }


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


# --- storage and devices --------------------------------------------------------------------


def claim_volume(name: str, claim: str) -> Obj:
    """A pod's ``spec.volumes`` entry reading PersistentVolumeClaim ``claim``."""
    return {"name": name, "persistentVolumeClaim": {"claimName": claim}}


def with_volumes(p: Obj, *volumes: Obj) -> Obj:
    """``p`` with ``spec.volumes`` set (raw entries: ``claim_volume``, ``{"name": "x",
    "emptyDir": {}}``, ``{"name": "e", "ephemeral": {...}}``...)."""
    p["spec"]["volumes"] = [dict(v) for v in volumes]
    return p


def with_resource_claims(p: Obj, *claims: str, statuses: Mapping[str, str] | None = None) -> Obj:
    """``p`` with ``spec.resourceClaims`` naming ResourceClaims directly (``claim``), or a
    template (``claim=template:<name>``) whose created claim ``statuses`` may name."""
    entries = []
    for claim in claims:
        if claim.startswith("template:"):
            name = claim.removeprefix("template:")
            entries.append({"name": name, "resourceClaimTemplateName": name})
        else:
            entries.append({"name": claim, "resourceClaimName": claim})
    p["spec"]["resourceClaims"] = entries
    if statuses:
        p["status"]["resourceClaimStatuses"] = [
            {"name": k, "resourceClaimName": v} for k, v in statuses.items()
        ]
    return p


def pvc(
    name: str,
    *,
    namespace: str = "ns",
    volume: str = "",
    storage_class: str = "standard",
    access_modes: Iterable[str] = ("ReadWriteOnce",),
    phase: str | None = None,
    deleting: bool = False,
) -> Obj:
    """A PersistentVolumeClaim, bound to ``volume`` when given (phase Bound, the volume
    controller's bind-completed annotation) else Pending."""
    spec: Obj = {"storageClassName": storage_class, "accessModes": list(access_modes)}
    meta: Obj = {"name": name, "namespace": namespace}
    if volume:
        spec["volumeName"] = volume
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "metadata": meta,
        "spec": spec,
        "status": {"phase": phase or ("Bound" if volume else "Pending")},
    }


def pv(
    name: str,
    *,
    hostname: str = "",
    node_affinity: Iterable[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
    csi_driver: str = "",
    source: Mapping[str, Any] | None = None,
) -> Obj:
    """A PersistentVolume: local to node ``hostname`` (the ``kubernetes.io/hostname`` label)
    when given, or with raw ``node_affinity`` terms; a CSI volume of ``csi_driver``; else of
    the raw ``source`` (``{"hostPath": {...}}`` by default)."""
    spec: Obj = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}
    terms = [dict(t) for t in node_affinity]
    if hostname:
        terms.append(
            {
                "matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [hostname]}
                ]
            }
        )
    if terms:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": terms}}
    if csi_driver:
        spec["csi"] = {"driver": csi_driver, "volumeHandle": f"handle-{name}"}
    elif hostname:
        spec["local"] = {"path": f"/mnt/{name}"}
    else:
        spec.update(source or {"hostPath": {"path": f"/tmp/{name}"}})
    return {
        "kind": "PersistentVolume",
        "apiVersion": "v1",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
    }


def storage_class(name: str, binding_mode: str = "WaitForFirstConsumer") -> Obj:
    return {
        "kind": "StorageClass",
        "apiVersion": "storage.k8s.io/v1",
        "metadata": {"name": name},
        "provisioner": "example.com/provisioner",
        "volumeBindingMode": binding_mode,
    }


def csinode(name: str, drivers: Mapping[str, int | None]) -> Obj:
    """A CSINode: driver -> its ``allocatable.count`` (None: the driver reports none)."""
    entries = []
    for driver, count in drivers.items():
        entry: Obj = {"name": driver, "nodeID": name}
        if count is not None:
            entry["allocatable"] = {"count": count}
        entries.append(entry)
    return {
        "kind": "CSINode",
        "apiVersion": "storage.k8s.io/v1",
        "metadata": {"name": name},
        "spec": {"drivers": entries},
    }


def resource_claim(
    name: str,
    *,
    namespace: str = "ns",
    device_class: str = "gpu.example.com",
    count: int = 1,
    allocated_on: str | None = None,
    reserved_for: Iterable[str] = (),
) -> Obj:
    """A ``resource.k8s.io/v1`` ResourceClaim for ``count`` devices of ``device_class``;
    allocated (devices chosen, usable on node ``allocated_on``) when that is given."""
    claim: Obj = {
        "kind": "ResourceClaim",
        "apiVersion": "resource.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "req",
                        "exactly": {
                            "deviceClassName": device_class,
                            "allocationMode": "ExactCount",
                            "count": count,
                        },
                    }
                ]
            }
        },
        "status": {},
    }
    if allocated_on is not None:
        claim["status"]["allocation"] = {
            "devices": {
                "results": [
                    {"request": "req", "driver": "d", "pool": allocated_on, "device": f"dev{i}"}
                    for i in range(count)
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": [allocated_on]}
                        ]
                    }
                ]
            },
        }
    if reserved_for:
        claim["status"]["reservedFor"] = [
            {"resource": "pods", "name": uid, "uid": uid} for uid in reserved_for
        ]
    return claim


def lease(
    name: str,
    namespace: str,
    holder: str | None,
    *,
    renew_time: datetime | None = None,
    duration: int = 15,
    transitions: int = 0,
    resource_version: str = "1",
) -> Any:
    """A ``coordination.k8s.io/v1`` Lease as the kubernetes client returns it (leader election
    reads and writes the typed object, not a dict)."""
    from kubernetes import client as k8s_client

    at = renew_time or datetime(2026, 1, 1, tzinfo=UTC)
    return k8s_client.V1Lease(
        metadata=k8s_client.V1ObjectMeta(
            name=name, namespace=namespace, resource_version=resource_version
        ),
        spec=k8s_client.V1LeaseSpec(
            holder_identity=holder,
            lease_duration_seconds=duration,
            acquire_time=at,
            renew_time=at,
            lease_transitions=transitions,
        ),
    )


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


class Occupant(NamedTuple):
    """A running pod of ``crowded_node``: its name, cpu request, pod priority and labels."""

    name: str
    cpu: str
    priority: int
    labels: Mapping[str, str] | None = None


def crowded_node(
    occupants: Iterable[Occupant],
    preemptor_cpu: str,
    *,
    node_cpu: str = "8",
    preemptor_affinity: Obj | None = None,
) -> list[Obj]:
    """One node ``n1`` holding ``occupants`` (one job ``victims`` of queue ``q2``, so their
    pod priorities alone order them as victims) and a waiting pod ``p`` of queue ``q1``:
    the shape a victim search on one node reads. Memory is plentiful: only cpu and the
    preemptor's affinity decide where it fits."""
    objs: list[Obj] = [
        node("n1", cpu=node_cpu, memory="64Gi", labels={"kubernetes.io/hostname": "n1"}),
        queue("q1"),
        queue("q2"),
        podgroup("victims", 1, queue="q2"),
        podgroup("waiting", 1, queue="q1", phase="Inqueue"),
        pod("p", group="waiting", cpu=preemptor_cpu, affinity=preemptor_affinity),
    ]
    objs += [
        pod(
            o.name, group="victims", cpu=o.cpu, priority=o.priority, labels=o.labels, node_name="n1"
        )
        for o in occupants
    ]
    return objs


# --- sessions -----------------------------------------------------------------------------


def snapshot(objects: Iterable[Mapping[str, Any]]) -> ClusterSnapshot:
    return build_snapshot(collect(objects))


def snapshot_with_label_topology(
    snap: ClusterSnapshot,
    levels: list[str],
    requests: Mapping[str, NetworkTopologyRequest] | None = None,
) -> ClusterSnapshot:
    """``snap`` with the network tree built from its nodes' labels (``levels`` widest first)
    and the named jobs' (by PodGroup name) topology requests set on them."""
    snap.topology = build_from_labels(levels, {n.name: n.labels for n in snap.nodes.values()})
    for job in snap.jobs.values():
        request = (requests or {}).get(job.name)
        if request is not None:
            job.network_topology = request
    return snap


def session(
    objects: Iterable[Mapping[str, Any]],
    conf: SchedulerConfiguration | str,
    *,
    apply_defaults: bool = True,
    memos: SessionMemos | None = None,
) -> Session:
    """An open session (no action run) on the objects, for calling hooks and helpers
    directly; ``conf`` is a configuration or Volcano YAML (read with ``apply_defaults``);
    ``memos`` those of an owner opening sessions one after another."""
    if isinstance(conf, str):
        conf = load_configuration(conf, apply_defaults=apply_defaults)
    return open_session(snapshot(objects), conf, memos=memos)


P = TypeVar("P", bound=Plugin)


def plugin_in(ssn: Session, cls: type[P]) -> P:
    """The session's instance of plugin ``cls`` (by its registered name)."""
    found = ssn.plugins[cls.name]
    assert isinstance(found, cls)
    return found


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


# --- queue accounting over a cluster state, with a fake clock -------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def accounting(
    objects: Iterable[Mapping[str, Any]], conf_text: str | None = None, ttl: float = 30.0
) -> tuple[QueueAccounting, Clock]:
    state = ClusterState()
    state.apply_objects(collect(objects))
    conf = load_configuration(conf_text) if conf_text else default_configuration()
    state.set_topology_levels(conf.network_topology.label_levels)  # as the backend does
    clock = Clock()
    return QueueAccounting(state, conf, assume_ttl=ttl, clock=clock), clock


# --- network topology ---------------------------------------------------------------------


def leaf_of(i: int) -> str:
    """In ``spine_leaf_cluster``: n0-n3 leaf a, n4-n7 leaf b (spine s), n8-n11 leaf c,
    n12-n15 leaf d (spine t)."""
    return "abcd"[i // 4]


def spine_of(i: int) -> str:
    return "s" if i < 8 else "t"


def spine_leaf_nodes(name: str) -> set[str]:
    """``s/b`` → the nodes of leaf b; ``s`` → the nodes of spine s."""
    spine, _, leaf = name.partition("/")
    return {f"n{i}" for i in range(16) if spine_of(i) == spine and (not leaf or leaf_of(i) == leaf)}


#: The label levels of ``spine_leaf_cluster``, widest first.
SPINE_LEAF = ("spine", "leaf")


def spine_leaf_cluster(
    busy: Mapping[str, str], gang: int, cpu: str = "4", running: Mapping[str, str] | None = None
) -> list[Obj]:
    """16 nodes of 4 CPU in 2 spines of 2 leaves of 4; ``busy`` puts a pod of the given CPU
    on a node; a gang of ``gang`` pending pods of ``cpu`` each (plus ``running`` members,
    name → node)."""
    objects: list[Obj] = [
        node(f"n{i}", cpu="4", labels={"spine": spine_of(i), "leaf": leaf_of(i)}) for i in range(16)
    ]
    for name, used in busy.items():
        objects.append(pod(f"busy-{name}", cpu=used, node_name=name))
    running = running or {}
    objects.append(podgroup("g", gang + len(running), phase="Inqueue"))
    objects += [pod(f"g-{i}", cpu=cpu, group="g") for i in range(gang)]
    objects += [pod(name, cpu=cpu, group="g", node_name=at) for name, at in running.items()]
    return objects


def with_label_topology(
    acct: QueueAccounting,
    levels: Sequence[str],
    requests: Mapping[str, NetworkTopologyRequest],
) -> None:
    """Give ``acct``'s cluster a topology built from its nodes' ``levels`` labels (widest
    first), and the PodGroups named in ``requests`` (``ns/name``) their request, as the
    cache would hold them from label levels and ``spec.networkTopology``."""
    with_label_tree(acct.state, levels)
    with_requests(acct.state, requests)


def with_label_tree(state: ClusterState, levels: Sequence[str]) -> None:
    """Every snapshot of ``state`` carries the tree its nodes' ``levels`` labels describe:
    built again when a node or its labels change, else the same tree object (as the cache
    keeps its tree: a choice made in it still holds)."""
    plain = state.shared_snapshot
    built: dict[tuple[tuple[str, tuple[tuple[str, str], ...]], ...], Topology] = {}

    def with_tree() -> ClusterSnapshot:
        snap = plain()
        labels = {n.name: n.labels for n in snap.nodes.values()}
        key = tuple(sorted((name, tuple(sorted(lab.items()))) for name, lab in labels.items()))
        if key not in built:
            built.clear()
            built[key] = build_from_labels(levels, labels)
        snap.topology = built[key]
        return snap

    setattr(state, "shared_snapshot", with_tree)  # noqa: B010 - a method replaced on one object


def with_requests(state: ClusterState, requests: Mapping[str, NetworkTopologyRequest]) -> None:
    """The PodGroups named in ``requests`` (``ns/name``) ask for a network topology."""
    with state.locked():
        for job in state.shared_snapshot().jobs.values():
            if job.uid in requests:
                job.network_topology = requests[job.uid]


def assume(acct: QueueAccounting, pod_obj: Mapping[str, Any], nodes: Iterable[str]) -> None:
    """Pass ``pod_obj`` (as the cache holds it, pending) through the filter verb on ``nodes``:
    it is then assumed, counted in its queue, and not bound yet."""
    result = filter_pod(acct, dict(pod_obj), list(nodes))
    assert result.passed, f"filter rejected the pod to assume: {result.failed}"
    assert acct.assumed, "filter passed but assumed nothing"


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


def filter_result(
    passed: Iterable[str],
    failed: Mapping[str, str] | None = None,
    unresolvable: Mapping[str, str] | None = None,
    codes: Mapping[str, str] | None = None,
    error: str = "",
) -> FilterResult:
    """A backend's filter result written the way the wire reads it: the reason per
    FailedNodes node (``Unschedulable``) and per FailedAndUnresolvableNodes node
    (``UnschedulableAndUnresolvable``, which wins for a node named in both), with the metric
    code per node from ``codes``."""
    codes = codes or {}

    def status(code: Code, node: str, reason: str) -> Status:
        return Status(code, [reason], reason_code=codes.get(node, ""))

    verdicts = {n: status(Code.UNSCHEDULABLE, n, r) for n, r in (failed or {}).items()}
    for n, r in (unresolvable or {}).items():
        verdicts[n] = status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, n, r)
    return FilterResult(list(passed), verdicts, error)


def device(
    name: str,
    attributes: Mapping[str, int | bool | str] | None = None,
    capacity: Mapping[str, str] | None = None,
) -> Obj:
    """A ResourceSlice device (``resource.k8s.io/v1``): attributes by (possibly qualified)
    name, capacities as quantities."""
    attrs: Obj = {}
    for key, value in (attributes or {}).items():
        kind = "bool" if isinstance(value, bool) else "int" if isinstance(value, int) else "string"
        attrs[key] = {kind: value}
    out: Obj = {"name": name}
    if attrs:
        out["attributes"] = attrs
    if capacity:
        out["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    return out


def resource_slice(
    name: str,
    node_name: str,
    *devices: Obj,
    driver: str = "gpu.example.com",
    pool: str | None = None,
    generation: int = 1,
    slice_count: int = 1,
) -> Obj:
    """A node-local ResourceSlice publishing ``devices`` (pool named after the node)."""
    return {
        "kind": "ResourceSlice",
        "apiVersion": "resource.k8s.io/v1",
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {
                "name": pool or node_name,
                "generation": generation,
                "resourceSliceCount": slice_count,
            },
            "devices": [dict(d) for d in devices],
        },
    }


def gpus(count: int, **attributes: int | bool | str) -> list[Obj]:
    """``count`` devices named gpu-0... with the same attributes."""
    return [device(f"gpu-{i}", attributes) for i in range(count)]


def device_class(
    name: str,
    *selectors: str,
    extended_resource_name: str | None = None,
    uid: str | None = None,
    resource_version: str = "1",
) -> Obj:
    """A DeviceClass whose CEL ``selectors`` must all accept a device."""
    spec: Obj = {"selectors": [{"cel": {"expression": e}} for e in selectors]}
    if extended_resource_name:
        spec["extendedResourceName"] = extended_resource_name
    return {
        "kind": "DeviceClass",
        "apiVersion": "resource.k8s.io/v1",
        "metadata": {
            "name": name,
            "uid": uid or f"uid-{name}",
            "resourceVersion": resource_version,
        },
        "spec": spec,
    }
