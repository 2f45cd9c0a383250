"""kube-scheduler's DynamicResources filter, as far as the engine can judge it.

A pod's ``spec.resourceClaims`` ask for devices its ``requests`` do not show. A claim
already allocated has its devices chosen; what is left to judge is where they can be used
(the allocation's node selector). A claim not yet allocated (or not yet made from its
template) is judged by simulating kube-scheduler's allocator on the node, for the shapes
the engine models: each request ``exactly`` one device class with its own CEL selectors,
``ExactCount`` or ``All``. The node's devices (its ResourceSlices' newest generation) that
the class's and the request's selectors accept, and that no allocated claim holds, are the
candidates; every request must get its own devices at once (a matching, as the allocator's
search finds one when there is one).

What victims release: a claim's devices are free once every pod it is reserved for has left
the node being judged (a what-if copy without the victims); a claim still reserved for a pod
that stays, or for a pod not on the node, keeps its devices.

*Not evaluable*, with the reason: prioritized lists (``firstAvailable``), admin access,
constraints across requests (``matchAttribute``), consumable capacity, device taints,
partitionable devices (counters), binding conditions, a class or selector the engine cannot
compile or evaluate, a claim or template not in the cache.
"""

from __future__ import annotations

from scheduler_core.api.devices import (
    Device,
    DeviceCatalog,
    DeviceId,
    DeviceRequest,
    ResourceSliceInfo,
    Unjudged,
)
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.storage import (
    ResourceClaimInfo,
    StorageCatalog,
    claim_key,
    pending_needs,
)
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.framework.status import Code, Status
from scheduler_core.plugins.predicates.volumes import selector_matches, verdict

DYNAMIC_RESOURCES = "DynamicResources"

ERR_REASON_CLAIM_NOT_AVAILABLE = "resourceclaim not available on the node"


ERR_REASON_CANNOT_ALLOCATE = "cannot allocate all claims"


def pod_not_evaluable(task: TaskInfo, storage: StorageCatalog) -> list[str]:
    """Why the engine cannot judge this pod's device claims anywhere (empty: it can): a
    shape it does not model, an object not in the cache, a selector that does not
    compile."""
    needs, reasons = pending_needs(task, storage)
    devices = storage.devices
    for owner, version, request in needs:
        problem = devices.class_problem(request.device_class)
        if problem:
            reasons.append(f"{owner}: request {request.name}: {problem}")
            continue
        own = devices.request_selectors(owner, version, request)
        if isinstance(own, Unjudged):
            reasons.append(own.reason)
    return reasons


def allocated_claims_error(
    task: TaskInfo, node: NodeInfo, storage: StorageCatalog
) -> Status | None:
    """An allocated claim whose devices ``node`` cannot reach (its allocation's node
    selector): ``UnschedulableAndUnresolvable``, evictions do not move devices."""
    for ref in task.resource_claims:
        claim = storage.resource_claims.get(claim_key(task, ref.claim)) if ref.claim else None
        if claim is None or claim.node_selector is None:
            continue
        if not selector_matches(claim.node_selector, node):
            return verdict(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                ERR_REASON_CLAIM_NOT_AVAILABLE,
                DYNAMIC_RESOURCES,
                task,
                node,
            )
    return None


def _held(
    catalog: DeviceCatalog,
    storage: StorageCatalog,
    ids: list[DeviceId],
    node: NodeInfo,
    base: NodeInfo | None,
) -> set[DeviceId]:
    """The node's devices an allocated claim keeps. A claim is released when every pod it
    is reserved for is one of the session's pods on this node that the judged copy no
    longer holds (a victim) or holds as releasing."""
    held: set[DeviceId] = set()
    for device_id in ids:
        key = catalog.allocated.get(device_id)
        if key is None:
            continue
        claim = storage.resource_claims.get(key)
        if claim is None or not _released(claim, node, base):
            held.add(device_id)
    return held


