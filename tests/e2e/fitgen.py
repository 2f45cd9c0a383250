"""Random small clusters for the fit differential test, one seed one cluster.

Each cluster is a handful of nodes (hostname and zone labels, some taints, one cordoned now
and then), pods bound to them directly by ``spec.nodeName`` (labels the pending pods' terms
select, host ports, their own anti-affinity, which kube-scheduler checks symmetrically),
local PersistentVolumes bound to claims, and a batch of pending pods that each use a few of
kube-scheduler's filters at once: node selector and affinity, tolerations, required pod
affinity and anti-affinity (own namespace, named namespaces, every namespace), hard and soft
topology spread, host ports, bound claims. The values are drawn from small pools so that terms
actually meet: a selector for ``app=web`` finds web pods, a port asked for is often taken.

The generator only builds objects (``tests/builders.py`` dicts); creating them is the test's.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from tests import builders

Obj = dict[str, Any]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ZONES = ("za", "zb", "zc")
APPS = ("web", "db", "cache", "batch")
PORTS = ((8080, "TCP"), (9090, "TCP"), (9090, "UDP"))
#: The StorageClass of claims that wait for their first consumer (created once per run).
WAITING_CLASS = "fit-diff-wait"
TAINTS = (
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "infra", "effect": "NoExecute"},
    {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
)


@dataclass
class Cluster:
    """One generated cluster: what to create first (``setup``), then the pods to judge."""

    seed: int
    nodes: list[Obj] = field(default_factory=list)
    volumes: list[Obj] = field(default_factory=list)
    claims: list[Obj] = field(default_factory=list)
    bound: list[Obj] = field(default_factory=list)
    pending: list[Obj] = field(default_factory=list)
    #: DRA: the cluster's DeviceClass, its nodes' ResourceSlices, the claims of pending pods,
    #: and the devices bound pods hold: (claim, holder pod, node, device names).
    device_class: Obj | None = None
    slices: list[Obj] = field(default_factory=list)
    resource_claims: list[Obj] = field(default_factory=list)
    held: list[tuple[Obj, str, str, list[str]]] = field(default_factory=list)

    @property
    def node_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.nodes]


def _pick(rng: random.Random, chance: float) -> bool:
    return rng.random() < chance


def _node(rng: random.Random, name: str) -> Obj:
    labels = {HOSTNAME: name, "disk": rng.choice(("ssd", "hdd"))}
    if _pick(rng, 0.9):
        labels[ZONE] = rng.choice(ZONES)
    taints = [rng.choice(TAINTS)] if _pick(rng, 0.25) else []
    return builders.node(
        name,
        cpu=str(rng.choice((2, 4, 8))),
        memory=f"{rng.choice((4, 8, 16))}Gi",
        pods=rng.choice((110, 110, 110, 4)),
        labels=labels,
        taints=taints,
        unschedulable=_pick(rng, 0.05),
    )


def _bound_pod(rng: random.Random, name: str, namespace: str, node: str, cpu_m: int) -> Obj:
    labels = {"app": rng.choice(APPS), "tier": rng.choice(("front", "back"))}
    affinity = None
    if _pick(rng, 0.12):
        # An existing pod that keeps others of an app off its node (or zone): kube-scheduler
        # checks it for every incoming pod, whatever the incoming pod asks itself.
        key = rng.choice((HOSTNAME, HOSTNAME, ZONE))
        term = builders.pod_term(builders.selector({"app": rng.choice(APPS)}), key)
        affinity = builders.pod_affinity(anti=[term])
    return builders.pod(
        name,
        namespace=namespace,
        cpu=f"{cpu_m}m",
        memory=f"{rng.choice((128, 256, 512))}Mi",
        node_name=node,
        labels=labels,
        affinity=affinity,
        tolerations=[{"operator": "Exists"}],
        host_ports=[builders.host_port(*rng.choice(PORTS))] if _pick(rng, 0.2) else (),
    )


def _term(rng: random.Random, other_ns: str) -> Obj:
    key = rng.choice((HOSTNAME, HOSTNAME, ZONE))
    labels = {"app": rng.choice(APPS)}
    if _pick(rng, 0.2):
        labels["tier"] = rng.choice(("front", "back"))
    scope = rng.random()
    if scope < 0.15:
        return builders.pod_term(builders.selector(labels), key, namespaces=[other_ns])
    if scope < 0.25:
        return builders.pod_term(builders.selector(labels), key, namespaceSelector={})
    return builders.pod_term(builders.selector(labels), key)


def _pending_pod(
    rng: random.Random, name: str, namespace: str, other_ns: str, claims: list[str]
) -> Obj:
    labels = {"app": rng.choice(APPS)} if _pick(rng, 0.6) else {}
    node_selector = None
    tolerations: list[Obj] = []
    if _pick(rng, 0.12):
        node_selector = {"disk": "ssd"}
    if _pick(rng, 0.3):
        tolerations = [rng.choice(({"operator": "Exists"}, {"key": "dedicated", "value": "gpu"}))]
    affinity: Obj = {}
    if _pick(rng, 0.15):
        op = rng.choice(("In", "NotIn"))
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": op, "values": ["za"]}]}
                ]
            }
        }
    terms = [_term(rng, other_ns) for _ in range(rng.choice((1, 1, 2)))]
    anti = [_term(rng, other_ns) for _ in range(rng.choice((1, 1, 2)))]
    affinity.update(
        builders.pod_affinity(
            required=terms if _pick(rng, 0.2) else [],
            anti=anti if _pick(rng, 0.3) else [],
        )
    )
    spread = []
    if _pick(rng, 0.3):
        # One constraint per (topology key, whenUnsatisfiable) is all the API server takes.
        for key in rng.sample((HOSTNAME, ZONE), rng.choice((1, 1, 2))):
            spread.append(
                builders.spread_constraint(
                    rng.choice((1, 1, 2)),
                    key,
                    builders.selector({"app": rng.choice(APPS)}),
                    when="DoNotSchedule" if _pick(rng, 0.8) else "ScheduleAnyway",
                )
            )
    pod = builders.pod(
        name,
        namespace=namespace,
        cpu=f"{rng.choice((100, 500, 1000, 1500, 3000))}m",
        memory=f"{rng.choice((128, 1024, 4096))}Mi",
        labels=labels,
        node_selector=node_selector,
        tolerations=tolerations,
        affinity=affinity or None,
        spread=spread,
        host_ports=[builders.host_port(*rng.choice(PORTS))] if _pick(rng, 0.2) else (),
    )
    if claims and _pick(rng, 0.12):
        builders.with_claims(pod, [rng.choice(claims)])
    return pod


def generate(seed: int, tag: str, namespaces: tuple[str, str], pending: int) -> Cluster:
    """The cluster of ``seed``: object names start with ``tag``; pods live in the first
    namespace, a few bound ones in the second (for terms that name other namespaces)."""
    rng = random.Random(seed)
    own, other = namespaces
    cluster = Cluster(seed)
    for i in range(rng.randint(3, 6)):
        cluster.nodes.append(_node(rng, f"{tag}-n{i}"))
    for node in cluster.nodes:
        name = node["metadata"]["name"]
        room_m = int(node["status"]["allocatable"]["cpu"]) * 1000
        for j in range(rng.randint(0, 3)):
            cpu_m = rng.choice((100, 250, 500, 1000))
            if cpu_m > room_m:
                break
            room_m -= cpu_m
            ns = other if _pick(rng, 0.2) else own
            cluster.bound.append(_bound_pod(rng, f"{name}-b{j}", ns, name, cpu_m))
    claim_names: list[str] = []
    for k in range(rng.randint(0, 2)):
        node = rng.choice(cluster.node_names)
        pv, claim = f"{tag}-pv{k}", f"{tag}-claim{k}"
        cluster.volumes.append(builders.local_pv(pv, node, (own, claim)))
        cluster.claims.append(builders.bound_pvc(claim, pv, namespace=own))
        claim_names.append(claim)
    if _pick(rng, 0.5):
        # A claim waiting for its first consumer, with no volume to take: the engine cannot
        # judge where a pod using it fits (kube-scheduler finds no node).
        claim = f"{tag}-waiting"
        cluster.claims.append(builders.unbound_pvc(claim, WAITING_CLASS, namespace=own))
        claim_names.append(claim)
    for p in range(pending):
        cluster.pending.append(_pending_pod(rng, f"{tag}-p{p}", own, other, claim_names))
    # DRA from a generator of its own, so the other objects of a seed stay what they were.
    _add_devices(random.Random(seed * 7919 + 1), cluster, tag, own)
    return cluster


MODELS = ("a100", "h100")


def resource_claim_body(name: str, namespace: str, device_class: str, rng: random.Random) -> Obj:
    """A claim of one request: ``ExactCount`` (1 to 3) or now and then ``All``, with a
    selector on the model half the time."""
    exactly: Obj = {"deviceClassName": device_class}
    if _pick(rng, 0.15):
        exactly["allocationMode"] = "All"
    else:
        exactly["allocationMode"] = "ExactCount"
        exactly["count"] = rng.randint(1, 3)
    if _pick(rng, 0.5):
        model = rng.choice(MODELS)
        expression = f'device.attributes["{device_class}.x"].model == "{model}"'
        exactly["selectors"] = [{"cel": {"expression": expression}}]
    return {
        "kind": "ResourceClaim",
        "apiVersion": "resource.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def _add_devices(rng: random.Random, cluster: Cluster, tag: str, own: str) -> None:
    """A DeviceClass, slices of 0 to 4 GPUs on most nodes, some held by bound pods through
    allocated claims, and claims for about a quarter of the pending pods."""
    device_class = f"{tag}-gpu"
    driver = f"{device_class}.x"
    cluster.device_class = {
        "kind": "DeviceClass",
        "apiVersion": "resource.k8s.io/v1",
        "metadata": {"name": device_class},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }
    free: dict[str, list[str]] = {}
    for node in cluster.node_names:
        if not _pick(rng, 0.7):
            continue
        devices = [
            builders.device(f"gpu-{i}", {"model": rng.choice(MODELS)})
            for i in range(rng.randint(0, 4))
        ]
        cluster.slices.append(
            builders.resource_slice(f"{node}-gpus", node, *devices, driver=driver)
        )
        free[node] = [d["name"] for d in devices]
    for pod in cluster.bound:
        node = pod["spec"]["nodeName"]
        if pod["metadata"]["namespace"] != own or not free.get(node) or not _pick(rng, 0.4):
            continue
        taken = [free[node].pop(rng.randrange(len(free[node])))]
        claim = {
            "kind": "ResourceClaim",
            "apiVersion": "resource.k8s.io/v1",
            "metadata": {"name": f"{pod['metadata']['name']}-held", "namespace": own},
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]
                }
            },
        }
        builders.with_resource_claims(pod, claim["metadata"]["name"])
        cluster.held.append((claim, pod["metadata"]["name"], node, taken))
    for pod in cluster.pending:
        if not _pick(rng, 0.25):
            continue
        claim = resource_claim_body(f"{pod['metadata']['name']}-dra", own, device_class, rng)
        builders.with_resource_claims(pod, claim["metadata"]["name"])
        cluster.resource_claims.append(claim)


def api_body(obj: Obj, scheduler: str = "") -> Obj:
    """A builders dict as the API server takes it: no kind or uid, no status but a node's
    (its allocatable is what every fit is measured against); an image on every container;
    ``scheduler`` as the pod's schedulerName when given."""
    dropped = ("kind",) if obj.get("kind") == "Node" else ("kind", "status")
    body = {k: v for k, v in obj.items() if k not in dropped}
    body["metadata"] = {k: v for k, v in obj["metadata"].items() if k != "uid"}
    if "containers" in body.get("spec", {}):
        spec = dict(body["spec"])
        spec["containers"] = [
            {**c, "image": "registry.k8s.io/pause:3.10"} for c in spec["containers"]
        ]
        spec["terminationGracePeriodSeconds"] = 0
        if scheduler:
            spec["schedulerName"] = scheduler
        body["spec"] = spec
    return body
