"""Kubernetes objects (plain dicts, as the API serves them) → the engine's model.

Every error names the object and the field, so a person can find the bad line in a
50-document YAML dump or in the cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.api.duration import DurationError, parse_duration
from scheduler_core.api.node import NodeInfo, Taint
from scheduler_core.api.pdb import PodDisruptionBudget
from scheduler_core.api.quantity import QuantityError
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.storage import (
    CSINodeInfo,
    PersistentVolumeClaimInfo,
    PersistentVolumeInfo,
    SelectorTerm,
    StorageClassInfo,
)
from scheduler_core.api.task import (
    NodeSelectorRequirement,
    PodResourceClaim,
    PodVolume,
    TaskInfo,
    Toleration,
)
from scheduler_core.api.topology import NetworkTopologyRequest
from scheduler_core.api.types import PodGroupPhase, QueueState, task_status_from_pod
from scheduler_core.api.usage_history import (
    USAGE_HISTORY_ANNOTATION,
    UsageRecord,
    UsageRecordError,
    decode_record,
)
from scheduler_core.cache import convert_constraints
from scheduler_core.cache.convert_topology import network_topology_request

log = logging.getLogger(__name__)

GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
#: What sets a native (Workload API) PodGroup's job id apart from a Volcano PodGroup's of the
#: same name: ``namespace/native:name``. No object name holds a colon, so the two never meet.
NATIVE_JOB_PREFIX = "native:"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
PREEMPTABLE_KEY = "volcano.sh/preemptable"
TASK_SPEC_KEY = "volcano.sh/task-spec"
TASK_PRIORITY_ANNOTATION = "volcano.sh/task-priority"
HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"
#: How long a pod must have run before the reclaim loop may evict it: on a pod, a PodGroup
#: (every pod of the group) or a Queue (the default of its pods). Go duration syntax.
MIN_RUNTIME_ANNOTATION = "kube-queue-extender.io/min-runtime"
#: Set on a PersistentVolumeClaim by the volume controller once it is bound.
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"


class ConversionError(ValueError):
    """An object the engine cannot use; the message names the object and field."""


# --- small accessors ------------------------------------------------------------------------


def _map(obj: Any, key: str) -> dict[str, Any]:
    # Decoded JSON is made of dicts: the exact type test comes first because a ``Mapping``
    # test goes through the ABC machinery, a measurable part of converting a pod, which
    # happens for every watch event and most verb calls.
    if type(obj) is dict or isinstance(obj, Mapping):
        value = obj.get(key)
        if type(value) is dict or isinstance(value, dict):
            return value
    return {}


def _list(obj: Any, key: str) -> list[Any]:
    if type(obj) is dict or isinstance(obj, Mapping):
        value = obj.get(key)
        if type(value) is list or isinstance(value, list):
            return value
    return []


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def object_name(obj: Mapping[str, Any], kind: str) -> tuple[str, str]:
    """(namespace, name); a missing name is an error naming the kind."""
    meta = _map(obj, "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ConversionError(f"{kind}: metadata.name is required")
    namespace = meta.get("namespace")
    return (namespace if isinstance(namespace, str) else "", name)


def describe(kind: str, namespace: str, name: str) -> str:
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def resource_list(value: Any, where: str) -> Resource:
    if value is None:
        return Resource.empty()
    if not isinstance(value, dict):
        raise ConversionError(f"{where}: expected a map of resource quantities")
    try:
        return Resource.from_resource_list(value, where)
    except QuantityError as exc:
        raise ConversionError(str(exc)) from exc


def optional_resource_list(value: Any, where: str) -> Resource | None:
    """``None`` for an absent or empty list: Volcano checks ``len(list) != 0``."""
    if not value:
        return None
    return resource_list(value, where)


def parse_bool(text: str) -> bool | None:
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    return None


def _int_field(value: Any, where: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConversionError(f"{where}: expected an integer, got {value!r}")
    return value


# --- pods -----------------------------------------------------------------------------------


def _per_dimension_max(a: Resource, b: Resource) -> Resource:
    scalars: dict[str, float] | None = None
    if a.scalars is not None or b.scalars is not None:
        scalars = dict(a.scalars or {})
        for k, q in (b.scalars or {}).items():
            scalars[k] = max(scalars.get(k, 0.0), q)
    return Resource(
        max(a.milli_cpu, b.milli_cpu),
        max(a.memory, b.memory),
        scalars,
        max(a.max_task_num, b.max_task_num),
    )


def pod_request(pod: Mapping[str, Any], where: str) -> Resource:
    """Kubernetes' effective pod request (sidecar-aware init containers, overhead,
    pod-level resources) plus Volcano's implicit ``pods: 1``."""
    spec = _map(pod, "spec")
    pod_level = _map(_map(spec, "resources"), "requests")
    if pod_level:
        result = resource_list(pod_level, f"{where}: spec.resources.requests")
    else:
        result = Resource.empty()
        for i, container in enumerate(_list(spec, "containers")):
            requests = _map(_map(container, "resources"), "requests")
            result.add(resource_list(requests, f"{where}: spec.containers[{i}].resources.requests"))
        init_containers = _list(spec, "initContainers")
        if init_containers:
            # (Without them the request is the containers' sum itself.)
            result = _with_init_containers(result, init_containers, where)
    overhead = spec.get("overhead")
    if overhead:
        result.add(resource_list(overhead, f"{where}: spec.overhead"))
    result.add_scalar("pods", 1)
    return result


