"""predicates: kube-scheduler's filters as the engine judges them, one module a filter.

``plugin.py`` is the Volcano plugin that registers the ``predicate`` hook and combines the
checks, with its arguments read once into ``PredicatesArgs`` (``args.py``); ``node_static.py``
holds the checks that depend only on the pod spec and one node (unschedulable, node selector
and affinity, taints); ``node_ports.py``, ``inter_pod_affinity.py`` and ``topology_spread.py``
the checks that look at other pods (``placed.py``: which pods count), each with a pure
function judging one node from scratch, and ``pod_filters.py`` the states the plugin keeps
for them per incoming pod; ``volumes.py`` and ``dra.py`` the checks on what a pod mounts and
claims, combined with what the engine cannot judge in ``storage_filters.py``. The
resource-fit message actions use is the framework's (``resource_fit_error``), re-exported
here with the filters' other wordings.
"""

from scheduler_core.framework.resource_fit import resource_fit_error
from scheduler_core.plugins.predicates.args import (
    CACHE_ENABLE,
    NODE_AFFINITY_ENABLE,
    TAINT_TOLERATION_ENABLE,
    PredicatesArgs,
)
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
    term_matches,
    tolerates,
    untolerated_taint,
)
from scheduler_core.plugins.predicates.plugin import NODE_POD_NUMBER_EXCEEDED, PredicatesPlugin
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
    "PredicatesArgs",
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
