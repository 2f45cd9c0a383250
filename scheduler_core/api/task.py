"""TaskInfo: one pod, reduced to what the scheduler reasons about."""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler_core.api.pod_constraints import HostPort, PodAffinity, TopologySpreadConstraint
from scheduler_core.api.resource import Resource
from scheduler_core.api.types import TaskStatus


@dataclass(slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


@dataclass(slots=True)
class NodeSelectorRequirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PodVolume:
    """One entry of ``spec.volumes``: ``kind`` is its source's field name
    (``persistentVolumeClaim``, ``ephemeral``, ``emptyDir``, ``csi``...); ``claim`` the
    PersistentVolumeClaim it reads (for an ephemeral volume, the ``<pod>-<volume>`` claim
    Kubernetes creates for it); ``driver`` an inline CSI volume's driver."""

    name: str
    kind: str
    claim: str = ""
    driver: str = ""


@dataclass(frozen=True, slots=True)
class PodResourceClaim:
    """One entry of ``spec.resourceClaims``: ``claim`` is the ResourceClaim's name, empty
    while a template's claim is not created yet (``status.resourceClaimStatuses``)."""

    name: str
    claim: str = ""
    #: The ResourceClaimTemplate its claim is made from (empty: it names a claim).
    template: str = ""


@dataclass(slots=True)
class TaskInfo:
    """A pod as a Volcano task.

    ``job`` is the job id ``ns/podgroup`` (or ``ns/pod`` for a pod without a group, which we
    treat as a job of one). Scheduling constraints are kept slim: only the fields the
    predicates plugin reads, so 50,000 tasks stay small in memory.
    """

    uid: str
    name: str
    namespace: str
    job: str
    resreq: Resource
    init_resreq: Resource
    status: TaskStatus = TaskStatus.PENDING
    node_name: str = ""
    priority: int = 1
    pod_priority: int = 0
    preemptable: bool = True
    best_effort: bool = False
    role: str = ""
    priority_class_name: str = ""
    preemption_policy: str = ""
    nominated_node_name: str = ""
    scheduler_name: str = ""
    creation_timestamp: str = ""
    start_time: str = ""
    gated: bool = False
    disruption_target: bool = False
    #: kube-scheduler tried it and found no node (``PodScheduled=False``, reason
    #: ``Unschedulable``): only such a pod is worth a reclaim or preempt cycle, as only a
    #: failed Filter runs kube-scheduler's own PostFilter.
    unschedulable: bool = False
    node_selector: dict[str, str] = field(default_factory=dict)
    required_affinity: tuple[tuple[NodeSelectorRequirement, ...], ...] = ()
    preferred_affinity: tuple[tuple[int, tuple[NodeSelectorRequirement, ...]], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    volumes: tuple[PodVolume, ...] = ()
    resource_claims: tuple[PodResourceClaim, ...] = ()
    scheduling_gates: tuple[str, ...] = ()
    #: Host ports of its containers (NodePorts), its pod (anti-)affinity terms
    #: (InterPodAffinity; None when it has none) and its topology spread constraints.
    host_ports: tuple[HostPort, ...] = ()
    pod_affinity: PodAffinity | None = None
    spread_constraints: tuple[TopologySpreadConstraint, ...] = ()
    #: Seconds this pod must have run before reclaim may take it (its own annotation);
    #: None: its PodGroup's, its queue's or the configured default decides.
    min_runtime: float | None = None

    @property
    def required_anti_affinity(self) -> bool:
        """Whether it has required anti-affinity terms: such pods keep others away."""
        affinity = self.pod_affinity
        return affinity is not None and bool(affinity.required_anti)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def clone(self) -> TaskInfo:
        """A copy whose status and node can change without touching the original.

        Requests and constraints are shared: nothing in a session mutates them.
        """
        return TaskInfo(
            uid=self.uid,
            name=self.name,
            namespace=self.namespace,
            job=self.job,
            resreq=self.resreq,
            init_resreq=self.init_resreq,
            status=self.status,
            node_name=self.node_name,
            priority=self.priority,
            pod_priority=self.pod_priority,
            preemptable=self.preemptable,
            best_effort=self.best_effort,
            role=self.role,
            priority_class_name=self.priority_class_name,
            preemption_policy=self.preemption_policy,
            nominated_node_name=self.nominated_node_name,
            scheduler_name=self.scheduler_name,
            creation_timestamp=self.creation_timestamp,
            start_time=self.start_time,
            gated=self.gated,
            disruption_target=self.disruption_target,
            unschedulable=self.unschedulable,
            node_selector=self.node_selector,
            required_affinity=self.required_affinity,
            preferred_affinity=self.preferred_affinity,
            tolerations=self.tolerations,
            labels=self.labels,
            volumes=self.volumes,
            resource_claims=self.resource_claims,
            scheduling_gates=self.scheduling_gates,
            host_ports=self.host_ports,
            pod_affinity=self.pod_affinity,
            spread_constraints=self.spread_constraints,
            min_runtime=self.min_runtime,
        )

    def __str__(self) -> str:
        return f"Task ({self.uid}:{self.key}): job {self.job}, status {self.status}"
