"""predicates: kube-scheduler's filters as the engine judges them, one module a filter.

``plugin.py`` is the Volcano plugin that registers the ``predicate`` hook and combines the
checks; ``node_static.py`` holds the checks that depend only on the pod spec and one node
(unschedulable, node selector and affinity, taints) and the resource-fit message actions use.
"""

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

__all__ = [
    "CACHE_ENABLE",
    "ERR_REASON_NODE_AFFINITY",
    "ERR_REASON_UNSCHEDULABLE",
    "NODE_AFFINITY_ENABLE",
    "NODE_POD_NUMBER_EXCEEDED",
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "PREFER_NO_SCHEDULE",
    "TAINT_NODE_UNSCHEDULABLE",
    "TAINT_TOLERATION_ENABLE",
    "PredicatesPlugin",
    "matches_node_selector_and_affinity",
    "requirement_matches",
    "resource_fit_error",
    "term_matches",
    "tolerates",
    "untolerated_taint",
]
