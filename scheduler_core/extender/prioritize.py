"""prioritize: the configured node order (binpack, nodeorder) on kube-scheduler's 0..10 scale."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import repeat
from typing import Any

import numpy as np

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.cache.convert import pod_to_task
from scheduler_core.extender.accounting import QueueAccounting
from scheduler_core.framework.session import Session

#: kube-scheduler's ``MaxExtenderPriority``: an extender's scores run from 0 to this.
MAX_EXTENDER_PRIORITY = 10
MIN_EXTENDER_PRIORITY = 0


def prioritize_pod(
    acct: QueueAccounting, pod: dict[str, Any], node_names: list[str]
) -> list[tuple[str, int]]:
    """Scores in input order; a node the cache does not know yet scores 0 (neutral).

    Node order needs only the pod and the nodes, never the pod's job, so the shared
    accounting session serves every request (no per-pod session even for a pod the cache
    has not seen yet).
    """
    ssn = acct.session()
    task = pod_to_task(pod, acct.state.priority_values())
    task.status, task.node_name = TaskStatus.PENDING, ""
    known = ssn.nodes
    nodes = list(filter(None, map(known.get, node_names)))  # NodeInfo is always truthy
    scores = extender_scores(ssn, task, nodes) if nodes else {}
    return list(zip(node_names, map(scores.get, node_names, repeat(0)), strict=True))


def extender_scores(ssn: Session, task: TaskInfo, nodes: list[NodeInfo]) -> dict[str, int]:
    """The session's node scores on the extender's 0..10 scale (``MaxExtenderPriority``)."""
    return extender_scale(ssn.node_scores(task, nodes))


def extender_scale(raw: Mapping[str, float]) -> dict[str, int]:
    """Linear in the score, anchored at 0: the best node gets 10, a node scoring 0 (or less)
    gets 0, others ``floor(10 * score / best)``. Anchoring at 0 rather than at the worst
    node keeps the ratio between nodes, so a nearly-as-good node is not pushed to 0 when
    all candidates are close; when no node scores above 0 every node gets 0.

    On arrays (thousands of nodes a request), the same float operations as
    ``math.floor(10 * score / best + 1e-9)`` per node.
    """
    scores = np.fromiter(raw.values(), np.float64, len(raw))
    best = float(scores.max()) if len(scores) else 0.0
    if best <= 0:
        return dict.fromkeys(raw, 0)
    scaled = np.floor(MAX_EXTENDER_PRIORITY * scores / best + 1e-9)
    scaled = np.where(scores >= best, MAX_EXTENDER_PRIORITY, scaled)
    scaled = np.where(scores <= 0, 0, scaled)
    return dict(zip(raw, scaled.astype(np.int64).tolist(), strict=True))
