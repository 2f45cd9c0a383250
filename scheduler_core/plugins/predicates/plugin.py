"""predicates: can this pod ever run on this node, and if not, could evictions change that?

Each failure carries kube-scheduler's status code, because preemption depends on it: a node
that is merely full (``Unschedulable``) stays a preemption candidate, one the pod can never
use (``UnschedulableAndUnresolvable``: cordoned, wrong labels, untolerated taint) does not.

Resource fit is deliberately not a predicate: actions compare requests with the node's
future idle resources themselves (``framework/resource_fit.py`` gives them the message).

The plugin combines the filters in Volcano's order: the pod count, the node-static checks
(``node_static.py``, cached per pod role with ``predicate.CacheEnable``), the storage and
device filters with what the engine cannot judge (``storage_filters.py``), and the filters
that look at other pods, with their per-pod PreFilter states (``pod_filters.py``). Its
arguments are read once into ``PredicatesArgs`` (``args.py``).

A pod not placed in the session gets, on each of the session's nodes, the verdict a pod
with the same fit signature got there since the session's placements last changed: a
gang's waiting pods are judged once a node, not once a pod each.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from dataclasses import replace
from typing import ClassVar

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.hooks import PRE_PREDICATE, PREDICATE
from scheduler_core.framework.registry import FollowStep, Plugin, UsageChange
from scheduler_core.framework.session import EventHandler, Session
from scheduler_core.framework.status import Code, Status
from scheduler_core.logutil import v
from scheduler_core.plugins.predicates import volumes
from scheduler_core.plugins.predicates.args import PredicatesArgs
from scheduler_core.plugins.predicates.node_static import StaticVerdict, node_static_verdict
from scheduler_core.plugins.predicates.pod_filters import PodFilters, share_key
from scheduler_core.plugins.predicates.storage_filters import StorageFilters

log = logging.getLogger("scheduler_core.plugins.predicates")

NODE_POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"

#: What every kube-scheduler filter judges that this plugin cannot: such pods get a
#: ``NotEvaluable`` verdict on every node.
_NOT_EVALUABLE = (
    "pods with unbound claims, unallocated device claims, volume types the engine does not "
    "model, or scheduling gates"
)

#: Verdicts a session remembers at once (an explanation judges every node once).
_VERDICTS_LIMIT = 16384

#: Pods whose fit signatures the owner of a session's memos keeps at once.
_SIGNATURES_LIMIT = 65536


def _signature_memo() -> dict[str, tuple[TaskInfo, Hashable]]:
    return {}


class PredicatesPlugin(Plugin[PredicatesArgs]):
    name = "predicates"
    args_type: ClassVar[type[PredicatesArgs]] = PredicatesArgs

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.pod_filters = PodFilters(self.args)
        self.storage_filters = StorageFilters()
        #: (job, task role, node) -> verdict of the node-static predicates
        self._cache: dict[tuple[str, str, str], StaticVerdict] = {}
        self._ssn: Session | None = None
        #: (fit signature, the cache's placement epoch, catalog version, node) -> verdict,
        #: for pods not placed in the session on the session's own nodes; forgotten with any
        #: placement a statement changes
        self._verdicts: dict[tuple[Hashable, int, int, str], Status | None] = {}
        #: task uid -> (the task, its fit signature), kept in the owner's memos
        self._signatures: dict[str, tuple[TaskInfo, Hashable]] = {}

    def can_follow(self, ssn: Session) -> bool:
        return True

    def follow(self, ssn: Session, change: UsageChange) -> FollowStep:
        """Its memo of node labels, taints and pod specs stays, and the users of a
        preemptor's ReadWriteOncePod claims are found again by each pre-predicate; but its
        counts of pods per topology domain (inter-pod affinity, topology spread) move with
        any pod placed or gone, so it forgets them."""
        return self.cluster_changed

    def on_session_open(self, ssn: Session) -> None:
        if ssn.memos.first_time("predicates.not-evaluable"):
            log.log(
                v(4),
                "predicates: %s are not evaluable: nothing is evicted for them",
                _NOT_EVALUABLE,
            )
        self._cache = {}
        self._verdicts = {}
        self._signatures = ssn.memos.slot("predicates.fit-signatures", _signature_memo)
        self._ssn = ssn
        self.storage_filters.open(ssn)
        self.pod_filters.open(ssn)
        ssn.add_hook(PRE_PREDICATE, self.name, self.pre_predicate)
        ssn.add_hook(PREDICATE, self.name, self.predicate)
        ssn.add_event_handler(
            EventHandler(
                allocate=self._placed, deallocate=self._placed, allocate_all=self._placed_all
            )
        )

    def on_session_close(self, ssn: Session) -> None:
        self._cache = {}
        self._verdicts = {}
        self._signatures = {}
        self.pod_filters.close()
        self.storage_filters.close()
        self._ssn = None

    def not_evaluable(self, task: TaskInfo) -> Status | None:
        """Why the engine cannot judge where ``task`` fits (scheduling gates, volumes,
        device claims), as a ``NotEvaluable`` verdict naming the filter; None: it can."""
        return self.storage_filters.not_evaluable(task)

    def pre_predicate(self, task: TaskInfo) -> str | None:
        """Fails for a pod the engine cannot judge (recorded in the session, so whoever
        skips the pod can say why), and finds the users of its ReadWriteOncePod claims."""
        assert self._ssn is not None
        ssn = self._ssn
        err = self.storage_filters.pre_filter(task)
        if err is not None:
            ssn.not_evaluable[task.key] = (task, err)
            log.log(v(3), "Task <%s> is not evaluable: %s", task.key, "; ".join(err.reasons))
            return "not evaluable: " + "; ".join(err.reasons)
        ssn.not_evaluable.pop(task.key, None)
        return None

    def _placed(self, task: TaskInfo) -> None:
        """A placement changed (a statement evicted, pipelined or allocated ``task``, or
        undid that): no remembered verdict holds, and the pod filters count its node again."""
        self._verdicts = {}
        self.pod_filters.placed(task)

    def _placed_all(self, tasks: Sequence[TaskInfo]) -> None:
        """``_placed`` of each task in turn (an accounting session charging its open
        assumptions back, none on a node: the counts are forgotten once, not per task)."""
        self._verdicts = {}
        self.pod_filters.placed_all(tasks)

    def cluster_changed(self) -> None:
        """The session's nodes changed under it (the accounting session following the
        cluster): forget every verdict and count."""
        self._verdicts = {}
        self.pod_filters.forget()

    def predicate(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        """Pod count first (``Unschedulable``: evictions free slots), then the node-static
        checks, then volumes and device claims; the most severe code wins and every reason
        is kept.

        A pod not placed in the session, judged on one of the session's own nodes, gets the
        verdict a pod with the same fit signature got there since the session's placements
        last changed: a gang's waiting pods are judged once a node, not once a pod each."""
        ssn = self._ssn
        if ssn is None or ssn.nodes.get(node.name) is not node:
            return self._judge(task, node)
        if self.pod_filters.placed_here(task):
            return self._judge(task, node)
        snapshot = ssn.snapshot
        key = (
            self._fit_signature(task),
            snapshot.placement_epoch.value,
            snapshot.storage.version,
            node.name,
        )
        if key in self._verdicts:
            remembered = self._verdicts[key]
            if remembered is None:
                return None
            # The reasons were logged when the verdict was first worked out; at V(4) say
            # whose verdict this one repeats (the same code path at every verbosity).
            log.log(
                v(4),
                "Predicates Task <%s/%s> on Node <%s>: the verdict of a pod that reads alike: %s",
                task.namespace,
                task.name,
                node.name,
                "; ".join(remembered.reasons),
            )
            return replace(remembered, reasons=list(remembered.reasons), task=task.key)
        verdict = self._judge(task, node)
        if len(self._verdicts) >= _VERDICTS_LIMIT:  # a long-lived session must not grow
            self._verdicts = {}
        self._verdicts[key] = verdict
        return verdict

    def _fit_signature(self, task: TaskInfo) -> Hashable:
        """Everything a verdict reads of a pod that is not placed (its uid only leaves a
        placed pod out of its own counts), worked out once per task object: the loop's
        sessions share the cache's task objects, so once for as long as the pod stays."""
        signatures = self._signatures
        found = signatures.get(task.uid)
        if found is not None and found[0] is task:
            return found[1]
        signature = (
            share_key(task),
            task.host_ports,
            volumes.volumes_signature(task),
            task.resource_claims,
            task.scheduling_gates,
        )
        if len(signatures) >= _SIGNATURES_LIMIT:
            signatures.clear()
        signatures[task.uid] = (task, signature)
        return signature

    def _judge(self, task: TaskInfo, node: NodeInfo) -> Status | None:
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
            return Status(code, reasons, task=task.key, node=node.name)
        if task.volumes or task.resource_claims or task.scheduling_gates:
            err = self.storage_filters.check(task, node)
            if err is not None:
                return replace(err, reasons=reasons + err.reasons) if reasons else err
        err = self.pod_filters.check(task, node)
        if err is not None:
            return replace(err, reasons=reasons + err.reasons) if reasons else err
        if reasons:
            return Status(Code.UNSCHEDULABLE, reasons, task=task.key, node=node.name)
        return None

    def _static_verdict(self, task: TaskInfo, node: NodeInfo) -> StaticVerdict:
        """Checks that depend only on the pod spec and the node, cached per (job, role,
        node) when ``predicate.CacheEnable`` is set: pods of one role share their spec.
        A pod without a role is never cached (its job's pods may differ)."""
        key = (task.job, task.role, node.name) if self.args.cache_enable and task.role else None
        if key is not None and key in self._cache:
            return self._cache[key]
        verdict = node_static_verdict(
            task,
            node,
            node_affinity=self.args.node_affinity_enable,
            taint_toleration=self.args.taint_toleration_enable,
        )
        if key is not None:
            self._cache[key] = verdict
        return verdict
