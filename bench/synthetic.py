"""A synthetic cluster at reference scale, as the API server would serve it.

Deterministic (everything follows from a ``ClusterSpec``), so the bench, the HTTP server
under test and the stand-in API server can each build the same cluster from a few numbers
instead of shipping 200 MB of JSON between processes. Objects are generated one at a time
and never all held together: 50,000 pod dicts of ~4 KB JSON would cost about 1 GiB.

Shape (reference scale, ``scale=1``):

* 5,000 nodes of 32 CPU / 128 GiB / 110 pods; about 70 % of CPU and memory requested.
* 20 parent queues x 9 leaves (``spec.parent``), plus the implicit ``root``/``default``;
  leaf weights 1..10. Proportion water-fills over the leaves that hold jobs.
* 2,000 pod groups of 25 pods: most Running and bound, one in ten waiting (half Inqueue,
  half Pending) with bigger pods, so total demand exceeds the cluster and some queues end
  up above their deserved share while others starve.
* A *dense zone* for the preempt verb: 100 nodes each holding 22 one-CPU, low-priority
  pods of queue ``dept-00-team-0`` (10 CPU left free), and a pending high-priority group in
  the same queue whose 20-CPU pods need exactly 10 of those pods gone on any dense node.
* Optionally (``probe=True``, for the sync bench) a tiny queue with a 10-CPU capability
  where binding one pending pod flips the filter verdict of another.
* Optionally (``fit=True``, the *fit variant*) every pod carries an ``app`` label (ten pod
  groups share an app), and one pod group in ten asks for required pod anti-affinity to its
  app over ``kubernetes.io/hostname``, another one in ten for a hard topology spread of its
  app over ``topology.kubernetes.io/zone`` (max skew 1): about 10 % of the pods each, waiting
  ones included, so the engine's inter-pod checks run where the reclaim loop looks.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

POD_GROUP_SIZE = 25
NODE_CPU = 32
NODE_MEMORY_GI = 128
NODE_PODS = 110
MEMORY_GI_PER_CPU = 4
RUNNING_CPU = (1, 2, 3, 4)
PENDING_CPU = 12
DENSE_PODS_PER_NODE = 22
DENSE_CPU = 1
PREEMPTOR_CPU = 20  # 10 CPU free on a dense node + 10 victims of 1 CPU: exactly 10 needed
PREEMPT_VICTIMS = 10
PRIORITY_CLASSES = {"bench-low": 100, "bench-mid": 500, "bench-high": 1000}
SCHEDULER_NAME = "queue-scheduler"
DENSE_QUEUE = "dept-00-team-0"
PROBE_QUEUE = "bench-probe"
PROBE_NAMESPACE = "bench-probe"
PROBE_NODE = "probe-node-0"
PROBE_RUNNING = 4
PROBE_CPU = 2
PROBE_CAPABILITY_CPU = 10  # 4 running x 2 CPU + one more pod fits; a second one does not
CREATED = "2026-11-20T08:00:00Z"
STARTED = "2026-11-20T08:05:00Z"

_POD, _NODE, _PODGROUP, _QUEUE = 1, 2, 3, 4


class Sink(Protocol):
    """What ``feed`` writes to: ``ClusterState`` and the informers' ``EventSink``."""

    def upsert(self, kind: str, obj: dict[str, Any]) -> None: ...

    def synced(self, kind: str) -> None: ...


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    nodes: int = 5000
    parents: int = 20
    leaves_per_parent: int = 9
    groups: int = 2000
    pending_every: int = 10  # one regular group in this many waits
    dense_nodes: int = 100
    probe: bool = False
    fit: bool = False
    seed: int = 7

    @classmethod
    def at_scale(cls, scale: float, *, probe: bool = False, fit: bool = False) -> ClusterSpec:
        """The reference shape shrunk by ``scale`` (``--quick`` is 0.1); queues shrink by
        parents, so a 1/10 cluster has 2 x 9 leaves."""
        if scale <= 0:
            raise ValueError("scale must be positive")
        nodes = max(8, round(5000 * scale))
        return cls(
            nodes=nodes,
            parents=max(1, round(20 * scale)),
            groups=max(8, round(2000 * scale)),
            dense_nodes=min(max(2, round(100 * scale)), nodes // 4),
            probe=probe,
            fit=fit,
        )


@dataclass(slots=True)
class Group:
    """One pod group (a Volcano job) and how its pods look."""

    index: int
    name: str
    namespace: str
    queue: str
    priority_class: str
    min_member: int
    cpu: int
    phase: str  # PodGroup status.phase: Running, Inqueue or Pending
    role: str  # dense | preemptor | running | pending

    @property
    def running(self) -> bool:
        return self.phase == "Running"


@dataclass(slots=True)
class _Node:
    free_cpu: int = NODE_CPU
    free_memory_gi: int = NODE_MEMORY_GI
    free_pods: int = NODE_PODS

    def take(self, cpu: int) -> bool:
        memory = cpu * MEMORY_GI_PER_CPU
        if cpu > self.free_cpu or memory > self.free_memory_gi or self.free_pods < 1:
            return False
        self.free_cpu -= cpu
        self.free_memory_gi -= memory
        self.free_pods -= 1
        return True


def _uid(kind: int, seed: int, index: int) -> str:
    return str(uuid.UUID(int=(kind << 96) | (seed << 64) | (0x4000 << 48) | index))


@dataclass
class SyntheticCluster:
    """The plan of a cluster (small), and its objects as plain dicts (generated on demand)."""

    spec: ClusterSpec
    queue_names: list[str] = field(init=False)
    node_names: list[str] = field(init=False)
    groups: list[Group] = field(init=False)

    def __post_init__(self) -> None:
        rng = random.Random(self.spec.seed)
        self._plan_queues(rng)
        self._plan_nodes()
        self._plan_groups()
        self._place_pods()

    # --- plan -------------------------------------------------------------------------------

    def _plan_queues(self, rng: random.Random) -> None:
        self.parents = [f"dept-{p:02d}" for p in range(self.spec.parents)]
        self.leaves = [
            f"{parent}-team-{leaf}"
            for parent in self.parents
            for leaf in range(self.spec.leaves_per_parent)
        ]
        self.weights = {name: rng.randint(1, 10) for name in self.parents + self.leaves}
        self.queue_names = self.parents + self.leaves
        if self.spec.probe:
            self.queue_names.append(PROBE_QUEUE)

    def _plan_nodes(self) -> None:
        n = self.spec.nodes
        self.node_names = [f"node-{i:05d}" for i in range(n)]
        stride = max(1, n // self.spec.dense_nodes)
        dense = [i * stride + stride // 2 for i in range(self.spec.dense_nodes)]
        self.dense_indices = [i for i in dense if i < n]
        dense_set = set(self.dense_indices)
        self.regular_indices = [i for i in range(n) if i not in dense_set]
        if self.spec.probe:
            self.node_names.append(PROBE_NODE)

    def _plan_groups(self) -> None:
        dense_pods = len(self.dense_indices) * DENSE_PODS_PER_NODE
        n_dense = math.ceil(dense_pods / POD_GROUP_SIZE)
        if n_dense + 2 > self.spec.groups:
            raise ValueError("too few pod groups for the dense zone")
        others = [leaf for leaf in self.leaves if leaf != DENSE_QUEUE] or [DENSE_QUEUE]
        groups: list[Group] = []
        for g in range(self.spec.groups):
            name, namespace = f"job-{g:04d}", f"ns-{g % 50:02d}"
            queue = others[(g * 37) % len(others)]
            if g < n_dense:
                group = Group(
                    g,
                    name,
                    namespace,
                    DENSE_QUEUE,
                    "bench-low",
                    5,
                    DENSE_CPU,
                    phase="Running",
                    role="dense",
                )
            elif g == n_dense:
                group = Group(
                    g,
                    name,
                    namespace,
                    DENSE_QUEUE,
                    "bench-high",
                    1,
                    PREEMPTOR_CPU,
                    phase="Inqueue",
                    role="preemptor",
                )
            elif g % self.spec.pending_every == 0:
                waiting = "Inqueue" if (g // self.spec.pending_every) % 2 == 0 else "Pending"
                members = POD_GROUP_SIZE if g % 3 else 10
                group = Group(
                    g,
                    name,
                    namespace,
                    queue,
                    "bench-mid",
                    members,
                    PENDING_CPU,
                    phase=waiting,
                    role="pending",
                )
            else:
                group = Group(
                    g,
                    name,
                    namespace,
                    queue,
                    ("bench-low", "bench-mid")[g % 2],
                    (1, 5, POD_GROUP_SIZE)[g % 3],
                    RUNNING_CPU[g % len(RUNNING_CPU)],
                    phase="Running",
                    role="running",
                )
            groups.append(group)
        self.groups = groups

    def _place_pods(self) -> None:
        """Dense-zone pods fill the dense nodes 22 a node; other running pods go round-robin
        over the regular nodes, first fit from a moving pointer (spread, ~70 % used)."""
        nodes = [_Node() for _ in range(self.spec.nodes)]
        self.placement: list[int] = [-1] * (len(self.groups) * POD_GROUP_SIZE)
        self.pods_on_dense: dict[int, list[int]] = {i: [] for i in self.dense_indices}
        dense_slots = [i for i in self.dense_indices for _ in range(DENSE_PODS_PER_NODE)]
        regular = self.regular_indices
        pointer = 0
        for group in self.groups:
            if not group.running:
                continue
            for member in range(POD_GROUP_SIZE):
                pod = group.index * POD_GROUP_SIZE + member
                if group.role == "dense" and dense_slots:
                    node = dense_slots.pop(0)
                    nodes[node].take(group.cpu)
                    self.pods_on_dense[node].append(pod)
                    self.placement[pod] = node
                    continue
                for attempt in range(len(regular)):
                    node = regular[(pointer + attempt) % len(regular)]
                    if nodes[node].take(group.cpu):
                        self.placement[pod] = node
                        pointer = (pointer + attempt + 1) % len(regular)
                        break
                else:
                    raise ValueError("the synthetic cluster does not fit its nodes")
        self._nodes = nodes

    # --- facts the benches use --------------------------------------------------------------

    @property
    def pod_count(self) -> int:
        return len(self.placement) + (PROBE_RUNNING + 2 if self.spec.probe else 0)

    def pending_pods(self) -> list[int]:
        """The first pod of every waiting regular group (filter and prioritize targets)."""
        return [g.index * POD_GROUP_SIZE for g in self.groups if g.role == "pending"]

    def preemptor_pod(self) -> int:
        group = next(g for g in self.groups if g.role == "preemptor")
        return group.index * POD_GROUP_SIZE

    def preempt_candidates(self) -> dict[str, list[str]]:
        """Dense node -> the UIDs of 10 of its low-priority pods: what kube-scheduler would
        propose for the preemptor (any 10 of them free exactly enough)."""
        return {
            self.node_names[node]: [self.pod_uid(p) for p in pods[:PREEMPT_VICTIMS]]
            for node, pods in self.pods_on_dense.items()
        }

    def pod_key(self, index: int) -> str:
        group = self.groups[index // POD_GROUP_SIZE]
        return f"{group.namespace}/{group.name}-{index % POD_GROUP_SIZE}"

    def pod_uid(self, index: int) -> str:
        return _uid(_POD, self.spec.seed, index)

    def summary(self) -> dict[str, Any]:
        allocatable_cpu = self.spec.nodes * NODE_CPU
        used_cpu = sum(NODE_CPU - n.free_cpu for n in self._nodes)
        used_mem = sum(NODE_MEMORY_GI - n.free_memory_gi for n in self._nodes)
        running = sum(1 for p in self.placement if p >= 0)
        sample = [self.pod(i) for i in range(0, len(self.placement), 997)]
        pod_bytes = sum(len(orjson.dumps(p)) for p in sample) / max(1, len(sample))
        return {
            "nodes": len(self.node_names),
            "pods": self.pod_count,
            "pods_running": running + (PROBE_RUNNING if self.spec.probe else 0),
            "queues": len(self.queue_names),
            "leaf_queues": len(self.leaves),
            "podgroups": len(self.groups) + (1 if self.spec.probe else 0),
            "pending_groups": sum(1 for g in self.groups if not g.running),
            "dense_nodes": len(self.dense_indices),
            "cpu_used_fraction": round(used_cpu / allocatable_cpu, 3),
            "memory_used_fraction": round(used_mem / (self.spec.nodes * NODE_MEMORY_GI), 3),
            "pod_json_bytes_avg": round(pod_bytes),
        }

    # --- objects ----------------------------------------------------------------------------

    def objects_by_kind(self) -> Iterator[tuple[str, Iterator[dict[str, Any]]]]:
        """Kinds in dependency order (a pod's group and queue come before it)."""
        yield "PriorityClass", self.priority_classes()
        yield "Queue", self.queues()
        yield "Node", self.nodes()
        yield "PodGroup", self.podgroups()
        yield "PodDisruptionBudget", self.pdbs()
        yield "StorageClass", iter(())
        yield "CSINode", iter(())
        yield "ResourceClaim", iter(())
        yield "ResourceClaimTemplate", iter(())
        yield "ResourceSlice", iter(())
        yield "DeviceClass", iter(())
        yield "PersistentVolume", self.volumes()
        yield "PersistentVolumeClaim", self.claims()
        yield "Namespace", self.namespaces()
        yield "Pod", self.pods()

    def feed(self, sink: Sink) -> None:
        """Every object through ``sink.upsert`` (the informers' path), then ``synced``."""
        for kind, objs in self.objects_by_kind():
            for obj in objs:
                sink.upsert(kind, obj)
            sink.synced(kind)

    def namespaces(self) -> Iterator[dict[str, Any]]:
        """The namespaces the pod groups live in (``ns-00`` .. ``ns-49``)."""
        names = sorted({group.namespace for group in self.groups})
        for name in names:
            yield {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
            }

    def priority_classes(self) -> Iterator[dict[str, Any]]:
        for name, value in PRIORITY_CLASSES.items():
            yield {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name, "creationTimestamp": CREATED},
                "value": value,
                "globalDefault": False,
                "preemptionPolicy": "PreemptLowerPriority",
                "description": f"benchmark priority {value}",
            }

    def queues(self) -> Iterator[dict[str, Any]]:
        dense_request = self._queue_cpu(DENSE_QUEUE)
        for i, name in enumerate(self.parents + self.leaves):
            spec: dict[str, Any] = {"weight": self.weights[name], "reclaimable": True}
            if name in self.leaves:
                spec["parent"] = name.rsplit("-team-", 1)[0]
            if name == DENSE_QUEUE:
                # Guaranteed its whole demand: the preemptor's queue stays allocatable.
                spec["guarantee"] = {"resource": _resources(dense_request)}
            yield _queue(name, i, spec)
        if self.spec.probe:
            capability = _resources(PROBE_CAPABILITY_CPU)
            yield _queue(PROBE_QUEUE, 999, {"weight": 1, "capability": capability})

    def _queue_cpu(self, queue: str) -> int:
        return sum(g.cpu * POD_GROUP_SIZE for g in self.groups if g.queue == queue)

    def nodes(self) -> Iterator[dict[str, Any]]:
        for i in range(self.spec.nodes):
            yield self.node(i)
        if self.spec.probe:
            yield _node(PROBE_NODE, len(self.node_names) - 1, self.spec.seed)

    def node(self, index: int) -> dict[str, Any]:
        return _node(self.node_names[index], index, self.spec.seed)

    def podgroups(self) -> Iterator[dict[str, Any]]:
        for group in self.groups:
            yield self._podgroup(group)
        if self.spec.probe:
            yield self._podgroup(_probe_group())

    def _podgroup(self, group: Group) -> dict[str, Any]:
        members = group.min_member
        running = POD_GROUP_SIZE if group.running else 0
        status: dict[str, Any] = {"phase": group.phase, "running": running}
        if group.phase != "Running":
            status["conditions"] = [
                {
                    "type": "Unschedulable",
                    "status": "True",
                    "reason": "NotEnoughResources",
                    "message": f"{members}/{POD_GROUP_SIZE} tasks in gang unschedulable",
                    "lastTransitionTime": CREATED,
                    "transitionID": _uid(_PODGROUP, self.spec.seed, 10_000 + group.index),
                }
            ]
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {
                "name": group.name,
                "namespace": group.namespace,
                "uid": _uid(_PODGROUP, self.spec.seed, group.index & 0xFFFFFF),
                "creationTimestamp": CREATED,
                "ownerReferences": [_owner(group, self.spec.seed)],
                "annotations": {"scheduling.k8s.io/group-name": group.name},
            },
            "spec": {
                "minMember": members,
                "minTaskMember": {"worker": members},
                "queue": group.queue,
                "priorityClassName": group.priority_class,
                "minResources": _resources(group.cpu * members, pods=members),
            },
            "status": status,
        }

    def _data_groups(self) -> list[Group]:
        return [*self.groups, *([_probe_group()] if self.spec.probe else [])]

    def volumes(self) -> Iterator[dict[str, Any]]:
        """A network volume per group for its data claim (no node affinity, no attach
        limit), bound as the volume controller leaves it."""
        for group in self._data_groups():
            yield {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": f"pv-{group.namespace}-{group.name}"},
                "spec": {
                    "capacity": {"storage": "10Gi"},
                    "accessModes": ["ReadWriteMany"],
                    "nfs": {"server": "nfs.example.com", "path": f"/{group.name}"},
                    "claimRef": {"namespace": group.namespace, "name": f"{group.name}-data"},
                    "storageClassName": "",
                },
                "status": {"phase": "Bound"},
            }

    def claims(self) -> Iterator[dict[str, Any]]:
        """Each group's ``<group>-data`` claim, which every pod of it mounts: bound."""
        for group in self._data_groups():
            yield {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": f"{group.name}-data",
                    "namespace": group.namespace,
                    "annotations": {"pv.kubernetes.io/bind-completed": "yes"},
                },
                "spec": {
                    "accessModes": ["ReadWriteMany"],
                    "storageClassName": "",
                    "volumeName": f"pv-{group.namespace}-{group.name}",
                    "resources": {"requests": {"storage": "10Gi"}},
                },
                "status": {"phase": "Bound"},
            }

    def pdbs(self) -> Iterator[dict[str, Any]]:
        for group in self.groups[:: max(1, len(self.groups) // 20)]:
            yield {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": f"{group.name}-pdb", "namespace": group.namespace},
                "spec": {
                    "minAvailable": group.min_member,
                    "selector": {"matchLabels": {"volcano.sh/job-name": group.name}},
                },
                "status": {
                    "currentHealthy": POD_GROUP_SIZE if group.running else 0,
                    "desiredHealthy": group.min_member,
                    "disruptionsAllowed": 1 if group.running else 0,
                    "expectedPods": POD_GROUP_SIZE,
                    "observedGeneration": 1,
                },
            }

    def pods(self) -> Iterator[dict[str, Any]]:
        for index in range(len(self.placement)):
            yield self.pod(index)
        if self.spec.probe:
            for i in range(PROBE_RUNNING):
                yield self.probe_pod(f"run-{i}", bound=True)
            yield self.probe_pod("a", bound=False)
            yield self.probe_pod("b", bound=False)

    def pod(self, index: int) -> dict[str, Any]:
        group = self.groups[index // POD_GROUP_SIZE]
        node = self.placement[index]
        pod = _pod(
            group,
            member=index % POD_GROUP_SIZE,
            uid=self.pod_uid(index),
            node=self.node_names[node] if node >= 0 else "",
            seed=self.spec.seed,
        )
        if self.spec.fit:
            _add_fit_constraints(pod, group)
        return pod

    def probe_pod(self, member: str, *, bound: bool) -> dict[str, Any]:
        """A pod of the probe queue; ``a`` and ``b`` wait, ``run-*`` run on the probe node."""
        group = _probe_group()
        uid = _uid(_POD, self.spec.seed, 0xFFFF00 + sum(map(ord, member)))
        return _pod(group, member, uid, PROBE_NODE if bound else "", self.spec.seed)


# --- object templates -----------------------------------------------------------------------


def _probe_group() -> Group:
    return Group(
        -1,
        "probe",
        PROBE_NAMESPACE,
        PROBE_QUEUE,
        "bench-low",
        1,
        PROBE_CPU,
        phase="Running",
        role="probe",
    )


def _resources(cpu: int, *, pods: int | None = None) -> dict[str, str]:
    out = {"cpu": str(cpu), "memory": f"{cpu * MEMORY_GI_PER_CPU}Gi"}
    if pods is not None:
        out["pods"] = str(pods)
    return out


def _queue(name: str, index: int, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {
            "name": name,
            "uid": _uid(_QUEUE, 0, index),
            "creationTimestamp": CREATED,
            "generation": 1,
        },
        "spec": spec,
        "status": {"state": "Open", "running": 0, "pending": 0, "inqueue": 0},
    }


def _owner(group: Group, seed: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": group.name,
        "uid": _uid(_PODGROUP, seed, 0x800000 + (group.index & 0xFFFFF)),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _node(name: str, index: int, seed: int) -> dict[str, Any]:
    zone = f"zone-{'abc'[index % 3]}"
    allocatable = {
        "cpu": str(NODE_CPU),
        "memory": f"{NODE_MEMORY_GI}Gi",
        "pods": str(NODE_PODS),
        "ephemeral-storage": "190Gi",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
    }
    capacity = dict(allocatable, cpu=str(NODE_CPU + 1), memory=f"{NODE_MEMORY_GI + 4}Gi")
    conditions = [
        {"type": t, "status": "False", "reason": f"KubeletHas{r}", "message": m}
        for t, r, m in (
            ("MemoryPressure", "SufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "NoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "SufficientPID", "kubelet has sufficient PID available"),
        )
    ]
    conditions.append(
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is ready"}
    )
    for c in conditions:
        c["lastHeartbeatTime"] = STARTED
        c["lastTransitionTime"] = CREATED
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": _uid(_NODE, seed, index),
            "creationTimestamp": CREATED,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "m7a.8xlarge",
                "topology.kubernetes.io/region": "eu-west-1",
                "topology.kubernetes.io/zone": zone,
                "node-role.kubernetes.io/worker": "",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {
            "podCIDR": f"10.{index // 256 % 256}.{index % 256}.0/24",
            "providerID": f"aws:///{zone}/i-{index:017x}",
        },
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": f"10.200.{index // 256 % 256}.{index % 256}"},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.36.2",
                "containerRuntimeVersion": "containerd://2.1.4",
                "kernelVersion": "6.8.0-1021-aws",
                "osImage": "Ubuntu 24.04.2 LTS",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


def _env(group: Group, member: str) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": "VC_TASK_INDEX", "value": member},
        {"name": "VK_TASK_INDEX", "value": member},
        {"name": "VC_WORKER_NUM", "value": str(POD_GROUP_SIZE)},
        {"name": "VC_WORKER_HOSTS", "value": f"{group.name}-worker-0.{group.name}"},
        {"name": "JOB_NAME", "value": group.name},
        {"name": "OMP_NUM_THREADS", "value": str(group.cpu)},
        {"name": "LOG_LEVEL", "value": "info"},
    ]
    for field_path in ("metadata.name", "metadata.namespace", "status.podIP"):
        env.append(
            {
                "name": field_path.split(".")[-1].upper(),
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": field_path}},
            }
        )
    return env


def _pod_ip(uid: str) -> str:
    n = int(uid[-6:], 16)
    return f"10.{64 + n // 65536 % 64}.{n // 256 % 256}.{n % 256}"


def token_volume(name: str) -> dict[str, Any]:
    """The projected service-account token volume admission adds to every pod."""
    return {
        "name": name,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {
                    "configMap": {
                        "name": "kube-root-ca.crt",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
            ],
            "defaultMode": 420,
        },
    }


def _pod(group: Group, member: int | str, uid: str, node: str, seed: int) -> dict[str, Any]:
    name = f"{group.name}-{member}"
    cpu = group.cpu
    token = f"kube-api-access-{uid[-5:]}"
    priority = PRIORITY_CLASSES[group.priority_class]
    metadata = {
        "name": name,
        "generateName": f"{group.name}-",
        "namespace": group.namespace,
        "uid": uid,
        "resourceVersion": "1",
        "creationTimestamp": CREATED,
        "labels": {
            "volcano.sh/job-name": group.name,
            "volcano.sh/job-namespace": group.namespace,
            "volcano.sh/queue-name": group.queue,
            "volcano.sh/task-spec": "worker",
            "volcano.sh/job-retry-count": "0",
            "app.kubernetes.io/name": "trainer",
            "app.kubernetes.io/part-of": group.queue,
        },
        "annotations": {
            "scheduling.k8s.io/group-name": group.name,
            "scheduling.volcano.sh/queue-name": group.queue,
            "volcano.sh/job-name": group.name,
            "volcano.sh/job-version": "0",
            "volcano.sh/task-spec": "worker",
            "volcano.sh/task-index": str(member),
            "volcano.sh/template-uid": f"{group.name}-worker",
            "prometheus.io/scrape": "true",
            "prometheus.io/port": "9090",
        },
        "ownerReferences": [_owner(group, seed)],
    }
    container = {
        "name": "worker",
        "image": "registry.example.com/ml/trainer:2026.11.3",
        "command": ["python", "-m", "trainer"],
        "args": ["--epochs=30", "--batch-size=256", f"--shard={member}"],
        "ports": [{"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
        "env": _env(group, str(member)),
        "resources": {
            "limits": {"cpu": str(cpu * 2), "memory": f"{cpu * MEMORY_GI_PER_CPU}Gi"},
            "requests": _resources(cpu),
        },
        "volumeMounts": [
            {"name": "data", "mountPath": "/data"},
            {"name": "config", "mountPath": "/etc/trainer", "readOnly": True},
            {"name": "dshm", "mountPath": "/dev/shm"},
            {
                "name": token,
                "readOnly": True,
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            },
        ],
        "readinessProbe": {
            "httpGet": {"path": "/healthz", "port": 9090, "scheme": "HTTP"},
            "periodSeconds": 10,
            "timeoutSeconds": 1,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }
    spec: dict[str, Any] = {
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": f"{group.name}-data"}},
            {"name": "config", "configMap": {"name": f"{group.name}-config", "defaultMode": 420}},
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
            token_volume(token),
        ],
        "containers": [container],
        "restartPolicy": "OnFailure",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "fsGroup": 1000},
        "hostname": name,
        "subdomain": group.name,
        "schedulerName": SCHEDULER_NAME,
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ],
        "priorityClassName": group.priority_class,
        "priority": priority,
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
    }
    status: dict[str, Any] = {"phase": "Pending", "qosClass": "Burstable"}
    if node:
        spec["nodeName"] = node
        status = {
            "phase": "Running",
            "conditions": [
                {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": STARTED}
                for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
            ]
            + [{"type": "PodScheduled", "status": "True", "lastTransitionTime": CREATED}],
            "hostIP": "10.200.0.1",
            "podIP": _pod_ip(uid),
            "startTime": STARTED,
            "containerStatuses": [
                {
                    "name": "worker",
                    "state": {"running": {"startedAt": STARTED}},
                    "ready": True,
                    "restartCount": 0,
                    "image": "registry.example.com/ml/trainer:2026.11.3",
                    "imageID": "registry.example.com/ml/trainer@sha256:" + "3f" * 32,
                    "containerID": "containerd://" + uid.replace("-", "") * 2,
                    "started": True,
                }
            ],
            "qosClass": "Burstable",
        }
    else:
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": CREATED,
                "reason": "Unschedulable",
                "message": "0/5000 nodes are available: pod group is not ready.",
            }
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


# --- the fit variant ------------------------------------------------------------------------

FIT_APPS = 200  # ten pod groups an app at reference scale


def fit_constraint(group: Group) -> str:
    """``anti-affinity``, ``spread`` or ``""`` for a pod group of the fit variant: one group
    in ten each, spread over the group indices so that waiting groups (every tenth) get
    their share too."""
    slot = (group.index + group.index // 10) % 10
    return {3: "anti-affinity", 7: "spread"}.get(slot, "")


def _add_fit_constraints(pod: dict[str, Any], group: Group) -> None:
    app = f"app-{group.index % FIT_APPS:03d}"
    pod["metadata"]["labels"]["app"] = app
    selector = {"matchLabels": {"app": app}}
    kind = fit_constraint(group)
    if kind == "anti-affinity":
        pod["spec"]["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        }
    elif kind == "spread":
        pod["spec"]["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": selector,
            }
        ]
