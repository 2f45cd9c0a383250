"""prioritize: the configured node order (binpack, nodeorder) on kube-scheduler's 0..10 scale."""

from __future__ import annotations

from typing import Any

from scheduler_core.api.types import TaskStatus
from scheduler_core.cache.convert import pod_to_task
from scheduler_core.extender.accounting import QueueAccounting
from scheduler_core.plugins.nodeorder import extender_scores


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
    nodes = [known[n] for n in node_names if n in known]
    scores = extender_scores(ssn, task, nodes) if nodes else {}
    return [(name, scores.get(name, 0)) for name in node_names]