def _released(claim: ResourceClaimInfo, node: NodeInfo, base: NodeInfo | None) -> bool:
    if not claim.reserved_for or base is None:
        return False
    for uid in claim.reserved_for:
        if uid not in base.tasks:
            return False  # reserved for a pod not on this node (in flight, or unknown)
        staying = node.tasks.get(uid)
        if staying is not None and staying.status is not TaskStatus.RELEASING:
            return False
    return True


def _candidates(
    catalog: DeviceCatalog,
    slices: list[ResourceSliceInfo],
    owner: str,
    version: str,
    request: DeviceRequest,
) -> list[DeviceId] | Unjudged:
    """The node's devices the request's class and own selectors accept."""
    out: list[DeviceId] = []
    for info in slices:
        matched = catalog.request_matches(info, owner, version, request)
        if isinstance(matched, Unjudged):
            return matched
        for device in info.devices:
            if device.name not in matched:
                continue
            why = _not_modelled(info, device)
            if why:
                return Unjudged(f"{owner}: request {request.name}: device {device.name} {why}")
            out.append((info.driver, info.pool, device.name))
    return out


def _not_modelled(info: ResourceSliceInfo, device: Device) -> str:
    if device.consumes_counters or info.shared_counters:
        return "is partitionable (shared counters)"
    if device.binding_conditions:
        return "has binding conditions"
    if device.tainted:
        return "has taints"
    if device.shared:
        return "allows multiple allocations (consumable capacity)"
    return ""


def _match(units: list[list[DeviceId]], free: set[DeviceId]) -> bool:
    """Whether every unit (one device of one request) gets its own free candidate: a
    bipartite matching by augmenting paths (units and devices per node are few)."""
    owner: dict[DeviceId, int] = {}

    def place(unit: int, seen: set[DeviceId]) -> bool:
        for device_id in units[unit]:
            if device_id not in free or device_id in seen:
                continue
            seen.add(device_id)
            if device_id not in owner or place(owner[device_id], seen):
                owner[device_id] = unit
                return True
        return False

    return all(place(i, set()) for i in range(len(units)))


def allocation_error(
    task: TaskInfo, node: NodeInfo, storage: StorageCatalog, base: NodeInfo | None
) -> Status | None:
    """Whether the pod's claims not yet allocated can be allocated on ``node`` (``base``:
    the session's own node of that name, to tell victims from pods never there), given
    the claims the node's other pods hold and the claims of the pods already placed there
    in this session whose claims are not allocated yet (assumed or pipelined: they come
    first). ``NotEvaluable`` for what the engine does not model on this node;
    ``Unschedulable`` (evictions may help) when the devices are not there."""
    needs, _ = pending_needs(task, storage)
    if not needs:
        return None
    catalog = storage.devices
    slices = catalog.current_slices(node.name)
    ids = [(info.driver, info.pool, d.name) for info in slices for d in info.devices]
    free = set(ids) - _held(catalog, storage, ids, node, base)
    units: list[list[DeviceId]] = []
    waiting = [t for t in node.tasks.values() if t.uid != task.uid and t.resource_claims]
    for judged in [*waiting, task]:
        judged_needs = needs if judged is task else pending_needs(judged, storage)[0]
        for owner, version, request in judged_needs:
            found = _candidates(catalog, slices, owner, version, request)
            if isinstance(found, Unjudged):
                if judged is not task:
                    continue  # another pod's problem: its devices are not counted here
                return Status(
                    Code.NOT_EVALUABLE,
                    [found.reason],
                    DYNAMIC_RESOURCES,
                    task=task.key,
                    node=node.name,
                )
            if request.all_devices:
                if not found or any(d not in free for d in found):
                    return _cannot(task, node)
                units.extend([d] for d in found)
            else:
                units.extend(list(found) for _ in range(request.count))
    if _match(units, free):
        return None
    return _cannot(task, node)


def _cannot(task: TaskInfo, node: NodeInfo) -> Status:
    return verdict(Code.UNSCHEDULABLE, ERR_REASON_CANNOT_ALLOCATE, DYNAMIC_RESOURCES, task, node)
