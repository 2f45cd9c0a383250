"""DRA devices as the cache counts and charges them: a node's devices added to its
allocatable under the configured quota names, and a pod's resource claims added to its
request (each claim charged to one pod). Kept apart from the object store because its state
(which pods name which claims, which nodes' devices could not be judged) only serves these
two rules; the store asks it and puts the nodes and pods it names again."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from scheduler_core.api.devices import DeviceQuotaNames
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.storage import StorageCatalog
from scheduler_core.api.task import TaskInfo

log = logging.getLogger("scheduler_core.cache")


class DeviceCharging:
    """What DRA devices add to nodes and pods, over one storage catalog (the store's)."""

    def __init__(self, storage: StorageCatalog) -> None:
        self.storage = storage
        #: Which quota name each device class counts under (the configuration's mapping).
        self.names = DeviceQuotaNames()
        #: Pods with device claims, as last received: re-derived when a claim they name
        #: changes, since an allocated claim is charged to the pod that reserves it.
        self.claim_pods: dict[str, dict[str, Any]] = {}
        #: Claim key -> the keys of the pods naming it.
        self.claim_refs: dict[str, set[str]] = {}
        #: Per node, why some of its device counts could not be judged.
        self.node_problems: dict[str, tuple[str, ...]] = {}

    def fork(self, storage: StorageCatalog) -> DeviceCharging:
        """A copy over ``storage`` (the fork's own catalog)."""
        other = DeviceCharging(storage)
        other.names = self.names
        other.claim_pods = dict(self.claim_pods)
        other.claim_refs = {k: set(v) for k, v in self.claim_refs.items()}
        other.node_problems = dict(self.node_problems)
        return other

    # --- configuration --------------------------------------------------------------------

    def set_names(self, names: DeviceQuotaNames) -> bool:
        """Count device classes under these quota names; whether they differ from before
        (every node's devices and every claim's charge must then be derived again)."""
        if names == self.names:
            return False
        self.names = names
        shared: dict[str, list[str]] = {}
        for device_class, name in sorted(names.mappings.items()):
            shared.setdefault(name, []).append(device_class)
        for name, classes in shared.items():
            if len(classes) > 1:
                log.info(
                    "deviceClassMappings: classes %s count under %s; a device several of "
                    "them accept counts once, and a node's device-plugin %s is added to",
                    ", ".join(classes),
                    name,
                    name,
                )
        return True

    def class_put(self, name: str) -> None:
        """Say what is wrong with a DeviceClass just put, if anything: a selector that does
        not compile, or a mapping that names another quota name than its pods ask for."""
        problem = self.storage.devices.class_problem(name)
        if problem:
            log.warning("DRA devices not counted: %s", problem)
        info = self.storage.devices.classes.get(name)
        mapped = self.names.mappings.get(name)
        extended = info.extended_resource_name if info is not None else ""
        if extended and mapped and mapped != extended:
            log.warning(
                "DeviceClass %s: deviceClassMappings names %s, but pods ask its "
                "devices as %s (its extendedResourceName): they count under %s",
                name,
                mapped,
                extended,
                extended,
            )

    def class_deleting(self, key: str) -> None:
        """Warn when a DeviceClass goes while allocated claims still use it."""
        users = [
            c.key for c in self.storage.resource_claims.values() if c.allocated and key in c.devices
        ]
        if users:
            log.warning(
                "DeviceClass %s deleted while %d allocated claim(s) use it (%s): "
                "their devices are no longer counted",
                key,
                len(users),
                ", ".join(sorted(users)[:5]),
            )

    # --- nodes ----------------------------------------------------------------------------

    def device_nodes(self, kind: str, obj: Mapping[str, Any]) -> set[str]:
        """The nodes whose device counts an event on this object may move."""
        devices = self.storage.devices
        if kind == "DeviceClass":
            return set(devices.nodes())
        name = str((obj.get("metadata") or {}).get("name") or "")
        old = devices.slices.get(name)
        node = str((obj.get("spec") or {}).get("nodeName") or "")
        found = {n for n in (node, old.node_name if old is not None else "") if n}
        if old is not None:
            # A new generation of a pool replaces its slices on every node it spans.
            found.update(
                s.node_name
                for s in devices.slices.values()
                if s.driver == old.driver and s.pool == old.pool and s.node_name
            )
        return found

    def with_devices(self, base: NodeInfo) -> NodeInfo:
        """The node with its DRA devices added to its allocatable, per quota name. A device
        plugin's amount of the same name (a node in migration) is added to, never replaced:
        the devices are different ones."""
        counts, problems = self.storage.devices.node_resources(base.name, self.names)
        reasons = tuple(sorted({p.reason for p in problems}))
        if reasons != self.node_problems.get(base.name, ()):
            for reason in reasons:
                log.warning("DRA devices of node %s not counted: %s", base.name, reason)
        if reasons:
            self.node_problems[base.name] = reasons
        else:
            self.node_problems.pop(base.name, None)
        if not counts:
            return base
        allocatable = base.allocatable.clone()
        capacity = base.capacity.clone()
        for name, count in counts.items():
            allocatable.add_scalar(name, count * 1000.0)
            capacity.add_scalar(name, count * 1000.0)
        return NodeInfo.new(
            base.name,
            allocatable,
            capacity,
            labels=base.labels,
            taints=base.taints,
            unschedulable=base.unschedulable,
            ready=base.ready,
        )

    def problems(self, known_nodes: Mapping[str, object]) -> list[str]:
        """Why some DRA devices are not counted now: classes whose selectors do not
        compile, devices a class's selector fails on, slices naming a node not among
        ``known_nodes``."""
        devices = self.storage.devices
        found = {devices.class_problem(c) for c in devices.classes}
        for reasons in self.node_problems.values():
            found.update(reasons)
        found.update(
            f"ResourceSlices name node {n}, which is not in the cache"
            for n in devices.nodes()
            if n not in known_nodes
        )
        found.discard("")
        return sorted(found)

    # --- pods -----------------------------------------------------------------------------

    def pods_to_rederive(self, key: str = "") -> set[str]:
        """The pods naming claim ``key`` (every pod with claims when no key is given: a
        template or the names changed): what a claim charges, and to whom, may have moved.
        A pod with no claim is never among them."""
        return set(self.claim_refs.get(key, set())) if key else set(self.claim_pods)

    def note_pod(self, task: TaskInfo, pod: dict[str, Any], old: TaskInfo | None) -> set[str]:
        """Record the claims a pod (``task``, converted from ``pod``; ``old``, its task
        until now) names and charge them to it; the other pods naming its claims now or
        before (their charge may move with this one)."""
        siblings = self.forget_pod(task.key, old)
        if task.resource_claims:
            self.claim_pods[task.key] = pod
            for key in self.claim_keys(task):
                refs = self.claim_refs.setdefault(key, set())
                siblings.update(refs)
                refs.add(task.key)
            self.charge(task)
        return siblings

    def forget_pod(self, pod_key: str, old: TaskInfo | None) -> set[str]:
        """Forget a pod's claim references; the other pods naming its claims (their
        charge may move when this one comes or goes)."""
        pod = self.claim_pods.pop(pod_key, None)
        if pod is None or old is None:
            return set()
        siblings: set[str] = set()
        for key in self.claim_keys(old):
            refs = self.claim_refs.get(key)
            if refs is not None and pod_key in refs:
                refs.discard(pod_key)
                siblings.update(refs)
                if not refs:
                    del self.claim_refs[key]
        return siblings

    def charge(self, task: TaskInfo) -> None:
        """Add to the task's request the devices its claims charge it for. A claim counts
        once, for one pod: the first of its ``status.reservedFor`` (the pod kube-scheduler
        reserved it for first), or, while nobody reserved it, the first by namespace/name
        of the pods naming it. Allocated, it charges the devices it holds; not yet allocated
        (or not yet made from its template), the devices its ``ExactCount`` requests ask;
        an ``All`` request is charged once allocated (its count depends on the node). A
        class the engine cannot judge (unknown, or its selector does not compile) is not
        charged, as its devices are not counted."""
        extra: dict[str, float] = {}
        catalog = self.storage
        for ref in task.resource_claims:
            per_class: Mapping[str, int] = {}
            if ref.claim:
                key = f"{task.namespace}/{ref.claim}"
                claim = catalog.resource_claims.get(key)
                if claim is None or self.claim_owner(key, claim.reserved_for) != task.uid:
                    continue
                per_class = claim.devices if claim.allocated else claim.shape.exact_counts()
            elif ref.template:
                template = catalog.claim_templates.get(f"{task.namespace}/{ref.template}")
                if template is not None:
                    per_class = template.shape.exact_counts()
            for device_class, count in per_class.items():
                if catalog.devices.class_problem(device_class):
                    # Not judged: the cluster's devices of the class are not counted, so
                    # neither is the claim (a share of nothing would refuse the pod).
                    continue
                name = self.names.name_of(device_class, catalog.devices.classes.get(device_class))
                extra[name] = extra.get(name, 0.0) + count * 1000.0
        if extra:
            resreq = task.resreq.clone()
            init_resreq = task.init_resreq.clone()
            for name, amount in extra.items():
                resreq.add_scalar(name, amount)
                init_resreq.add_scalar(name, amount)
            task.resreq = resreq
            task.init_resreq = init_resreq

    def claim_owner(self, key: str, reserved_for: tuple[str, ...]) -> str:
        """The uid of the pod a claim is charged to (see ``charge``)."""
        if reserved_for:
            return reserved_for[0]
        pods = self.claim_refs.get(key)
        if not pods:
            return ""
        first = self.claim_pods[min(pods)]
        return str((first.get("metadata") or {}).get("uid") or "")

    @staticmethod
    def claim_keys(task: TaskInfo) -> set[str]:
        return {f"{task.namespace}/{ref.claim}" for ref in task.resource_claims if ref.claim}
