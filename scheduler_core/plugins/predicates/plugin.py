"""predicates: can this pod ever run on this node, and if not, could evictions change that?

Each failure carries kube-scheduler's status code, because preemption depends on it: a node
that is merely full (``Unschedulable``) stays a preemption candidate, one the pod can never
use (``UnschedulableAndUnresolvable``: cordoned, wrong labels, untolerated taint) does not.

Resource fit is deliberately not a predicate: actions compare requests with the node's
future idle resources themselves (``resource_fit_error`` gives them the message).

Host ports, inter-pod affinity and topology spread look at other pods: their state per
incoming pod (kube-scheduler's PreFilter: counts per topology domain, and what each node
added to them) is worked out on first use and kept for the session. A statement's eviction
or placement (an allocate or deallocate event) marks its node, which alone is counted again
before the next verdict (kube-scheduler's AddPod / RemovePod); a what-if copy of a node is
judged by the difference between the copy and the session's node. So a victim search costs
walks over one node's pods, not over the cluster's. Only a change the session did not make
(the live cache moving the accounting session's shared nodes: the placement epoch) or one
it cannot place (an undone pipeline) forgets the counts. A pod with none of these
constraints, in a cluster where no pod has required anti-affinity, costs a few attribute
reads. Building a state walks only what can match (``label_index.py``: the nodes holding
pods with the labels a selector requires, the distinct anti-affinity terms of placed pods,
the nodes a spread constraint counts), and pods placed nowhere whose states read the same
fields share one state, so a gang builds it once.


Volumes (``volumes.py``) and devices (``dra.py``) are judged where the engine can judge them
(bound claims: the volume's node affinity and zone, ``ReadWriteOncePod`` conflicts, CSI attach
limits; allocated device claims: where their devices are). Where it cannot (a claim not bound
or not allocated yet, an object the cache lacks, a volume type it does not model, scheduling
gates), the pre-predicate fails and every node is ``NotEvaluable``: actions and verbs then
never evict for the pod, and the session remembers why (``Session.not_evaluable``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import replace

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pod_constraints import TopologySpreadConstraint
from scheduler_core.api.storage import StorageCatalog
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.hooks import PRE_PREDICATE, PREDICATE
from scheduler_core.framework.registry import FollowStep, Plugin, UsageChange, register_plugin
from scheduler_core.framework.session import EventHandler, Session
from scheduler_core.framework.status import Code, Status
from scheduler_core.logutil import v
from scheduler_core.plugins.predicates import dra, volumes
from scheduler_core.plugins.predicates.inter_pod_affinity import AffinityState
from scheduler_core.plugins.predicates.label_index import KeptLabels, LabelIndex
from scheduler_core.plugins.predicates.node_ports import node_ports_error
from scheduler_core.plugins.predicates.node_static import (
    ERR_REASON_NODE_AFFINITY,
    ERR_REASON_UNSCHEDULABLE,
    HARD_TAINT_EFFECTS,
    UNSCHEDULABLE_TAINT,
    matches_node_selector_and_affinity,
    tolerates,
    untolerated_taint,
)
from scheduler_core.plugins.predicates.topology_spread import (
    DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SpreadState,
    included_nodes,
    parse_default_constraints,
)

log = logging.getLogger("scheduler_core.plugins.predicates")

NODE_POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"

NODE_AFFINITY_ENABLE = "predicate.NodeAffinityEnable"
TAINT_TOLERATION_ENABLE = "predicate.TaintTolerationEnable"
CACHE_ENABLE = "predicate.CacheEnable"
NODE_PORTS_ENABLE = "predicate.NodePortsEnable"
POD_AFFINITY_ENABLE = "predicate.PodAffinityEnable"
POD_TOPOLOGY_SPREAD_ENABLE = "predicate.PodTopologySpreadEnable"

SCHEDULING_GATES = "SchedulingGates"

#: What every kube-scheduler filter judges that this plugin cannot: such pods get a
#: ``NotEvaluable`` verdict on every node.
_NOT_EVALUABLE = (
    "pods with unbound claims, unallocated device claims, volume types the engine does not "
    "model, or scheduling gates"
)

#: How many preemptors' ReadWriteOncePod claim users a session remembers at most (a verb's
#: shared session lives for many calls; one action or verb call needs a handful).
_RWOP_MEMO = 64

_PodStorageEntry = tuple[TaskInfo, int, Status | None, volumes.PodStorage]

#: Verdicts a session remembers at once (an explanation judges every node once).
_VERDICTS_LIMIT = 16384

#: Pods whose fit signatures the owner of a session's memos keeps at once.
_SIGNATURES_LIMIT = 65536


def _signature_memo() -> dict[str, tuple[TaskInfo, Hashable]]:
    return {}


#: Pods whose PreFilter states a session keeps at once.
_STATES_LIMIT = 1024


def _share_key(task: TaskInfo) -> Hashable:
    """Everything the PreFilter states read of a pod other than its uid (which only leaves
    the pod out of its own counts): pods with equal keys, none of them placed, have equal
    states."""
    return (
        task.namespace,
        frozenset(task.labels.items()),
        task.pod_affinity,
        task.spread_constraints,
        frozenset(task.node_selector.items()),
        tuple(tuple((r.key, r.operator, r.values) for r in t) for t in task.required_affinity),
        tuple((t.key, t.operator, t.value, t.effect) for t in task.tolerations),
    )


# --- the plugin ---------------------------------------------------------------------------


_Verdict = tuple[Code, tuple[str, ...]] | None


@register_plugin
class PredicatesPlugin(Plugin):
    name = "predicates"

    def __init__(self, arguments: Arguments) -> None:
        super().__init__(arguments)
        self.node_affinity_enable = arguments.get_bool(NODE_AFFINITY_ENABLE, True)
        self.taint_toleration_enable = arguments.get_bool(TAINT_TOLERATION_ENABLE, True)
        self.cache_enable = arguments.get_bool(CACHE_ENABLE, False)
        self.node_ports_enable = arguments.get_bool(NODE_PORTS_ENABLE, True)
        self.pod_affinity_enable = arguments.get_bool(POD_AFFINITY_ENABLE, True)
        self.topology_spread_enable = arguments.get_bool(POD_TOPOLOGY_SPREAD_ENABLE, True)
        raw_defaults = arguments.raw().get(DEFAULT_CONSTRAINTS)
        self.default_constraints = (
            parse_default_constraints(raw_defaults)
            if raw_defaults is not None
            else SYSTEM_DEFAULT_CONSTRAINTS
        )
        self._hard_defaults = any(c.hard for c in self.default_constraints)
        #: (job, task role, node) -> verdict of the node-static predicates
        self._cache: dict[tuple[str, str, str], _Verdict] = {}
        self._ssn: Session | None = None
        #: task uid -> (claim key -> placed users) for its ReadWriteOncePod claims, found
        #: when a pre-predicate considers the task (once, not once per node)
        self._rwop: dict[str, tuple[list[str], volumes.ClaimUsers]] = {}
        #: task uid -> (the task, the catalog version, its not-evaluable verdict, its
        #: resolved claims): looked up once per pod and catalog change, not once per node
        self._pod_storage: dict[str, _PodStorageEntry] = {}
        #: (fit signature, the cache's placement epoch, catalog version, node) -> verdict,
        #: for pods not placed in the session on the session's own nodes; forgotten with any
        #: placement a statement changes
        self._verdicts: dict[tuple[Hashable, int, int, str], Status | None] = {}
        #: task uid -> (the task, its fit signature), kept in the owner's memos
        self._signatures: dict[str, tuple[TaskInfo, Hashable]] = {}
        #: a statement placed or evicted a pod in the session: its nodes are no longer as
        #: the cluster's placement epoch says
        self._touched = False

        #: task uid -> its PreFilter states, while the session's placements stay as they were
        self._states: dict[str, tuple[AffinityState | None, SpreadState | None]] = {}
        #: the states shared by pods not placed in the session, by what they read of a pod
        self._shared: dict[Hashable, tuple[AffinityState | None, SpreadState | None]] = {}
        #: the session's pods by label (None: not built since the last unfollowed change)
        self._index: LabelIndex | None = None
        #: the nodes a spread constraint counts, by what decides it (``_included``)
        self._included_memo: dict[
            Hashable, tuple[dict[str, tuple[NodeInfo, str]], dict[str, int]]
        ] = {}
        #: the session's nodes holding pods with required anti-affinity (None: not known)
        self._anti_nodes: list[NodeInfo] | None = None
        #: the snapshot's placement epoch those were worked out at
        self._epoch = 0
        #: nodes whose pods a statement changed since the counts were last brought up to date
        self._dirty: set[str] = set()

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
        self._rwop = {}
        self._pod_storage = {}
        self._verdicts = {}
        self._signatures = ssn.memos.slot("predicates.fit-signatures", _signature_memo)
        self._touched = False
        self._ssn = ssn
        self._states = {}
        self._shared = {}
        self._index = None
        self._included_memo = {}
        self._dirty = set()
        self._anti_nodes = None
        self._epoch = ssn.snapshot.placement_epoch.value
        ssn.add_hook(PRE_PREDICATE, self.name, self.pre_predicate)
        ssn.add_hook(PREDICATE, self.name, self.predicate)
        ssn.add_event_handler(EventHandler(allocate=self._placed, deallocate=self._placed))

    def on_session_close(self, ssn: Session) -> None:
        self._cache = {}
        self._states = {}
        self._shared = {}
        self._index = None
        self._included_memo = {}
        self._anti_nodes = None
        self._rwop = {}
        self._pod_storage = {}
        self._verdicts = {}
        self._signatures = {}
        self._ssn = None

    # --- what the engine cannot judge -----------------------------------------------------

    def not_evaluable(self, task: TaskInfo) -> Status | None:
        """Why the engine cannot judge where ``task`` fits (scheduling gates, volumes,
        device claims), as a ``NotEvaluable`` verdict naming the filter; None: it can."""
        if not (task.volumes or task.resource_claims or task.scheduling_gates):
            return None
        return self._storage_of(task)[2]

    def _storage_of(self, task: TaskInfo) -> _PodStorageEntry:
        """``task``'s not-evaluable verdict and resolved claims for the catalog as it is
        now: kept while the task and the catalog stay the same."""
        assert self._ssn is not None
        storage = self._ssn.snapshot.storage
        found = self._pod_storage.get(task.uid)
        if found is not None and found[0] is task and found[1] == storage.version:
            return found
        if len(self._pod_storage) >= _RWOP_MEMO:  # a long-lived session must not grow
            self._pod_storage.clear()
        found = self._pod_storage[task.uid] = (
            task,
            storage.version,
            self._resolve_not_evaluable(task, storage),
            volumes.PodStorage.of(task, storage),
        )
        return found

    @staticmethod
    def _resolve_not_evaluable(task: TaskInfo, storage: StorageCatalog) -> Status | None:
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
        return Status(Code.NOT_EVALUABLE, reasons, plugin, task=task.key)

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

    def _placed(self, task: TaskInfo) -> None:
        """A placement changed (a statement evicted, pipelined or allocated ``task``, or
        undid that): its node is counted again before the next verdict. A task that names
        no node of the session (a pipeline undone, an assumed pod) forgets every count."""
        self._verdicts = {}
        self._touched = True
        ssn = self._ssn
        if ssn is None or task.node_name not in ssn.nodes:
            self.cluster_changed()
            return
        self._dirty.add(task.node_name)

    def _recount_dirty(self) -> None:
        """Bring every kept count up to date with the nodes whose pods changed."""
        dirty, self._dirty = self._dirty, set()
        ssn = self._ssn
        assert ssn is not None
        nodes = ssn.nodes
        anti = self._anti_nodes
        if anti is not None:
            known = {n.name for n in anti}
            if any(nodes[n].anti_affinity_uids and n not in known for n in dirty if n in nodes):
                # A pod with required anti-affinity arrived where none was: pods judged
                # without any such pod in the cluster kept no count to correct.
                self.cluster_changed()
                return
            self._anti_nodes = [n for n in anti if n.anti_affinity_uids]
        if self._index is not None:
            self._index.refresh(nodes, dirty)
        for affinity, spread in (*self._states.values(), *self._shared.values()):
            if affinity is not None:
                affinity.recount(nodes, dirty)
            if spread is not None:
                spread.recount(nodes, dirty)

    def cluster_changed(self) -> None:
        """The session's nodes changed under it (the accounting session following the
        cluster): forget every count."""
        self._verdicts = {}
        self._states = {}
        self._shared = {}
        self._index = None
        self._included_memo = {}
        self._anti_nodes = None
        self._dirty = set()

    def anti_affinity_nodes(self) -> list[NodeInfo]:
        """The session's nodes with pods of required anti-affinity, found once per change."""
        nodes = self._anti_nodes
        if nodes is None:
            assert self._ssn is not None
            nodes = [n for n in self._ssn.nodes.values() if n.anti_affinity_uids]
            self._anti_nodes = nodes
        return nodes

    def _pod_states(self, task: TaskInfo) -> tuple[AffinityState | None, SpreadState | None]:
        """The pod's PreFilter states, shared by every pod whose states are provably the
        same: pods not placed on any of the session's nodes (so none of them is left out
        of another's counts) with the same namespace, labels, pod (anti-)affinity, spread
        constraints and node inclusion fields (node selector, required node affinity,
        tolerations): everything the states read of the pod. A gang's waiting pods build
        them once. A placed pod (one a statement pipelined) keeps states of its own, which
        leave it out of the counts."""
        share = _share_key(task) if not self._placed_here(task) else None
        states = self._shared.get(share) if share is not None else self._states.get(task.uid)
        if states is None:
            ssn = self._ssn
            assert ssn is not None
            # The shared states stand for pods none of which is placed: counting "without
            # the judged pod" leaves nobody out, which a blank uid says.
            builder = dataclasses.replace(task, uid="") if share is not None else task
            states = self._build_states(builder, ssn, shared=share is not None)
            if len(self._states) + len(self._shared) >= _STATES_LIMIT:
                # a long-lived session asked of many pods
                self._states = {}
                self._shared = {}
            if share is not None:
                self._shared[share] = states
            else:
                self._states[task.uid] = states
        return states

    def _placed_here(self, task: TaskInfo) -> bool:
        node = self._ssn.nodes.get(task.node_name) if self._ssn and task.node_name else None
        return node is not None and task.uid in node.tasks

    def label_index(self) -> LabelIndex:
        """The session's pods by label, built on first use and kept up with its nodes."""
        index = self._index
        if index is None:
            assert self._ssn is not None
            ssn = self._ssn
            kept = None if self._touched else ssn.memos.slot("predicates.label-values", KeptLabels)
            index = self._index = LabelIndex(ssn.nodes, kept, ssn.snapshot.placement_epoch)
        return index

    def _build_states(
        self, task: TaskInfo, ssn: Session, *, shared: bool
    ) -> tuple[AffinityState | None, SpreadState | None]:
        """With ``shared`` (``task`` is on none of the session's nodes), the placed pods'
        anti-affinity comes from the index's distinct terms; otherwise the nodes holding
        such pods are walked, leaving ``task`` itself out."""
        affinity: AffinityState | None = None
        spread: SpreadState | None = None
        if self.pod_affinity_enable:
            terms = task.pod_affinity
            own = terms is not None and bool(terms.required or terms.required_anti)
            if own or self.anti_affinity_nodes():
                namespaces = ssn.snapshot.namespace_labels
                index = self.label_index()
                existing = index.anti_terms() if shared else None
                nodes: Iterable[NodeInfo] = ()
                if own:
                    nodes = self._affinity_candidates(task, walk_anti=existing is None)
                elif existing is None:
                    nodes = self.anti_affinity_nodes()
                affinity = AffinityState.build(task, nodes, namespaces, existing)
        if self.topology_spread_enable and self._may_spread(task):
            spread = SpreadState.build(
                task,
                ssn.nodes.values(),
                self.default_constraints,
                self.label_index(),
                self._included,
            )
            if spread.trivial:
                spread = None
        return affinity, spread

    def _included(
        self, task: TaskInfo, constraint: TopologySpreadConstraint, keys: tuple[str, ...]
    ) -> tuple[Mapping[str, tuple[NodeInfo, str]], Mapping[str, int]]:
        """The nodes a spread constraint counts for the pod, kept for every pod with the
        same node inclusion fields (node labels and taints stay put in a session; a change
        it does not make forgets them with the counts)."""
        key = (
            constraint.topology_key,
            constraint.node_affinity_policy,
            constraint.node_taints_policy,
            keys,
            frozenset(task.node_selector.items()),
            tuple(tuple((r.key, r.operator, r.values) for r in t) for t in task.required_affinity),
            tuple((t.key, t.operator, t.value, t.effect) for t in task.tolerations),
        )
        found = self._included_memo.get(key)
        if found is None:
            assert self._ssn is not None
            if len(self._included_memo) >= _RWOP_MEMO:  # a long-lived session must not grow
                self._included_memo = {}
            on = included_nodes(task, constraint, keys, self._ssn.nodes.values())
            zeros = dict.fromkeys((domain for _, domain in on.values()), 0)
            found = self._included_memo[key] = (on, zeros)
        return found

    def _affinity_candidates(self, task: TaskInfo, *, walk_anti: bool) -> Iterable[NodeInfo]:
        """The nodes whose pods the pod's own terms may match (every node when a term can
        match anything), and with ``walk_anti`` those holding pods with required
        anti-affinity."""
        assert self._ssn is not None and task.pod_affinity is not None
        nodes = self._ssn.nodes
        index = self.label_index()
        names: set[str] = {n.name for n in self.anti_affinity_nodes()} if walk_anti else set()
        for term in (*task.pod_affinity.required, *task.pod_affinity.required_anti):
            found = index.candidates(term.selector)
            if found is None:
                return nodes.values()
            names |= found
        return [nodes[name] for name in names if name in nodes]

    def _may_spread(self, task: TaskInfo) -> bool:
        if task.spread_constraints:
            return any(c.hard for c in task.spread_constraints)
        return self._hard_defaults and bool(task.labels)

    def _pod_checks(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        """NodePorts, InterPodAffinity and PodTopologySpread, in Volcano's order."""
        if task.host_ports and self.node_ports_enable:
            err = node_ports_error(task, node)
            if err is not None:
                return err
        ssn = self._ssn
        if ssn is None:
            return None
        epoch = ssn.snapshot.placement_epoch.value
        if epoch != self._epoch:
            # The cache changed the nodes this session reads (it shares them).
            self._epoch = epoch
            self.cluster_changed()
        if self._dirty:
            self._recount_dirty()
        if task.pod_affinity is None and not task.spread_constraints and not self._hard_defaults:
            # The common pod: only placed pods' anti-affinity could refuse it.
            anti = self._anti_nodes
            if anti is None:
                anti = self.anti_affinity_nodes()
            if not (anti or node.anti_affinity_uids) or not self.pod_affinity_enable:
                return None
        elif not (
            self.pod_affinity_enable
            and (
                task.pod_affinity is not None
                or node.anti_affinity_uids
                or self.anti_affinity_nodes()
            )
        ) and not (self.topology_spread_enable and self._may_spread(task)):
            return None
        affinity, spread = self._pod_states(task)
        base = ssn.nodes.get(node.name)
        if affinity is not None:
            err = affinity.filter(node, base, task)
            if err is not None:
                return err
        elif self.pod_affinity_enable and node is not base and node.anti_affinity_uids:
            # A what-if copy holding an anti-affinity pod the session's node does not.
            one_off = AffinityState.build(task, (node,), ssn.snapshot.namespace_labels)
            err = one_off.filter(node, node)
            if err is not None:
                return err
        if spread is not None:
            return spread.filter(node, base, task)
        return None

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
        if self._placed_here(task):
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
            _share_key(task),
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
            err = self._storage_verdict(task, node)
            if err is not None:
                return replace(err, reasons=reasons + err.reasons) if reasons else err
        err = self._pod_checks(task, node)
        if err is not None:
            return replace(err, reasons=reasons + err.reasons) if reasons else err
        if reasons:
            return Status(Code.UNSCHEDULABLE, reasons, task=task.key, node=node.name)
        return None

    def _storage_verdict(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        """Not evaluable first; then what no eviction changes (where a volume or a device
        is); then what evictions can fix (a ReadWriteOncePod claim in use, attach limits)."""
        assert self._ssn is not None
        storage = self._ssn.snapshot.storage
        _, _, pending, pod_storage = self._storage_of(task)
        if pending is not None:
            return replace(pending, node=node.name)
        err = pod_storage.binding_error(task, node) or dra.allocated_claims_error(
            task, node, storage
        )
        if err is not None:
            return err
        if task.resource_claims:
            err = dra.allocation_error(task, node, storage, self._ssn.nodes.get(node.name))
            if err is not None:
                return err
        claims, users = self._rwop_users(task)
        if claims:
            err = volumes.rwop_conflict_error(task, node, claims, users, self._ssn.nodes)
            if err is not None:
                return err
        return pod_storage.limits_error(task, node, storage)

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
        unresolvable = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
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
