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

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.fit import FitCode, FitError
from scheduler_core.framework.hooks import PREDICATE
from scheduler_core.framework.registry import (
    FollowStep,
    Plugin,
    UsageChange,
    follows_nothing,
    register_plugin,
)
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v
from scheduler_core.plugins.predicates.node_static import (
    ERR_REASON_NODE_AFFINITY,
    ERR_REASON_UNSCHEDULABLE,
    HARD_TAINT_EFFECTS,
    UNSCHEDULABLE_TAINT,
    matches_node_selector_and_affinity,
    tolerates,
    untolerated_taint,
)

log = logging.getLogger("scheduler_core.plugins.predicates")

NODE_POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"

NODE_AFFINITY_ENABLE = "predicate.NodeAffinityEnable"
TAINT_TOLERATION_ENABLE = "predicate.TaintTolerationEnable"
CACHE_ENABLE = "predicate.CacheEnable"

_UNEVALUATED = "ports, inter-pod affinity, volumes, topology spread and DRA"

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

    def can_follow(self, ssn: Session) -> bool:
        return True

    def follow(self, ssn: Session, change: UsageChange) -> FollowStep:
        """Nothing to bring up to date: its memo is of node labels, taints and pod specs, which
        a change of usage does not move; everything else it reads live."""
        return follows_nothing

    def on_session_open(self, ssn: Session) -> None:
        if ssn.memos.first_time("predicates.unevaluated"):
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
            tolerates(t, UNSCHEDULABLE_TAINT) for t in task.tolerations
        ):
            return unresolvable, (ERR_REASON_UNSCHEDULABLE,)
        if self.node_affinity_enable and not matches_node_selector_and_affinity(task, node):
            return unresolvable, (ERR_REASON_NODE_AFFINITY,)
        if self.taint_toleration_enable:
            taint = untolerated_taint(node.taints, task.tolerations, HARD_TAINT_EFFECTS)
            if taint is not None:
                return unresolvable, (
                    f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}",
                )
        return None
