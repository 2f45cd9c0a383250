"""kube-scheduler's PodTopologySpread score, which Volcano's nodeorder weighs with
``podtopologyspread.weight``: a pod's ``ScheduleAnyway`` constraints prefer the nodes whose
domains hold fewer matching pods.

Over the scored nodes, a node lacking any constraint's key is ignored (scores 0). For each
constraint, the domains are those of the scored nodes; their matching pods are counted over
every node of the session that carries all the keys and passes the constraint's inclusion
policies (as the filter counts them). A node's raw score sums, per constraint,
``count(domain) * log(domains + 2) + (maxSkew - 1)``; raw scores are turned into
``100 * (max + min - s) / max`` over the scored nodes (100 for all when ``max`` is 0), so
the emptiest domain scores highest. The cluster's default constraints are not applied: the
engine does not watch the Services and controllers whose selectors kube-scheduler would use.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pod_constraints import TopologySpreadConstraint
from scheduler_core.api.task import TaskInfo
from scheduler_core.plugins.predicates.topology_spread import counts_on, includes

MAX_SCORE = 100
HOSTNAME = "kubernetes.io/hostname"


def soft_constraints(task: TaskInfo) -> tuple[TopologySpreadConstraint, ...]:
    return tuple(c for c in task.spread_constraints if not c.hard)


def spread_scores(
    task: TaskInfo, nodes: Sequence[NodeInfo], all_nodes: Iterable[NodeInfo]
) -> dict[str, float] | None:
    """Each of ``nodes``' score, or None when the pod has no ``ScheduleAnyway``
    constraint (kube-scheduler skips the plugin then)."""
    constraints = soft_constraints(task)
    if not constraints:
        return None
    keys = [c.topology_key for c in constraints]
    scored = [n for n in nodes if all(k in n.labels for k in keys)]
    domains = [{n.labels[c.topology_key] for n in scored} for c in constraints]
    counts: list[dict[str, int]] = [dict.fromkeys(d, 0) for d in domains]
    for node in all_nodes:
        labels = node.labels
        if not all(k in labels for k in keys):
            continue
        for i, c in enumerate(constraints):
            if c.topology_key == HOSTNAME:
                continue  # counted on the scored node itself
            value = labels[c.topology_key]
            if value in counts[i] and includes(task, c, node):
                counts[i][value] += counts_on(task, c, node)
    weights = [
        math.log((len(scored) if c.topology_key == HOSTNAME else len(d)) + 2)
        for c, d in zip(constraints, domains, strict=True)
    ]
    raw: dict[str, int] = {}
    for node in scored:
        score = 0.0
        for i, c in enumerate(constraints):
            if c.topology_key == HOSTNAME:  # the node's own pods, whatever the policies
                count = counts_on(task, c, node)
            else:
                count = counts[i][node.labels[c.topology_key]]
            score += count * weights[i] + (c.max_skew - 1)
        raw[node.name] = round(score)
    out = dict.fromkeys((n.name for n in nodes), 0.0)
    if not raw:
        return out
    low, high = min(raw.values()), max(raw.values())
    for name, points in raw.items():
        out[name] = float(MAX_SCORE if high == 0 else MAX_SCORE * (high + low - points) // high)
    return out
