"""The Kubernetes resources the engine watches, and how to address them over REST.

The reflector talks to the API server with raw paths rather than the generated typed API
classes (they would materialise a typed model per object), so the one place that
knows a resource's group, version, plural and scope is this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class KindSpec:
    """One watched resource type.

    ``custom`` marks a CustomResourceDefinition that may legitimately be absent from a
    cluster (Volcano not installed yet): a 404 on its list is then reported as "CRD not
    installed" rather than as a broken API server.
    """

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool
    custom: bool = False

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` string objects of this kind carry (``v1`` for the core group)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_prefix(self) -> str:
        """The URL prefix of the group: legacy ``/api/v1`` for core, ``/apis/g/v`` otherwise."""
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    @property
    def resource(self) -> str:
        """The qualified name a person (and RBAC) uses: ``queues.scheduling.volcano.sh``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def crd_name(self) -> str:
        """The name of the CRD as ``kubectl get crd`` shows it, with the served version."""
        return f"{self.resource}/{self.version}"

    def list_path(self, namespace: str | None = None) -> str:
        """Collection path for list and watch, restricted to ``namespace`` when given.

        Cluster-scoped kinds ignore the namespace: restricting them makes no sense and the
        API server would answer 404.
        """
        if namespace and self.namespaced:
            return f"{self.api_prefix}/namespaces/{namespace}/{self.plural}"
        return f"{self.api_prefix}/{self.plural}"

    def key_of(self, obj: dict[str, Any]) -> str:
        """The cache key of a decoded object: ``namespace/name`` or ``name``."""
        meta = obj["metadata"]
        namespace = meta.get("namespace")
        name: str = meta["name"]
        return f"{namespace}/{name}" if namespace else name


POD = KindSpec("Pod", "", "v1", "pods", namespaced=True)
NODE = KindSpec("Node", "", "v1", "nodes", namespaced=False)
PRIORITY_CLASS = KindSpec(
    "PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", namespaced=False
)
POD_DISRUPTION_BUDGET = KindSpec(
    "PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", namespaced=True
)
QUEUE = KindSpec(
    "Queue", "scheduling.volcano.sh", "v1beta1", "queues", namespaced=False, custom=True
)
POD_GROUP = KindSpec(
    "PodGroup", "scheduling.volcano.sh", "v1beta1", "podgroups", namespaced=True, custom=True
)
PERSISTENT_VOLUME_CLAIM = KindSpec(
    "PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", namespaced=True
)
PERSISTENT_VOLUME = KindSpec("PersistentVolume", "", "v1", "persistentvolumes", namespaced=False)
STORAGE_CLASS = KindSpec("StorageClass", "storage.k8s.io", "v1", "storageclasses", namespaced=False)
CSI_NODE = KindSpec("CSINode", "storage.k8s.io", "v1", "csinodes", namespaced=False)
RESOURCE_CLAIM = KindSpec(
    "ResourceClaim", "resource.k8s.io", "v1", "resourceclaims", namespaced=True
)
RESOURCE_CLAIM_TEMPLATE = KindSpec(
    "ResourceClaimTemplate", "resource.k8s.io", "v1", "resourceclaimtemplates", namespaced=True
)
RESOURCE_SLICE = KindSpec(
    "ResourceSlice", "resource.k8s.io", "v1", "resourceslices", namespaced=False
)
DEVICE_CLASS = KindSpec("DeviceClass", "resource.k8s.io", "v1", "deviceclasses", namespaced=False)

#: What a pod's placement depends on beyond its spec and the nodes: volumes and devices.
STORAGE_KINDS: tuple[KindSpec, ...] = (
    PERSISTENT_VOLUME_CLAIM,
    PERSISTENT_VOLUME,
    STORAGE_CLASS,
    CSI_NODE,
    RESOURCE_CLAIM,
    RESOURCE_CLAIM_TEMPLATE,
    RESOURCE_SLICE,
    DEVICE_CLASS,
)

#: Volcano's network topology. Not in ``ALL_KINDS``: watched only where the API server serves
#: it (discovery), so that a cluster without Volcano's topology API is no error and no wait.
HYPERNODE = KindSpec(
    "HyperNode", "topology.volcano.sh", "v1alpha1", "hypernodes", namespaced=False, custom=True
)


@dataclass(frozen=True, slots=True)
class OptionalKind:
    """A kind watched only where the API server serves it, and how discovery finds it.

    Some clusters serve a resource and others do not (a CRD not installed, an API group or
    feature gate not enabled): a reflector on a resource that does not exist would fail
    forever and hold readiness. Discovery asks at start and again periodically, so a
    resource that appears later is watched from then on.
    """

    #: The served versions to look for, the preferred first; all of one ``kind``.
    versions: tuple[KindSpec, ...]
    #: Why the resource may be missing, as the log says it (``its CRD is not installed``).
    absent: str
    #: Whether discovery also asks if listing it is allowed, and leaves it out with a warning
    #: when not: the informers then sync without it. Otherwise a forbidden list shows as its
    #: informer's own error and holds readiness, as for any watched kind.
    forbidden_left_out: bool = False

    def __post_init__(self) -> None:
        if not self.versions or len({spec.kind for spec in self.versions}) != 1:
            raise ValueError("an optional kind names one kind in at least one version")

    @property
    def kind(self) -> str:
        return self.versions[0].kind

    @property
    def resource(self) -> str:
        """``plural.group``, as RBAC rules and ``kubectl api-resources`` name it."""
        return self.versions[0].resource


#: HyperNodes, where Volcano's topology CRD is installed.
HYPERNODES = OptionalKind((HYPERNODE,), absent="its CRD is not installed")

#: The engine's own kinds watched only when discovery finds them served (the service adds
#: Kubernetes' native PodGroups, see ``native.NATIVE_PODGROUPS``).
OPTIONAL_KINDS: tuple[OptionalKind, ...] = (HYPERNODES,)

#: Only their labels are read: pod affinity terms select namespaces by label.
NAMESPACE = KindSpec("Namespace", "", "v1", "namespaces", namespaced=False)

ALL_KINDS: tuple[KindSpec, ...] = (
    POD,
    NODE,
    PRIORITY_CLASS,
    POD_DISRUPTION_BUDGET,
    QUEUE,
    POD_GROUP,
    *STORAGE_KINDS,
    NAMESPACE,
)

BY_KIND: dict[str, KindSpec] = {
    spec.kind: spec for spec in (*ALL_KINDS, *(o.versions[0] for o in OPTIONAL_KINDS))
}
