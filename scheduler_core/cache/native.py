"""Kubernetes' own PodGroups (the Workload API, ``scheduling.k8s.io``) as a second source of
gangs.

kube-scheduler gangs the members of such a group itself (one scheduling cycle for the group,
nobody bound until ``minCount`` fit); the engine reads the same group into the same
``JobInfo`` a Volcano PodGroup makes, so every queue rule and every plugin treats both alike.
Which version to read is found by discovery (``NATIVE_PODGROUPS``, asked at start and again
periodically): a cluster that does not serve the API is watched exactly as before, with no
request for a resource it lacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler_core.api.job import NATIVE_SOURCE
from scheduler_core.api.topology import NetworkTopologyRequest, TopologyMode
from scheduler_core.api.types import PodGroupPhase
from scheduler_core.cache.convert import (
    ConversionError,
    PodGroupInfo,
    _int_field,
    _list,
    _map,
    _min_runtime,
    _preemptable,
    _str_map,
    describe,
    named_queue,
    object_name,
)
from scheduler_core.cache.kinds import KindSpec, OptionalKind

NATIVE_GROUP = "scheduling.k8s.io"
#: The versions whose PodGroup the engine reads, the preferred first: v1beta1 (Kubernetes
#: 1.37), v1alpha2 (1.36). v1alpha1 (1.35) had no PodGroup object of its own.
NATIVE_VERSIONS = ("v1beta1", "v1alpha2")
#: The kind name the informers and the cluster state use for a native PodGroup: distinct
#: from Volcano's ``PodGroup``, whose objects share the kind's name.
NATIVE_KIND = "NativePodGroup"

BASIC = "basic"
GANG = "gang"


def native_pod_group_kind(version: str) -> KindSpec:
    """The watched resource of native PodGroups at ``version``."""
    return KindSpec(NATIVE_KIND, NATIVE_GROUP, version, "podgroups", namespaced=True, custom=True)


#: Native PodGroups as discovery finds them: the preferred served version; a role that may
#: not list them (an extender upgraded without its ClusterRole) leaves them out with a
#: warning rather than keep the informers from ever syncing, and with them the verbs from
#: answering.
NATIVE_PODGROUPS = OptionalKind(
    tuple(native_pod_group_kind(version) for version in NATIVE_VERSIONS),
    absent="the Workload API is not enabled; only Volcano PodGroups are read",
    forbidden_left_out=True,
)


def native_podgroup_to_info(pg: Mapping[str, Any], default_queue: str = "default") -> PodGroupInfo:
    """A native PodGroup (v1alpha2 or v1beta1: the fields read are the same) as the fields a
    ``JobInfo`` is built from.

    - ``schedulingPolicy.gang.minCount`` is the gang's minMember; a ``basic`` policy is a
      group of pods that start on their own: minMember 1.
    - ``spec.priority`` (set by admission from ``priorityClassName``) is the job's priority;
      without it the class's value, as for a Volcano PodGroup.
    - The queue is the PodGroup's ``scheduling.volcano.sh/queue-name`` (annotation or label);
      without one the members may name it (the cluster state resolves that), else
      ``default_queue``.
    - ``schedulingConstraints.topology[].key`` is kept on the job, and the first key is its
      network topology request: every member inside one domain of the tier that key names
      (a label level, or a HyperNode ``tierName``), as a Volcano PodGroup's hard
      ``networkTopology`` with ``highestTierName`` asks.

    The phase is never read: kube-scheduler keeps conditions, not Volcano's phases.
    """
    namespace, name = object_name(pg, "PodGroup")
    namespace = namespace or "default"
    where = describe("PodGroup", namespace, name) + f" ({NATIVE_GROUP})"
    meta = _map(pg, "metadata")
    spec = _map(pg, "spec")
    policy = _map(spec, "schedulingPolicy")
    if GANG in policy and isinstance(policy[GANG], dict):
        min_member = _int_field(
            policy[GANG].get("minCount"), f"{where}: spec.schedulingPolicy.gang.minCount", 1
        )
        if min_member < 1:
            raise ConversionError(f"{where}: spec.schedulingPolicy.gang.minCount must be >= 1")
    elif BASIC in policy:
        min_member = 1
    else:
        raise ConversionError(f"{where}: spec.schedulingPolicy names neither gang nor basic")
    priority_raw = spec.get("priority")
    priority = (
        _int_field(priority_raw, f"{where}: spec.priority", 0) if priority_raw is not None else None
    )
    queue = named_queue(pg)
    topology = tuple(
        str(t.get("key"))
        for t in _list(_map(spec, "schedulingConstraints"), "topology")
        if isinstance(t, dict) and t.get("key")
    )
    return PodGroupInfo(
        namespace=namespace,
        name=name,
        queue=queue or default_queue,
        min_member=min_member,
        priority_class_name=str(spec.get("priorityClassName") or ""),
        phase=PodGroupPhase.PENDING,
        preemptable=_preemptable(meta, default=False),
        creation_timestamp=str(meta.get("creationTimestamp") or ""),
        min_runtime=_min_runtime(_str_map(meta.get("annotations")), where),
        source=NATIVE_SOURCE,
        priority=priority,
        queue_named=bool(queue),
        topology_keys=topology,
        network_topology=(
            NetworkTopologyRequest(
                TopologyMode.HARD, highest_tier_name=topology[0], from_constraint=True
            )
            if topology
            else None
        ),
    )
