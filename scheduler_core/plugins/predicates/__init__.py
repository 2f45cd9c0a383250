"""predicates: kube-scheduler's filters as the engine judges them, one module a filter.

``plugin.py`` is the Volcano plugin that registers the ``predicate`` hook and combines the
checks; ``node_static.py`` holds the checks that depend only on the pod spec and one node
(unschedulable, node selector and affinity, taints) and the resource-fit message actions use;
``node_ports.py``, ``inter_pod_affinity.py`` and ``topology_spread.py`` the checks that look
at other pods (``placed.py``: which pods count), each with a pure function judging one node
from scratch beside the state the plugin keeps per incoming pod.
"""

from scheduler_core.plugins.predicates.inter_pod_affinity import (
    ERR_REASON_AFFINITY,
    ERR_REASON_ANTI_AFFINITY,
    ERR_REASON_EXISTING_ANTI_AFFINITY,
    inter_pod_affinity_error,
)
from scheduler_core.plugins.predicates.node_ports import ERR_REASON_NODE_PORTS, node_ports_error
from scheduler_core.plugins.predicates.node_static import (
    ERR_REASON_NODE_AFFINITY,
    ERR_REASON_UNSCHEDULABLE,
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    TAINT_NODE_UNSCHEDULABLE,
    matches_node_selector_and_affinity,
    requirement_matches,
    resource_fit_error,
    term_matches,
    tolerates,
    untolerated_taint,
)
from scheduler_core.plugins.predicates.plugin import (
    CACHE_ENABLE,
    NODE_AFFINITY_ENABLE,
    NODE_POD_NUMBER_EXCEEDED,
    TAINT_TOLERATION_ENABLE,
    PredicatesPlugin,
)
from scheduler_core.plugins.predicates.topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    topology_spread_error,
)

__all__ = [
    "CACHE_ENABLE",
    "ERR_REASON_AFFINITY",
    "ERR_REASON_ANTI_AFFINITY",
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY",
    "ERR_REASON_NODE_AFFINITY",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "ERR_REASON_NODE_PORTS",
    "ERR_REASON_UNSCHEDULABLE",
    "NODE_AFFINITY_ENABLE",
    "NODE_POD_NUMBER_EXCEEDED",
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "PREFER_NO_SCHEDULE",
    "TAINT_NODE_UNSCHEDULABLE",
    "TAINT_TOLERATION_ENABLE",
    "PredicatesPlugin",
    "inter_pod_affinity_error",
    "matches_node_selector_and_affinity",
    "node_ports_error",
    "requirement_matches",
    "resource_fit_error",
    "term_matches",
    "tolerates",
    "topology_spread_error",
    "untolerated_taint",
]
