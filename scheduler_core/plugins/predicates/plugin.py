"""predicates: can this pod ever run on this node, and if not, could evictions change that?

Each failure carries kube-scheduler's status code, because preemption depends on it: a node
that is merely full (``Unschedulable``) stays a preemption candidate, one the pod can never
use (``UnschedulableAndUnresolvable``: cordoned, wrong labels, untolerated taint) does not.

Resource fit is deliberately not a predicate: actions compare requests with the node's
future idle resources themselves (``resource_fit_error`` gives them the message).

Volumes (``volumes.py``) and devices (``dra.py``) are judged where the engine can judge them
(bound claims: the volume's node affinity and zone, ``ReadWriteOncePod`` conflicts, CSI attach
limits; allocated device claims: where their devices are). Where it cannot (a claim not bound
or not allocated yet, an object the cache lacks, a volume type it does not model, scheduling
gates), the pre-predicate fails and every node is ``NotEvaluable``: actions and verbs then
never evict for the pod, and the session remembers why (``Session.not_evaluable``).

Not evaluated (the model does not carry the data): host ports, inter-pod affinity, topology
spread.
"""

from __future__ import annotations

import logging

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.fit import FitCode, FitError
from scheduler_core.framework.hooks import PRE_PREDICATE, PREDICATE
from scheduler_core.framework.registry import (
    FollowStep,
    Plugin,
    UsageChange,
    follows_nothing,
    register_plugin,
)
from scheduler_core.framework.session import Session
from scheduler_core.logutil import v
from scheduler_core.plugins.predicates import dra, volumes
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

_UNEVALUATED = "ports, inter-pod affinity and topology spread"

SCHEDULING_GATES = "SchedulingGates"

#: How many preemptors' ReadWriteOncePod claim users a session remembers at most (a verb's
#: shared session lives for many calls; one action or verb call needs a handful).
_RWOP_MEMO = 64

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
        self._ssn: Session | None = None
        #: task uid -> (claim key -> placed users) for its ReadWriteOncePod claims, found
        #: when a pre-predicate considers the task (once, not once per node)
        self._rwop: dict[str, tuple[list[str], volumes.ClaimUsers]] = {}

    def can_follow(self, ssn: Session) -> bool:
        return True

    def follow(self, ssn: Session, change: UsageChange) -> FollowStep:
        """Nothing to bring up to date: its memo is of node labels, taints and pod specs, which
        a change of usage does not move, and the users of a preemptor's ReadWriteOncePod
        claims are found again by each pre-predicate; everything else it reads live."""
        return follows_nothing

    def on_session_open(self, ssn: Session) -> None:
        if ssn.memos.first_time("predicates.unevaluated"):
            log.log(v(4), "predicates: %s are not evaluated by this scheduler", _UNEVALUATED)
        self._cache = {}
        self._rwop = {}
        self._ssn = ssn
        ssn.add_hook(PRE_PREDICATE, self.name, self.pre_predicate)
        ssn.add_hook(PREDICATE, self.name, self.predicate)

    def on_session_close(self, ssn: Session) -> None:
        self._cache = {}
        self._rwop = {}
        self._ssn = None

    # --- what the engine cannot judge -----------------------------------------------------

    def not_evaluable(self, task: TaskInfo) -> FitError | None:
        """Why the engine cannot judge where ``task`` fits (scheduling gates, volumes,
        device claims), as a ``NotEvaluable`` verdict naming the filter; None: it can."""
        if not (task.volumes or task.resource_claims or task.scheduling_gates):
            return None
        assert self._ssn is not None
        storage = self._ssn.snapshot.storage
        found: list[tuple[str, list[str]]] = [
            (
                SCHEDULING_GATES,
                [f"scheduling gates {', '.join(task.scheduling_gates)}"]
                if task.scheduling_gates
                else [],
            ),
            (volumes.VOLUME_BINDING, volumes.pod_not_evaluable(task, storage)),
            (dra.DYNAMIC_RESOURCES, dra.pod_not_evaluable(task, storage)),
        ]
        reasons = [reason for _, found_reasons in found for reason in found_reasons]
        if not reasons:
            return None
        plugin = next(name for name, found_reasons in found if found_reasons)
        return FitError(task.key, "", FitCode.NOT_EVALUABLE, reasons, plugin)

    def pre_predicate(self, task: TaskInfo) -> str | None:
        """Fails for a pod the engine cannot judge (recorded in the session, so whoever
        skips the pod can say why), and finds the users of its ReadWriteOncePod claims."""
        assert self._ssn is not None
        ssn = self._ssn
        self._rwop.pop(task.uid, None)
        err = self.not_evaluable(task)
        if err is not None:
            ssn.not_evaluable[task.key] = (task, err)
            log.log(v(3), "Task <%s> is not evaluable: %s", task.key, "; ".join(err.reasons))
            return "not evaluable: " + "; ".join(err.reasons)
        ssn.not_evaluable.pop(task.key, None)
        self._rwop_users(task)
        return None

    def _rwop_users(self, task: TaskInfo) -> tuple[list[str], volumes.ClaimUsers]:
        found = self._rwop.get(task.uid)
        if found is None:
            assert self._ssn is not None
            claims = volumes.rwop_claims(task, self._ssn.snapshot.storage) if task.volumes else []
            users = volumes.claim_users(self._ssn.nodes.values()) if claims else {}
            if len(self._rwop) >= _RWOP_MEMO:  # a long-lived session must not grow
                self._rwop.clear()
            found = self._rwop[task.uid] = (claims, users)
        return found

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        """Pod count first (``Unschedulable``: evictions free slots), then the node-static
        checks, then volumes and device claims; the most severe code wins and every reason
        is kept."""
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
        if task.volumes or task.resource_claims or task.scheduling_gates:
            err = self._storage_verdict(task, node)
            if err is not None:
                err.reasons[:0] = reasons
                return err
        if reasons:
            return FitError(task.key, node.name, FitCode.UNSCHEDULABLE, reasons)
        return None

    def _storage_verdict(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        """Not evaluable first; then what no eviction changes (where a volume or a device
        is); then what evictions can fix (a ReadWriteOncePod claim in use, attach limits)."""
        assert self._ssn is not None
        storage = self._ssn.snapshot.storage
        pending = self.not_evaluable(task)
        if pending is not None:
            pending.node = node.name
            return pending
        err = volumes.volume_binding_error(task, node, storage) or dra.allocated_claims_error(
            task, node, storage
        )
        if err is not None:
            return err
        claims, users = self._rwop_users(task)
        if claims:
            err = volumes.rwop_conflict_error(task, node, claims, users, self._ssn.nodes)
            if err is not None:
                return err
        return volumes.volume_limits_error(task, node, storage)

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