def _with_init_containers(result: Resource, init_containers: list[Any], where: str) -> Resource:
    """The containers' sum ``result`` with the init containers': restartable (sidecar) ones
    run beside the containers, each other one alone after the sidecars before it."""
    sidecars = Resource.empty()
    init_max = Resource.empty()
    for i, container in enumerate(init_containers):
        requests = _map(_map(container, "resources"), "requests")
        req = resource_list(requests, f"{where}: spec.initContainers[{i}].resources.requests")
        if container.get("restartPolicy") == "Always":
            result.add(req)
            sidecars.add(req)
            effective = sidecars.clone()
        else:
            effective = req.clone().add(sidecars)
        init_max = _per_dimension_max(init_max, effective)
    return _per_dimension_max(result, init_max)


def _tolerations(spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    out = []
    for t in _list(spec, "tolerations"):
        if isinstance(t, dict):
            out.append(
                Toleration(
                    key=str(t.get("key") or ""),
                    operator=str(t.get("operator") or "Equal"),
                    value=str(t.get("value") or ""),
                    effect=str(t.get("effect") or ""),
                )
            )
    return tuple(out)


def _requirements(raw: Any) -> tuple[NodeSelectorRequirement, ...]:
    out = []
    for expr in raw if isinstance(raw, list) else []:
        if isinstance(expr, dict) and isinstance(expr.get("key"), str):
            values = expr.get("values") or []
            out.append(
                NodeSelectorRequirement(
                    key=expr["key"],
                    operator=str(expr.get("operator") or "In"),
                    values=tuple(str(x) for x in values),
                )
            )
    return tuple(out)


def _required_affinity(spec: Mapping[str, Any]) -> tuple[tuple[NodeSelectorRequirement, ...], ...]:
    if not spec.get("affinity"):
        return ()
    required = _map(
        _map(_map(spec, "affinity"), "nodeAffinity"),
        "requiredDuringSchedulingIgnoredDuringExecution",
    )
    terms = []
    for term in _list(required, "nodeSelectorTerms"):
        if isinstance(term, dict):
            terms.append(_requirements(term.get("matchExpressions")))
    return tuple(terms)


def _preferred_affinity(
    spec: Mapping[str, Any],
) -> tuple[tuple[int, tuple[NodeSelectorRequirement, ...]], ...]:
    """(weight, expressions) of each preferred node-affinity term, for node scoring."""
    if not spec.get("affinity"):
        return ()
    preferred = _map(_map(spec, "affinity"), "nodeAffinity").get(
        "preferredDuringSchedulingIgnoredDuringExecution"
    )
    terms = []
    for term in preferred if isinstance(preferred, list) else []:
        if not isinstance(term, dict):
            continue
        weight = term.get("weight")
        if isinstance(weight, int) and not isinstance(weight, bool):
            expressions = _requirements(_map(term, "preference").get("matchExpressions"))
            terms.append((weight, expressions))
    return tuple(terms)


#: The volume source fields of ``spec.volumes[]`` (any other key is the volume's name).
_NOT_A_SOURCE = frozenset({"name"})


def pod_volumes(pod_name: str, spec: Mapping[str, Any]) -> tuple[PodVolume, ...]:
    """``spec.volumes`` by source kind. A generic ephemeral volume reads the claim
    Kubernetes names ``<pod>-<volume>``; an entry with no source at all is an ``emptyDir``
    (the API server's default)."""
    out = []
    for raw in _list(spec, "volumes"):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            continue
        name = raw["name"]
        sources = [k for k in raw if k not in _NOT_A_SOURCE and raw[k] is not None]
        kind = sources[0] if len(sources) == 1 else ("emptyDir" if not sources else "mixed")
        claim = ""
        driver = ""
        if kind == "persistentVolumeClaim":
            claim = str(_map(raw, kind).get("claimName") or "")
        elif kind == "ephemeral":
            claim = f"{pod_name}-{name}"
        elif kind == "csi":
            driver = str(_map(raw, kind).get("driver") or "")
        out.append(PodVolume(name=name, kind=kind, claim=claim, driver=driver))
    return tuple(out)


def pod_resource_claims(
    spec: Mapping[str, Any], status: Mapping[str, Any]
) -> tuple[PodResourceClaim, ...]:
    """``spec.resourceClaims`` with the ResourceClaim each names: directly, or (from a
    template) as ``status.resourceClaimStatuses`` reports once it is created."""
    if not spec.get("resourceClaims"):
        return ()
    created = {
        str(s.get("name")): str(s.get("resourceClaimName") or "")
        for s in _list(status, "resourceClaimStatuses")
        if isinstance(s, dict)
    }
    out = []
    for raw in _list(spec, "resourceClaims"):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            continue
        name = raw["name"]
        claim = str(raw.get("resourceClaimName") or "") or created.get(name, "")
        template = str(raw.get("resourceClaimTemplateName") or "")
        out.append(PodResourceClaim(name=name, claim=claim, template=template))
    return tuple(out)


def _scheduling_gates(spec: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(
        str(g.get("name") or "") for g in _list(spec, "schedulingGates") if isinstance(g, dict)
    )


def _preemptable(meta: Mapping[str, Any], default: bool) -> bool:
    """Annotation first, then label; unparsable is false; absent is ``default``."""
    for source in ("annotations", "labels"):
        values = _map(meta, source)
        if PREEMPTABLE_KEY in values:
            return parse_bool(str(values[PREEMPTABLE_KEY])) is True
    return default


def _min_runtime(annotations: Mapping[str, str], where: str) -> float | None:
    """The min-runtime annotation in seconds; a malformed one is ignored with a warning
    naming the object (the object itself stays usable), so the next level decides."""
    text = annotations.get(MIN_RUNTIME_ANNOTATION)
    if text is None:
        return None
    try:
        return parse_duration(text)
    except DurationError as exc:
        log.warning("%s: annotation %s ignored: %s", where, MIN_RUNTIME_ANNOTATION, exc)
        return None


def _condition_flags(status: Mapping[str, Any]) -> tuple[bool, bool]:
    """(disruption target, unschedulable), read in one pass over the pod's conditions:
    every pod event is converted, so the list is walked once, not once per question.

    - Disruption target: ``DisruptionTarget=True`` with reason ``PreemptionByScheduler``
      (kube-scheduler's preemption has chosen the pod as a victim).
    - Unschedulable: ``PodScheduled=False`` with reason ``Unschedulable``, kube-scheduler's
      last attempt found no node for it. A gated pod (``SchedulingGated``) or one whose
      attempt failed for another cause (``SchedulerError``) was not found unschedulable.
    """
    disruption = unschedulable = False
    for c in _list(status, "conditions"):
        if not isinstance(c, dict):
            continue
        kind, value, reason = c.get("type"), c.get("status"), c.get("reason")
        if kind == "DisruptionTarget":
            disruption = disruption or (value == "True" and reason == "PreemptionByScheduler")
        elif kind == "PodScheduled":
            unschedulable = unschedulable or (value == "False" and reason == "Unschedulable")
    return disruption, unschedulable


def synthesized_group_name(pod_uid: str) -> str:
    """The PodGroup name Volcano's PodGroup controller gives a lone pod."""
    return f"podgroup-{pod_uid}"


def native_job_id(namespace: str, name: str) -> str:
    """The job id of a native PodGroup (see ``NATIVE_JOB_PREFIX``)."""
    return f"{namespace}/{NATIVE_JOB_PREFIX}{name}"


def pod_scheduling_group(pod: Mapping[str, Any]) -> str:
    """The native PodGroup a pod names in ``spec.schedulingGroup.podGroupName``, or ""."""
    name = _map(_map(pod, "spec"), "schedulingGroup").get("podGroupName")
    return name if isinstance(name, str) else ""


def pod_volcano_group(pod: Mapping[str, Any]) -> str:
    """The Volcano PodGroup a pod names in its group-name annotation, or ""."""
    name = _map(_map(pod, "metadata"), "annotations").get(GROUP_NAME_ANNOTATION)
    return name if isinstance(name, str) else ""


def two_groups(pod: Mapping[str, Any]) -> str:
    """Why a pod cannot be placed for naming two gangs (a Volcano PodGroup and a native one:
    kube-scheduler would gang it by one and the queue rules judge it by the other), or ""."""
    native, volcano = pod_scheduling_group(pod), pod_volcano_group(pod)
    if not native or not volcano:
        return ""
    return (
        f"the pod names two pod groups, Volcano PodGroup {volcano} (annotation "
        f"{GROUP_NAME_ANNOTATION}) and Kubernetes PodGroup {native} "
        "(spec.schedulingGroup.podGroupName); remove one of them"
    )


def pod_job_id(pod: Mapping[str, Any]) -> tuple[str, bool]:
    """(job id, synthesized?) of a pod: its native PodGroup (which kube-scheduler gangs it by,
    so it wins when a pod names both), its Volcano PodGroup, or a group of one."""
    return _job_id(_map(pod, "metadata"), _map(pod, "spec"))


def _job_id(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> tuple[str, bool]:
    """``pod_job_id`` of the pod with this metadata and spec."""
    namespace = str(meta.get("namespace") or "default")
    group = spec.get("schedulingGroup")
    native = _map(spec, "schedulingGroup").get("podGroupName") if group else None
    if isinstance(native, str) and native:
        return native_job_id(namespace, native), False
    group = _map(meta, "annotations").get(GROUP_NAME_ANNOTATION)
    if isinstance(group, str) and group:
        return f"{namespace}/{group}", False
    uid = str(meta.get("uid") or f"{namespace}-{meta.get('name')}")
    return f"{namespace}/{synthesized_group_name(uid)}", True


def pod_queue_annotation(pod: Mapping[str, Any]) -> str:
    value = _map(_map(pod, "metadata"), "annotations").get(QUEUE_NAME_ANNOTATION)
    return value if isinstance(value, str) else ""


def named_queue(obj: Mapping[str, Any]) -> str:
    """The queue an object names with ``scheduling.volcano.sh/queue-name``, as an annotation
    or else a label; "" when it names none."""
    meta = _map(obj, "metadata")
    for source in ("annotations", "labels"):
        value = _map(meta, source).get(QUEUE_NAME_ANNOTATION)
        if isinstance(value, str) and value:
            return value
    return ""


def pod_to_task(
    pod: Mapping[str, Any], priority_classes: Mapping[str, int] | None = None
) -> TaskInfo:
    namespace, name = object_name(pod, "Pod")
    namespace = namespace or "default"
    where = describe("Pod", namespace, name)
    meta = _map(pod, "metadata")
    spec = _map(pod, "spec")
    status = _map(pod, "status")
    uid = str(meta.get("uid") or f"{namespace}/{name}")
    request = pod_request(pod, where)
    annotations = _str_map(meta.get("annotations"))
    labels = _str_map(meta.get("labels"))

    pod_priority_value = spec.get("priority")
    class_name = str(spec.get("priorityClassName") or "")
    if not isinstance(pod_priority_value, int) or isinstance(pod_priority_value, bool):
        pod_priority_value = (priority_classes or {}).get(class_name) if class_name else None
    pod_priority = pod_priority_value if isinstance(pod_priority_value, int) else 0
    priority = pod_priority if isinstance(pod_priority_value, int) else 1
    override = annotations.get(TASK_PRIORITY_ANNOTATION)
    if override is not None:
        try:
            parsed = int(override)
            if -(2**31) <= parsed < 2**31:
                priority = parsed
        except ValueError:
            pass

    node_name = str(spec.get("nodeName") or "")
    deleting = bool(meta.get("deletionTimestamp"))
    job_id, _ = _job_id(meta, spec)
    disruption_target, unschedulable = _condition_flags(status)
    try:
        ports = convert_constraints.host_ports(spec)
        affinity = convert_constraints.pod_affinity(spec, namespace, labels)
        spread = convert_constraints.spread_constraints(spec, labels)
    except ValueError as exc:
        raise ConversionError(f"{where}: {exc}") from None
    return TaskInfo(
        uid=uid,
        name=name,
        namespace=namespace,
        job=job_id,
        resreq=request,
        init_resreq=request,
        status=task_status_from_pod(str(status.get("phase") or "Pending"), node_name, deleting),
        node_name=node_name,
        priority=priority,
        pod_priority=pod_priority,
        preemptable=_preemptable(meta, default=True),
        best_effort=request.is_empty(),
        role=annotations.get(TASK_SPEC_KEY) or labels.get(TASK_SPEC_KEY, ""),
        priority_class_name=class_name,
        preemption_policy=str(spec.get("preemptionPolicy") or ""),
        nominated_node_name=str(status.get("nominatedNodeName") or ""),
        scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
        creation_timestamp=str(meta.get("creationTimestamp") or ""),
        start_time=str(status.get("startTime") or ""),
        gated=bool(_list(spec, "schedulingGates")),
        scheduling_gates=_scheduling_gates(spec),
        volumes=pod_volumes(name, spec),
        resource_claims=pod_resource_claims(spec, status),
        disruption_target=disruption_target,
        unschedulable=unschedulable,
        node_selector=_str_map(spec.get("nodeSelector")),
        required_affinity=_required_affinity(spec),
        preferred_affinity=_preferred_affinity(spec),
        tolerations=_tolerations(spec),
        labels=labels,
        host_ports=ports,
        pod_affinity=affinity,
        spread_constraints=spread,
        min_runtime=_min_runtime(annotations, where),
    )


def placement_convertible(old: TaskInfo, pod: Mapping[str, Any]) -> bool:
    """Whether ``replaced_placement`` gives ``pod``'s task from ``old``, the conversion of
    an earlier version of it that differed in nothing but ``spec.nodeName`` and ``status``:
    not when its priority is looked up by class (the classes may have changed since), nor
    when it has device claims (their status is read, and the cache charges them)."""
    priority = _map(pod, "spec").get("priority")
    return type(priority) is int and not old.resource_claims


def replaced_placement(old: TaskInfo, pod: Mapping[str, Any]) -> TaskInfo:
    """``pod``'s task made from ``old``, when the pod changed only where a bind, a status
    update or a nomination changes it (``spec.nodeName`` and ``status``) since ``old`` was
    converted, and ``placement_convertible`` says so: the fields read there are read again,
    the rest is ``old``'s (requests and constraints shared, as clones share them). What
    ``pod_to_task`` gives, at a fifth of its cost: every bound pod takes this way."""
    meta, spec, status = _map(pod, "metadata"), _map(pod, "spec"), _map(pod, "status")
    node_name = str(spec.get("nodeName") or "")
    task = old.clone()
    task.node_name = node_name
    task.status = task_status_from_pod(
        str(status.get("phase") or "Pending"), node_name, bool(meta.get("deletionTimestamp"))
    )
    task.nominated_node_name = str(status.get("nominatedNodeName") or "")
    task.start_time = str(status.get("startTime") or "")
    task.disruption_target, task.unschedulable = _condition_flags(status)
    return task


# --- nodes ----------------------------------------------------------------------------------


def node_to_info(node: Mapping[str, Any]) -> NodeInfo:
    _, name = object_name(node, "Node")
    where = describe("Node", "", name)
    spec = _map(node, "spec")
    status = _map(node, "status")
    allocatable = resource_list(status.get("allocatable"), f"{where}: status.allocatable")
    capacity_raw = status.get("capacity")
    capacity = (
        resource_list(capacity_raw, f"{where}: status.capacity")
        if capacity_raw
        else allocatable.clone()
    )
    taints = tuple(
        Taint(
            key=str(t.get("key") or ""),
            value=str(t.get("value") or ""),
            effect=str(t.get("effect") or ""),
        )
        for t in _list(spec, "taints")
        if isinstance(t, dict)
    )
    ready = True
    for cond in _list(status, "conditions"):
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            ready = cond.get("status") == "True"
    return NodeInfo.new(
        name,
        allocatable,
        capacity,
        labels=_str_map(_map(node, "metadata").get("labels")),
        taints=taints,
        unschedulable=bool(spec.get("unschedulable")),
        ready=ready,
    )


# --- Volcano CRDs ---------------------------------------------------------------------------


def queue_to_info(queue: Mapping[str, Any]) -> QueueInfo:
    _, name = object_name(queue, "Queue")
    where = describe("Queue", "", name)
    meta = _map(queue, "metadata")
    spec = _map(queue, "spec")
    status = _map(queue, "status")
    reclaimable = spec.get("reclaimable")
    if reclaimable is not None and not isinstance(reclaimable, bool):
        raise ConversionError(f"{where}: spec.reclaimable must be true or false")
    state_text = status.get("state")
    try:
        state = QueueState(state_text) if state_text else QueueState.OPEN
    except ValueError as exc:
        raise ConversionError(f"{where}: status.state {state_text!r} is not a queue state") from exc
    annotations = _str_map(meta.get("annotations"))
    record, record_error = _usage_record(annotations)
    return QueueInfo(
        name=name,
        weight=_int_field(spec.get("weight"), f"{where}: spec.weight", 1),
        capability=optional_resource_list(spec.get("capability"), f"{where}: spec.capability"),
        guarantee=optional_resource_list(
            _map(spec, "guarantee").get("resource"), f"{where}: spec.guarantee.resource"
        ),
        deserved=optional_resource_list(spec.get("deserved"), f"{where}: spec.deserved"),
        reclaimable_spec=reclaimable,
        priority=_int_field(spec.get("priority"), f"{where}: spec.priority", 0),
        parent=str(spec.get("parent") or ""),
        state=state,
        hierarchy=annotations.get(HIERARCHY_ANNOTATION, ""),
        hierarchy_weights=annotations.get(HIERARCHY_WEIGHTS_ANNOTATION, ""),
        creation_timestamp=str(meta.get("creationTimestamp") or ""),
        min_runtime=_min_runtime(annotations, where),
        usage_record=record,
        usage_record_error=record_error,
    )


def _usage_record(annotations: Mapping[str, str]) -> tuple[UsageRecord | None, str]:
    """The queue's persisted usage history, or why it is refused: a bad record must not
    make the whole Queue unreadable (its spec is fine), only start its history from zero."""
    text = annotations.get(USAGE_HISTORY_ANNOTATION)
    if text is None:
        return None, ""
    try:
        return decode_record(text), ""
    except UsageRecordError as exc:
        return None, f"annotation {USAGE_HISTORY_ANNOTATION} refused ({exc})"


@dataclass(slots=True)
class PodGroupInfo:
    """The PodGroup fields a JobInfo is built from."""

    namespace: str
    name: str
    queue: str
    min_member: int
    min_task_member: dict[str, int] = field(default_factory=dict)
    min_resources: Resource | None = None
    priority_class_name: str = ""
    phase: PodGroupPhase = PodGroupPhase.PENDING
    preemptable: bool = False
    creation_timestamp: str = ""
    min_runtime: float | None = None
    #: ``spec.networkTopology``; a malformed one carries its sentence (never refuses the
    #: PodGroup: its gang and queue stay readable).
    network_topology: NetworkTopologyRequest | None = None
    #: ``volcano`` or ``native`` (see ``JobInfo.source``).
    source: str = "volcano"
    #: A native PodGroup's own priority (``spec.priority``), ahead of its class's value.
    priority: int | None = None
    #: A native PodGroup names its queue on its labels or annotations, or not at all (its
    #: members may then name it): whether ``queue`` was named rather than defaulted.
    queue_named: bool = True
    topology_keys: tuple[str, ...] = ()

    @property
    def uid(self) -> str:
        if self.source == "native":
            return native_job_id(self.namespace, self.name)
        return f"{self.namespace}/{self.name}"


def podgroup_to_info(pg: Mapping[str, Any], default_queue: str = "default") -> PodGroupInfo:
    namespace, name = object_name(pg, "PodGroup")
    namespace = namespace or "default"
    where = describe("PodGroup", namespace, name)
    meta = _map(pg, "metadata")
    spec = _map(pg, "spec")
    status = _map(pg, "status")
    min_task_member: dict[str, int] = {}
    for role, count in _map(spec, "minTaskMember").items():
        min_task_member[str(role)] = _int_field(count, f"{where}: spec.minTaskMember.{role}", 0)
    phase_text = status.get("phase")
    try:
        phase = PodGroupPhase(phase_text) if phase_text else PodGroupPhase.PENDING
    except ValueError as exc:
        raise ConversionError(f"{where}: status.phase {phase_text!r} is not a phase") from exc
    min_resources_raw = spec.get("minResources")
    return PodGroupInfo(
        namespace=namespace,
        name=name,
        queue=str(spec.get("queue") or default_queue),
        min_member=_int_field(spec.get("minMember"), f"{where}: spec.minMember", 1),
        min_task_member=min_task_member,
        min_resources=(
            resource_list(min_resources_raw, f"{where}: spec.minResources")
            if min_resources_raw is not None
            else None
        ),
        priority_class_name=str(spec.get("priorityClassName") or ""),
        phase=phase,
        preemptable=_preemptable(meta, default=False),
        creation_timestamp=str(meta.get("creationTimestamp") or ""),
        min_runtime=_min_runtime(_str_map(meta.get("annotations")), where),
        network_topology=network_topology_request(spec.get("networkTopology")),
    )


def priority_class_value(pc: Mapping[str, Any]) -> tuple[str, int, bool]:
    _, name = object_name(pc, "PriorityClass")
    value = pc.get("value")
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConversionError(f"PriorityClass {name}: value is required and must be an integer")
    return name, value, bool(pc.get("globalDefault"))


def namespace_labels(ns: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """(name, labels) of a Namespace: what pod affinity terms' ``namespaceSelector`` reads."""
    _, name = object_name(ns, "Namespace")
    return name, _str_map(_map(ns, "metadata").get("labels"))


def pdb_to_info(pdb: Mapping[str, Any]) -> PodDisruptionBudget:
    namespace, name = object_name(pdb, "PodDisruptionBudget")
    spec = _map(pdb, "spec")
    selector = spec.get("selector")
    status = _map(pdb, "status")
    allowed = status.get("disruptionsAllowed")
    return PodDisruptionBudget(
        name=name,
        namespace=namespace or "default",
        match_labels=_str_map(_map(selector, "matchLabels")) if selector is not None else {},
        match_expressions=_requirements(
            selector.get("matchExpressions") if isinstance(selector, dict) else None
        ),
        disruptions_allowed=allowed if isinstance(allowed, int) else 0,
        selects_nothing=selector is None,
    )


# --- storage and devices --------------------------------------------------------------------


def selector_terms(raw: Any) -> tuple[SelectorTerm, ...]:
    """A ``NodeSelector``'s terms with their label expressions and field expressions."""
    terms = []
    for term in _list(raw, "nodeSelectorTerms"):
        if isinstance(term, dict):
            terms.append(
                SelectorTerm(
                    expressions=_requirements(term.get("matchExpressions")),
                    fields=_requirements(term.get("matchFields")),
                )
            )
    return tuple(terms)


def _access_modes(spec: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(m) for m in _list(spec, "accessModes"))


def pvc_to_info(pvc: Mapping[str, Any]) -> PersistentVolumeClaimInfo:
    namespace, name = object_name(pvc, "PersistentVolumeClaim")
    spec = _map(pvc, "spec")
    return PersistentVolumeClaimInfo(
        namespace=namespace or "default",
        name=name,
        volume_name=str(spec.get("volumeName") or ""),
        phase=str(_map(pvc, "status").get("phase") or ""),
        storage_class=str(spec.get("storageClassName") or ""),
        access_modes=_access_modes(spec),
        deleting=bool(_map(pvc, "metadata").get("deletionTimestamp")),
        bind_completed=BIND_COMPLETED_ANNOTATION in _map(_map(pvc, "metadata"), "annotations"),
    )


#: The fields of a PersistentVolume's spec that are not its volume source.
_PV_NOT_A_SOURCE = frozenset(
    {
        "accessModes",
        "capacity",
        "claimRef",
        "mountOptions",
        "nodeAffinity",
        "persistentVolumeReclaimPolicy",
        "storageClassName",
        "volumeMode",
        "volumeAttributesClassName",
    }
)


def pv_to_info(pv: Mapping[str, Any]) -> PersistentVolumeInfo:
    _, name = object_name(pv, "PersistentVolume")
    spec = _map(pv, "spec")
    required = _map(_map(spec, "nodeAffinity"), "required")
    csi = _map(spec, "csi")
    return PersistentVolumeInfo(
        name=name,
        node_affinity=selector_terms(required) if required else None,
        labels=_str_map(_map(pv, "metadata").get("labels")),
        csi_driver=str(csi.get("driver") or ""),
        csi_handle=str(csi.get("volumeHandle") or ""),
        source=next((k for k in spec if k not in _PV_NOT_A_SOURCE), ""),
    )


def storage_class_to_info(sc: Mapping[str, Any]) -> StorageClassInfo:
    _, name = object_name(sc, "StorageClass")
    return StorageClassInfo(
        name=name,
        binding_mode=str(sc.get("volumeBindingMode") or "Immediate"),
        provisioner=str(sc.get("provisioner") or ""),
    )


def csinode_to_info(csinode: Mapping[str, Any]) -> CSINodeInfo:
    _, name = object_name(csinode, "CSINode")
    where = describe("CSINode", "", name)
    drivers: dict[str, int | None] = {}
    for i, driver in enumerate(_list(_map(csinode, "spec"), "drivers")):
        if not isinstance(driver, dict) or not isinstance(driver.get("name"), str):
            continue
        count = _map(driver, "allocatable").get("count")
        if count is not None:
            count = _int_field(count, f"{where}: spec.drivers[{i}].allocatable.count", 0)
        drivers[driver["name"]] = count
    return CSINodeInfo(name=name, drivers=drivers)
