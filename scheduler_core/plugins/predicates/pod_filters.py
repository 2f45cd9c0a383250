"""The filters that look at other pods (NodePorts, InterPodAffinity, PodTopologySpread),
with the state kube-scheduler's PreFilter keeps per incoming pod.

Their state per incoming pod (counts per topology domain, and what each node added to them)
is worked out on first use and kept for the session. A statement's eviction or placement
(an allocate or deallocate event) marks its node, which alone is counted again before the
next verdict (kube-scheduler's AddPod / RemovePod); a what-if copy of a node is judged by the
difference between the copy and the session's node. So a victim search costs walks over one
node's pods, not over the cluster's. Only a change the session did not make (the live cache
moving the accounting session's shared nodes: the placement epoch) or one it cannot place
(an undone pipeline) forgets the counts. A pod with none of these constraints, in a cluster
where no pod has required anti-affinity, costs a few attribute reads. Building a state walks
only what can match (``label_index.py``: the nodes holding pods with the labels a selector
requires, the distinct anti-affinity terms of placed pods, the nodes a spread constraint
counts), and pods placed nowhere whose states read the same fields share one state, so a
gang builds it once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Iterable, Mapping, Sequence

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pod_constraints import TopologySpreadConstraint
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.session import Session
from scheduler_core.framework.status import Status
from scheduler_core.plugins.predicates.args import PredicatesArgs
from scheduler_core.plugins.predicates.inter_pod_affinity import AffinityState
from scheduler_core.plugins.predicates.label_index import KeptLabels, LabelIndex
from scheduler_core.plugins.predicates.node_ports import node_ports_error
from scheduler_core.plugins.predicates.topology_spread import SpreadState, included_nodes

#: Node sets of spread constraints a session remembers at once (one per distinct constraint
#: and node inclusion fields: a handful a call).
_INCLUDED_LIMIT = 64

_STATES_LIMIT = 1024


def share_key(task: TaskInfo) -> Hashable:
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


States = tuple[AffinityState | None, SpreadState | None]


class PodFilters:
    """The three filters for one session, and the states they keep per incoming pod."""

    def __init__(self, args: PredicatesArgs) -> None:
        self._args = args
        self._hard_defaults = args.hard_defaults
        self._ssn: Session | None = None
        #: a statement placed or evicted a pod in the session: its nodes are no longer as
        #: the cluster's placement epoch says
        self._touched = False
        #: task uid -> its PreFilter states, while the session's placements stay as they were
        self._states: dict[str, States] = {}
        #: the states shared by pods not placed in the session, by what they read of a pod
        self._shared: dict[Hashable, States] = {}
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

    def open(self, ssn: Session) -> None:
        self._touched = False
        self._ssn = ssn
        self.forget()
        self._epoch = ssn.snapshot.placement_epoch.value

    def close(self) -> None:
        self.forget()
        self._ssn = None

    def placed(self, task: TaskInfo) -> None:
        """A placement changed (a statement evicted, pipelined or allocated ``task``, or
        undid that): its node is counted again before the next verdict. A task that names
        no node of the session (a pipeline undone, an assumed pod) forgets every count."""
        self._touched = True
        ssn = self._ssn
        if ssn is None or task.node_name not in ssn.nodes:
            self.forget()
            return
        self._dirty.add(task.node_name)

    def placed_all(self, tasks: Sequence[TaskInfo]) -> None:
        """``placed`` of each task in turn: every count forgotten once if any task names no
        node of the session, and the nodes the tasks after the last such one name marked,
        which is where placing them one at a time ends."""
        if not tasks:
            return
        self._touched = True
        ssn = self._ssn
        start = 0
        for index, task in enumerate(tasks):
            if ssn is None or task.node_name not in ssn.nodes:
                start = index + 1
        if start:
            self.forget()
        for task in tasks[start:]:
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
                self.forget()
                return
            self._anti_nodes = [n for n in anti if n.anti_affinity_uids]
        if self._index is not None:
            self._index.refresh(nodes, dirty)
        for affinity, spread in (*self._states.values(), *self._shared.values()):
            if affinity is not None:
                affinity.recount(nodes, dirty)
            if spread is not None:
                spread.recount(nodes, dirty)

    def forget(self) -> None:
        """The session's nodes changed under it (the accounting session following the
        cluster, or a change the session cannot place): forget every count."""
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

    def states(self, task: TaskInfo) -> States:
        """The pod's PreFilter states, shared by every pod whose states are provably the
        same: pods not placed on any of the session's nodes (so none of them is left out
        of another's counts) with the same namespace, labels, pod (anti-)affinity, spread
        constraints and node inclusion fields (node selector, required node affinity,
        tolerations): everything the states read of the pod. A gang's waiting pods build
        them once. A placed pod (one a statement pipelined) keeps states of its own, which
        leave it out of the counts."""
        share = share_key(task) if not self.placed_here(task) else None
        states = self._shared.get(share) if share is not None else self._states.get(task.uid)
        if states is None:
            ssn = self._ssn
            assert ssn is not None
            # The shared states stand for pods none of which is placed: counting "without
            # the judged pod" leaves nobody out, which a blank uid says.
            builder = dataclasses.replace(task, uid="") if share is not None else task
            states = self.build_states(builder, ssn, shared=share is not None)
            if len(self._states) + len(self._shared) >= _STATES_LIMIT:
                # a long-lived session asked of many pods
                self._states = {}
                self._shared = {}
            if share is not None:
                self._shared[share] = states
            else:
                self._states[task.uid] = states
        return states

    def placed_here(self, task: TaskInfo) -> bool:
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

    def build_states(self, task: TaskInfo, ssn: Session, *, shared: bool) -> States:
        """With ``shared`` (``task`` is on none of the session's nodes), the placed pods'
        anti-affinity comes from the index's distinct terms; otherwise the nodes holding
        such pods are walked, leaving ``task`` itself out."""
        affinity: AffinityState | None = None
        spread: SpreadState | None = None
        if self._args.pod_affinity_enable:
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
        if self._args.pod_topology_spread_enable and self._may_spread(task):
            spread = SpreadState.build(
                task,
                ssn.nodes.values(),
                self._args.default_constraints,
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
            if len(self._included_memo) >= _INCLUDED_LIMIT:  # a long-lived session must not grow
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

    def check(self, task: TaskInfo, node: NodeInfo) -> Status | None:
        """NodePorts, InterPodAffinity and PodTopologySpread, in Volcano's order."""
        if task.host_ports and self._args.node_ports_enable:
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
            self.forget()
        if self._dirty:
            self._recount_dirty()
        if task.pod_affinity is None and not task.spread_constraints and not self._hard_defaults:
            # The common pod: only placed pods' anti-affinity could refuse it.
            anti = self._anti_nodes
            if anti is None:
                anti = self.anti_affinity_nodes()
            if not (anti or node.anti_affinity_uids) or not self._args.pod_affinity_enable:
                return None
        elif not (
            self._args.pod_affinity_enable
            and (
                task.pod_affinity is not None
                or node.anti_affinity_uids
                or self.anti_affinity_nodes()
            )
        ) and not (self._args.pod_topology_spread_enable and self._may_spread(task)):
            return None
        affinity, spread = self.states(task)
        base = ssn.nodes.get(node.name)
        if affinity is not None:
            err = affinity.filter(node, base, task)
            if err is not None:
                return err
        elif self._args.pod_affinity_enable and node is not base and node.anti_affinity_uids:
            # A what-if copy holding an anti-affinity pod the session's node does not.
            one_off = AffinityState.build(task, (node,), ssn.snapshot.namespace_labels)
            err = one_off.filter(node, node)
            if err is not None:
                return err
        if spread is not None:
            return spread.filter(node, base, task)
        return None
