"""Capacity's queue tree (``enableHierarchy: true``): queues under ``root`` through
``spec.parent``, the top-down derivation of each child's real capability, and the ancestry
comparisons reclaim and queue order use. Volcano keeps the same in
``pkg/scheduler/plugins/util/queue_hierarchy.go`` and the capacity plugin."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from scheduler_core.api.queue import ROOT_QUEUE, QueueInfo
from scheduler_core.api.resource import (
    INFINITY,
    ZERO,
    Resource,
    exceeded_part,
    intersection,
    res_max,
)
from scheduler_core.api.task import TaskInfo
from scheduler_core.plugins.fairshare.attrs import (
    DerivationStep,
    QueueAttr,
    record_step,
    start_derivation,
    trace,
)

log = logging.getLogger("scheduler_core.plugins.capacity")


class HierarchyError(ValueError):
    """The queue tree cannot be used; the session then refuses every capacity decision."""


def queue_level(l: QueueAttr, r: QueueAttr) -> int:
    """``getQueueLevel``: index (root = 0) of the deepest common ancestor in the two
    root-first ancestor lists."""
    level = 0
    for i in range(min(len(l.ancestors), len(r.ancestors))):
        if l.ancestors[i] != r.ancestors[i]:
            return level
        level = i
    return level


def ancestor_at_depth(attr: QueueAttr, depth: int) -> str | None:
    """The ancestor ``depth`` levels up (1 = parent), or None above the root."""
    if depth <= 0 or len(attr.ancestors) < depth:
        return None
    return attr.ancestors[len(attr.ancestors) - depth]


def ancestors_by_level(attr: QueueAttr, max_level: int) -> dict[int, str]:
    found: dict[int, str] = {}
    for level in range(1, max_level + 1):
        ancestor = ancestor_at_depth(attr, level)
        if ancestor is not None:
            found[level] = ancestor
    return found


def compare_share_with_deserved(l: QueueAttr, r: QueueAttr) -> int:
    """Lower share first; on a tie a queue that deserves something goes before a
    best-effort one (both are at share 1), which keeps reclaim from thrashing."""
    if l.share == r.share:
        l_has, r_has = not l.deserved.is_empty(), not r.deserved.is_empty()
        if l_has == r_has:
            return 0
        return -1 if l_has else 1
    return -1 if l.share < r.share else 1


def has_relevant_deserved(task: TaskInfo, deserved: Resource) -> bool:
    """Does the task use any dimension the queue is deserved (both >= epsilon)?"""
    return bool(intersection(task.resreq, deserved))


def ancestry(queues: Mapping[str, QueueInfo], name: str) -> list[str]:
    """Root-first ancestors of ``name``; an unknown parent or a cycle is an error.

    Volcano's own walk misses cycles that do not pass through the root (it stops at any
    queue already seen); a cycle here is always reported, since such queues would otherwise
    silently get no capability at all.
    """
    chain: list[str] = []
    seen = {name}
    current = queues[name]
    while current.name != ROOT_QUEUE:
        parent = current.parent or ROOT_QUEUE
        if parent not in queues:
            raise HierarchyError(f"the queue {current.name} has invalid parent queue {parent}")
        if parent in seen:
            raise HierarchyError(f"cycle detected in queue hierarchy for queue {name}")
        seen.add(parent)
        chain.append(parent)
        current = queues[parent]
    chain.reverse()
    return chain


def check_hierarchical_queue(
    opts: Mapping[str, QueueAttr], derivation: dict[str, list[DerivationStep]], attr: QueueAttr
) -> None:
    """Top-down: children inherit unset capability dimensions, the root deserves and
    guarantees what its children do, and each child's real capability is its parent's
    less the siblings' guarantees plus its own. Inconsistencies are only logged, as in
    Volcano: a bad spec must not stop scheduling."""
    children = [opts[name] for name in attr.children]
    sum_guarantee = Resource.empty()
    sum_deserved = Resource.empty()
    for child in children:
        steps = start_derivation(derivation, child, "spec.deserved", child.deserved)
        before = child.deserved
        child.deserved = res_max(child.deserved, child.guarantee) or Resource.empty()
        record_step(steps, "deserved raised to guarantee", child.deserved, before)
        sum_deserved.add(child.deserved)
        sum_guarantee.add(child.guarantee)
        capability = child.capability
        if capability.milli_cpu <= 0:
            capability.milli_cpu = attr.capability.milli_cpu
        if capability.memory <= 0:
            capability.memory = attr.capability.memory
        if attr.capability.scalars is not None:
            for name, quant in attr.capability.scalars.items():
                if capability.scalars is None or name not in capability.scalars:
                    capability.set_scalar(name, quant)
        exceeds, names = capability.greater_partly(attr.capability, INFINITY)
        if exceeds:
            trace(
                log,
                logging.ERROR,
                "Child queue %s capability (%s) exceeds parent queue %s capability (%s) on "
                "resources %s. Child's effective capability will be limited by parent.",
                child.name,
                capability,
                attr.name,
                attr.capability,
                names,
            )
    if attr.name == ROOT_QUEUE:
        attr.guarantee = sum_guarantee
        attr.deserved = sum_deserved
    for child in children:
        real = exceeded_part(attr.real_capability, sum_guarantee).clone().add(child.guarantee)
        record_step(
            derivation[child.name],
            f"real capability: {attr.name}'s real capability - its children's guarantees "
            "+ own guarantee",
            real,
            real,
        )
        before = real.clone()
        real.min_dimension_resource(child.capability, INFINITY)
        child.real_capability = real
        record_step(derivation[child.name], "real capability capped by capability", real, before)
    if attr.deserved.less_partly(sum_deserved, ZERO):
        trace(
            log,
            logging.ERROR,
            "Sum of child queue deserved (%s) exceeds parent queue %s deserved (%s). "
            "This may affect resource distribution during scheduling.",
            sum_deserved,
            attr.name,
            attr.deserved,
        )
    if attr.guarantee.less_partly(sum_guarantee, ZERO):
        trace(
            log,
            logging.ERROR,
            "Sum of child queue guarantees (%s) exceeds parent queue %s guarantee (%s). "
            "Not all child guarantees can be satisfied simultaneously.",
            sum_guarantee,
            attr.name,
            attr.guarantee,
        )
    for child in children:
        check_hierarchical_queue(opts, derivation, child)
