"""capacity's queue records as a session opens: flat (queues with jobs, each on its own) or
as a tree under ``root`` (every queue, usage carried up to every ancestor)."""

from __future__ import annotations

import logging

from scheduler_core.api.queue import ROOT_QUEUE, QueueInfo
from scheduler_core.api.resource import INFINITY, Resource, res_max
from scheduler_core.api.usage import job_usage
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v
from scheduler_core.plugins.fairshare.attrs import (
    DerivationStep,
    QueueAttr,
    capacity_share,
    record_step,
    start_derivation,
    trace,
    trace_attributes,
)
from scheduler_core.plugins.fairshare.hierarchy import (
    HierarchyError,
    ancestry,
    check_hierarchical_queue,
)
from scheduler_core.plugins.fairshare.spec import flat_attr, spec_guarantee

log = logging.getLogger("scheduler_core.plugins.capacity")

_UNKNOWN_QUEUE = "Job <%s/%s> references queue %s which is not found in session queues, skipping"
#: Volcano's MaxInt64 for the unlimited root scalars (a float, like every Resource value).
_MAX_INT64 = float(2**63 - 1)


def build_flat(
    ssn: Session,
    total: Resource,
    guarantees: Resource,
    opts: dict[str, QueueAttr],
    derivation: dict[str, list[DerivationStep]],
) -> None:
    """Queues with jobs only, into ``opts``; deserved from the spec, capped by the real
    capability and raised to the guarantee, each step recorded in ``derivation``."""
    for job in ssn.jobs.values():
        attr = opts.get(job.queue)
        if attr is None:
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            attr = flat_attr(queue, total, guarantees, _spec_deserved(queue))
            opts[queue.name] = attr
            trace(log, v(4), "Added Queue <%s> attributes.", queue.name)
        job_usage(job).add_to(attr)
    for attr in opts.values():
        steps = start_derivation(derivation, attr, "spec.deserved", attr.deserved)
        record_step(
            steps,
            "real capability: cluster - all guarantees + own guarantee, capped by capability",
            attr.real_capability,
            attr.real_capability,
        )
        before = attr.deserved.clone()
        attr.deserved.min_dimension_resource(attr.real_capability, INFINITY)
        record_step(steps, "deserved capped by real capability", attr.deserved, before)
        before = attr.deserved.clone()
        attr.deserved = res_max(attr.deserved, attr.guarantee) or Resource.empty()
        record_step(steps, "deserved raised to guarantee", attr.deserved, before)
        attr.share = capacity_share(attr)
        trace_attributes(log, attr, "capacity")


def build_hierarchical(
    ssn: Session,
    total: Resource,
    opts: dict[str, QueueAttr],
    derivation: dict[str, list[DerivationStep]],
) -> None:
    """Every queue gets a record in ``opts``; a job's usage counts in its leaf and all
    ancestors; real capabilities are derived top-down from the root. Raises HierarchyError
    when the tree is unusable (unknown parent, cycle, job in a non-leaf queue, no root)."""
    for queue in ssn.queues.values():
        opts[queue.name] = QueueAttr(
            name=queue.name,
            weight=queue.weight,
            deserved=_spec_deserved(queue),
            capability=queue.capability.clone()
            if queue.capability is not None
            else Resource.empty(),
            guarantee=spec_guarantee(queue),
        )
    for name, node in opts.items():
        node.ancestors = ancestry(ssn.queues, name)
        if node.ancestors:
            opts[node.ancestors[-1]].children.append(name)

    for job in ssn.jobs.values():
        attr = opts.get(job.queue)
        if attr is None:
            log.warning(_UNKNOWN_QUEUE, job.namespace, job.name, job.queue)
            continue
        if not attr.is_leaf():
            raise HierarchyError(
                f"The Queue <{attr.name}> of Job <{job.namespace}/{job.name}> is not leaf queue"
            )
        usage = job_usage(job)
        usage.add_to(attr)
        for ancestor in attr.ancestors:
            usage.add_to(opts[ancestor])

    root = opts.get(ROOT_QUEUE)
    if root is None:
        raise HierarchyError(f'Root queue "{ROOT_QUEUE}" not found in session queues')
    if root.capability.is_empty():
        # Users may submit more than the cluster has now; only queues they create limit.
        unlimited = Resource.infinite()
        for name in total.scalars or {}:
            unlimited.set_scalar(name, _MAX_INT64)
        root.capability = unlimited
    root.real_capability = root.capability.clone()
    check_hierarchical_queue(opts, derivation, root)

    for attr in opts.values():
        attr.share = capacity_share(attr)
        trace_attributes(log, attr, "capacity")


def _spec_deserved(queue: QueueInfo) -> Resource:
    return queue.deserved.clone() if queue.deserved is not None else Resource.empty()
