"""kube-scheduler's DynamicResources filter, as far as the engine can judge it.

A pod's ``spec.resourceClaims`` ask for devices its ``requests`` do not show. Choosing
devices takes the drivers' ResourceSlices and the device classes' selectors, which the
engine does not model: a pod with a claim not yet allocated is therefore *not evaluable*.
A claim already allocated has its devices chosen; what is left to judge is where they can be
used (the allocation's node selector), which the engine does.
"""

from __future__ import annotations

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.storage import StorageCatalog
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.status import Code, Status
from scheduler_core.plugins.predicates.volumes import selector_matches, verdict

DYNAMIC_RESOURCES = "DynamicResources"

ERR_REASON_CLAIM_NOT_AVAILABLE = "resourceclaim not available on the node"


def claim_key(task: TaskInfo, claim: str) -> str:
    return f"{task.namespace}/{claim}"


def pod_not_evaluable(task: TaskInfo, storage: StorageCatalog) -> list[str]:
    """Why the engine cannot judge this pod's device claims (empty: it can)."""
    reasons: list[str] = []
    for ref in task.resource_claims:
        if not ref.claim:
            reasons.append(f"resource claim {ref.name} (its ResourceClaim is not created yet)")
            continue
        key = claim_key(task, ref.claim)
        claim = storage.resource_claims.get(key)
        if claim is None:
            reasons.append(f"ResourceClaim {key} not in the cache")
        elif not claim.allocated:
            reasons.append(f"ResourceClaim {key} is not allocated")
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
