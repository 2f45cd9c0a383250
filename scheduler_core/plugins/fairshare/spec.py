"""What a queue's spec and the configuration say before any job is counted: guarantees,
capabilities (flat mode), whether capacity runs hierarchically, and Volcano's wording of a
quota refusal."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import INFINITY, Resource, exceeded_part
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.plugins.fairshare.attrs import QueueAttr

MAX_FLOAT = sys.float_info.max


def total_guarantee(queues: Iterable[QueueInfo]) -> Resource:
    """What every queue together is guaranteed: nobody else may count on it."""
    total = Resource.empty()
    for queue in queues:
        if queue.guarantee is not None:
            total.add(queue.guarantee)
    return total


def spec_guarantee(queue: QueueInfo) -> Resource:
    return queue.guarantee.clone() if queue.guarantee is not None else Resource.empty()


def flat_capability(queue: QueueInfo) -> Resource | None:
    """``spec.capability`` with a missing (or non-positive) cpu or memory read as unlimited;
    ``None`` when the spec sets no capability at all."""
    if queue.capability is None:
        return None
    capability = queue.capability.clone()
    if capability.milli_cpu <= 0:
        capability.milli_cpu = MAX_FLOAT
    if capability.memory <= 0:
        capability.memory = MAX_FLOAT
    return capability


def flat_real_capability(
    total: Resource, guarantees: Resource, guarantee: Resource, capability: Resource | None
) -> Resource:
    """What the queue could ever get: the cluster minus every guarantee, plus its own
    guarantee, capped by its capability."""
    real = exceeded_part(total, guarantees).clone().add(guarantee)
    if capability is not None:
        real.min_dimension_resource(capability, INFINITY)
    return real


def hierarchy_enabled(conf: SchedulerConfiguration, plugin: str) -> bool:
    """``ssn.HierarchyEnabled``: the first option naming the plugin decides."""
    for tier in conf.tiers:
        for option in tier.plugins:
            if option.name == plugin:
                return option.enabled("enableHierarchy")
    return False


def format_resource_names(prefix: str, verb: str, names: list[str]) -> str:
    """``util.FormatResourceNames``: ``"prefix: verb a, verb b"``."""
    if not names:
        return prefix
    return f"{prefix}: " + ", ".join(f"{verb} {name}" for name in names)


def flat_attr(
    queue: QueueInfo,
    total: Resource,
    guarantees: Resource,
    deserved: Resource | None = None,
) -> QueueAttr:
    """A queue's record outside a hierarchy, from its spec and the cluster's totals alone
    (no job counted yet): its capability (empty when it has none), its real capability and
    its guarantee; ``deserved`` the starting share (capacity's ``spec.deserved``)."""
    capability = flat_capability(queue)
    guarantee = spec_guarantee(queue)
    return QueueAttr(
        name=queue.name,
        weight=queue.weight,
        deserved=deserved if deserved is not None else Resource.empty(),
        capability=capability if capability is not None else Resource.empty(),
        real_capability=flat_real_capability(total, guarantees, guarantee, capability),
        guarantee=guarantee,
    )
