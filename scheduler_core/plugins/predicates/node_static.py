"""The node-static checks kube-scheduler's NodeUnschedulable, NodeAffinity and
TaintToleration filters make: each depends only on the pod's spec and one node, so a verdict
can be cached per pod role and node."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from scheduler_core.api.node import NodeInfo, Taint
from scheduler_core.api.task import NodeSelectorRequirement, TaskInfo, Toleration
from scheduler_core.framework.status import Code

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"

# --- taints and tolerations ---------------------------------------------------------------


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """k8s ``Toleration.ToleratesTaint``: empty effect/key match any; "" means Equal."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator in ("", "Equal"):
        return toleration.value == taint.value
    return toleration.operator == "Exists"


def untolerated_taint(
    taints: Iterable[Taint], tolerations: Iterable[Toleration], effects: frozenset[str]
) -> Taint | None:
    """The first taint with one of ``effects`` that no toleration tolerates."""
    tolerations = tuple(tolerations)
    for taint in taints:
        if taint.effect not in effects:
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


HARD_TAINT_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})
UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=NO_SCHEDULE)

# --- node selectors -----------------------------------------------------------------------


def _as_int(text: str) -> int | None:
    try:
        return int(text, 10)
    except ValueError:
        return None


def requirement_matches(req: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    """One ``NodeSelectorRequirement`` against node labels (k8s label-selector semantics).

    ``Gt``/``Lt`` need exactly one integer value and an integer label; anything malformed,
    like an unknown operator, matches nothing, as a selector that fails to parse does.
    """
    op = req.operator
    present = req.key in labels
    if op == "In":
        return present and labels[req.key] in req.values
    if op == "NotIn":
        return not present or labels[req.key] not in req.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(req.values) != 1:
            return False
        bound = _as_int(req.values[0])
        value = _as_int(labels[req.key])
        if bound is None or value is None:
            return False
        return value > bound if op == "Gt" else value < bound
    return False


def term_matches(term: Iterable[NodeSelectorRequirement], labels: Mapping[str, str]) -> bool:
    """A term ANDs its requirements; an empty term matches no node (k8s)."""
    matched_any = False
    for req in term:
        if not requirement_matches(req, labels):
            return False
        matched_any = True
    return matched_any


def matches_node_selector_and_affinity(task: TaskInfo, node: NodeInfo) -> bool:
    """``spec.nodeSelector`` (every label equal) and required node affinity (terms ORed).

    A required term that reaches us empty is taken as matching: the model keeps only
    ``matchExpressions``, so an empty term almost always held ``matchFields`` (DaemonSet
    pods pin their node that way), which kube-scheduler's own NodeAffinity filter has
    already enforced before the extender is asked. Rejecting it would make such pods
    unschedulable everywhere.
    """
    labels = node.labels
    for key, value in task.node_selector.items():
        if labels.get(key) != value:
            return False
    if not task.required_affinity:
        return True
    return any(not term or term_matches(term, labels) for term in task.required_affinity)


# --- the three together ------------------------------------------------------------------

#: A node-static verdict: the code and reasons of the first check that fails, or None.
StaticVerdict = tuple[Code, tuple[str, ...]] | None


def node_static_verdict(
    task: TaskInfo, node: NodeInfo, *, node_affinity: bool, taint_toleration: bool
) -> StaticVerdict:
    """NodeUnschedulable, then NodeAffinity and TaintToleration where switched on (Volcano's
    order): each failure is ``UnschedulableAndUnresolvable``, since no eviction changes it."""
    unresolvable = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    if node.unschedulable and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in task.tolerations):
        return unresolvable, (ERR_REASON_UNSCHEDULABLE,)
    if node_affinity and not matches_node_selector_and_affinity(task, node):
        return unresolvable, (ERR_REASON_NODE_AFFINITY,)
    if taint_toleration:
        taint = untolerated_taint(node.taints, task.tolerations, HARD_TAINT_EFFECTS)
        if taint is not None:
            return unresolvable, (f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}",)
    return None
