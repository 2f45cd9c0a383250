"""nodeorder: kube-scheduler's node scores, weighted and summed as Volcano's plugin does.

``plugin.py`` is the plugin (the batch hook, the per-node path, the pod-level scores);
``scores.py`` the formulas on arrays; ``short_list.py`` the same on Python numbers for a
short list of nodes; ``args.py`` the weights, read once into ``NodeOrderArgs``.
"""

from scheduler_core.plugins.nodeorder.args import (
    BALANCED_RESOURCE_WEIGHT,
    IMAGE_LOCALITY_WEIGHT,
    LEAST_REQUESTED_WEIGHT,
    MOST_REQUESTED_WEIGHT,
    NODE_AFFINITY_WEIGHT,
    POD_AFFINITY_WEIGHT,
    POD_TOPOLOGY_SPREAD_WEIGHT,
    TAINT_TOLERATION_WEIGHT,
    NodeOrderArgs,
)
from scheduler_core.plugins.nodeorder.plugin import NodeOrderPlugin
from scheduler_core.plugins.nodeorder.scores import (
    BALANCED_RESOURCES,
    PodRequests,
    balanced_scores,
    cpu_memory_requests,
    least_requested_scores,
    most_requested_scores,
    node_affinity_scores,
    normalize_reverse_scores,
)

__all__ = [
    "BALANCED_RESOURCES",
    "BALANCED_RESOURCE_WEIGHT",
    "IMAGE_LOCALITY_WEIGHT",
    "LEAST_REQUESTED_WEIGHT",
    "MOST_REQUESTED_WEIGHT",
    "NODE_AFFINITY_WEIGHT",
    "POD_AFFINITY_WEIGHT",
    "POD_TOPOLOGY_SPREAD_WEIGHT",
    "TAINT_TOLERATION_WEIGHT",
    "NodeOrderArgs",
    "NodeOrderPlugin",
    "PodRequests",
    "balanced_scores",
    "cpu_memory_requests",
    "least_requested_scores",
    "most_requested_scores",
    "node_affinity_scores",
    "normalize_reverse_scores",
]
