"""predicates: can this pod ever run on this node, and if not, could evictions change that?

Each failure carries kube-scheduler's status code, because preemption depends on it: a node
that is merely full (``Unschedulable``) stays a preemption candidate, one the pod can never
use (``UnschedulableAndUnresolvable``: cordoned, wrong labels, untolerated taint) does not.

Resource fit is deliberately not a predicate: actions compare requests with the node's
future idle resources themselves (``resource_fit_error`` gives them the message).

Not evaluated (the model does not carry the data): host ports, inter-pod affinity, volumes
and volume limits, topology spread, dynamic resource allocation.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from scheduler_core.api.node import NodeInfo, Taint
from scheduler_core.api.resource import ZERO, Resource
from scheduler_core.api.task import NodeSelectorRequirement, TaskInfo, Toleration
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.fit import FitCode, FitError
from scheduler_core.framework.hooks import PREDICATE
from scheduler_core.framework.registry import Plugin, register_plugin
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v

log = logging.getLogger("scheduler_core.plugins.predicates")

NODE_POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
PREFER_NO_SCHEDULE = "PreferNoSchedule"

NODE_AFFINITY_ENABLE = "predicate.NodeAffinityEnable"
TAINT_TOLERATION_ENABLE = "predicate.TaintTolerationEnable"
CACHE_ENABLE = "predicate.CacheEnable"

_UNEVALUATED = "ports, inter-pod affinity, volumes, topology spread and DRA"
_unevaluated_logged = False


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


_HARD_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})
_UNSCHEDULABLE_TAINT = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=NO_SCHEDULE)


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


# --- resource fit (for actions) -----------------------------------------------------------


def resource_fit_error(task: TaskInfo, node: NodeInfo, against: Resource) -> FitError | None:
    """``Unschedulable`` naming every short resource ("Insufficient cpu") when the task's
    initial request does not fit ``against`` (the node's future idle, usually)."""
    fits, names = task.init_resreq.less_equal_with_resources_name(against, ZERO)
    if fits:
        return None
    return FitError(
        task.key, node.name, FitCode.UNSCHEDULABLE, [f"Insufficient {name}" for name in names]
    )


# --- the plugin ---------------------------------------------------------------------------


_Verdict = tuple[FitCode, tuple[str, ...]] | None


@register_plugin
class PredicatesPlugin(Plugin):
    name = "predicates"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.node_affinity_enable = arguments.get_bool(NODE_AFFINITY_ENABLE, True)
        self.taint_toleration_enable = arguments.get_bool(TAINT_TOLERATION_ENABLE, True)
        self.cache_enable = arguments.get_bool(CACHE_ENABLE, False)
        #: (job, task role, node) -> verdict of the node-static predicates
        self._cache: dict[tuple[str, str, str], _Verdict] = {}

    def on_session_open(self, ssn: Session) -> None:
        global _unevaluated_logged
        if not _unevaluated_logged:
            _unevaluated_logged = True
            log.log(v(4), "predicates: %s are not evaluated by this scheduler", _UNEVALUATED)
        self._cache = {}
        ssn.add_hook(PREDICATE, self.name, self.predicate)

    def on_session_close(self, ssn: Session) -> None:
        self._cache = {}

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        """Pod count first (``Unschedulable``: evictions free slots), then the node-static
        checks; the most severe code wins and every reason is kept."""
        reasons: list[str] = []
        if node.allocatable.max_task_num <= len(node.tasks):
            log.log(
                v(4),
                "NodePodNumber predicates Task <%s/%s> on Node <%s> failed, allocatable <%d>, "
                "existed <%d>",
                task.namespace,
                task.name,
                node.name,
                node.allocatable.max_task_num,
                len(node.tasks),
            )
            reasons.append(NODE_POD_NUMBER_EXCEEDED)

        verdict = self._static_verdict(task, node)
        if verdict is not None:
            code, static_reasons = verdict
            reasons.extend(static_reasons)
            return FitError(task.key, node.name, code, reasons)
        if reasons:
            return FitError(task.key, node.name, FitCode.UNSCHEDULABLE, reasons)
        return None

    def _static_verdict(self, task: TaskInfo, node: NodeInfo) -> _Verdict:
        """Checks that depend only on the pod spec and the node, cached per (job, role,
        node) when ``predicate.CacheEnable`` is set: pods of one role share their spec.
        A pod without a role is never cached (its job's pods may differ)."""
        if not self.cache_enable or not task.role:
            return self._evaluate_static(task, node)
        key = (task.job, task.role, node.name)
        if key in self._cache:
            return self._cache[key]
        verdict = self._evaluate_static(task, node)
        self._cache[key] = verdict
        return verdict

    def _evaluate_static(self, task: TaskInfo, node: NodeInfo) -> _Verdict:
        unresolvable = FitCode.UNSCHEDULABLE_AND_UNRESOLVABLE
        if node.unschedulable and not any(
            tolerates(t, _UNSCHEDULABLE_TAINT) for t in task.tolerations
        ):
            return unresolvable, (ERR_REASON_UNSCHEDULABLE,)
        if self.node_affinity_enable and not matches_node_selector_and_affinity(task, node):
            return unresolvable, (ERR_REASON_NODE_AFFINITY,)
        if self.taint_toleration_enable:
            taint = untolerated_taint(node.taints, task.tolerations, _HARD_EFFECTS)
            if taint is not None:
                return unresolvable, (
                    f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}",
                )
        return None
