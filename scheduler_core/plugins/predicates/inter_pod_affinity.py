"""kube-scheduler's InterPodAffinity filter (required terms only), both directions.

``AffinityState.build`` is kube-scheduler's PreFilter for one incoming pod: per topology
pair ``(key, value)`` it counts

- the placed pods matching *all* the pod's required affinity terms (``affinity``),
- the placed pods matching each of its required anti-affinity terms (``anti``),
- the placed pods whose own required anti-affinity terms match the incoming pod
  (``existing``; only nodes holding such pods are read, see ``NodeInfo.anti_affinity_uids``).

``filter`` judges one node. The node may be a what-if copy of the session's node of that
name (victims taken off it): the counts are then corrected by what that copy holds instead
of what the session's node holds (kube-scheduler's AddPod / RemovePod), so a victim search
is exact without a new PreFilter for every victim tried.

The codes are kube-scheduler's: an unmet affinity term is ``UnschedulableAndUnresolvable``
(evicting pods cannot create the pod it wants to be near), an anti-affinity conflict either
way is ``Unschedulable`` (evicting the conflicting pod helps).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pod_constraints import PodAffinityTerm
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.status import Code, Status
from scheduler_core.plugins.predicates.placed import anti_affinity_pods, placed_pods

ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

Pair = tuple[str, str]
#: Placed pods' required anti-affinity terms -> the nodes holding pods with the term, and how
#: many such pods each holds.
AntiTerms = Mapping[PodAffinityTerm, Iterable[tuple[NodeInfo, int]]]
NamespaceLabels = Mapping[str, Mapping[str, str]]
_NO_LABELS: Mapping[str, str] = {}


def term_matches_pod(term: PodAffinityTerm, pod: TaskInfo, namespaces: NamespaceLabels) -> bool:
    return term.matches(pod.namespace, pod.labels, namespaces.get(pod.namespace, _NO_LABELS))


def matches_all_terms(
    terms: Iterable[PodAffinityTerm], pod: TaskInfo, namespaces: NamespaceLabels
) -> bool:
    return all(term_matches_pod(term, pod, namespaces) for term in terms)


@dataclass(slots=True)
class _Counts:
    affinity: Counter[Pair] = field(default_factory=Counter)
    anti: Counter[Pair] = field(default_factory=Counter)
    existing: Counter[Pair] = field(default_factory=Counter)


def _count_node(
    counts: _Counts,
    incoming: TaskInfo,
    node: NodeInfo,
    namespaces: NamespaceLabels,
    incoming_terms: bool,
) -> None:
    """Add what ``node`` contributes to each count."""
    if incoming_terms:
        _count_own(counts, incoming, node, namespaces)
    if node.anti_affinity_uids:
        labels = node.labels
        for pod in anti_affinity_pods(node, incoming.uid):
            assert pod.pod_affinity is not None
            for term in pod.pod_affinity.required_anti:
                if term_matches_pod(term, incoming, namespaces):
                    value = labels.get(term.topology_key)
                    if value is not None:
                        counts.existing[(term.topology_key, value)] += 1


def _count_own(
    counts: _Counts, incoming: TaskInfo, node: NodeInfo, namespaces: NamespaceLabels
) -> None:
    """Add the placed pods on ``node`` the incoming pod's own required terms match."""
    affinity = incoming.pod_affinity
    if affinity is None:
        return
    labels = node.labels
    required, anti = affinity.required, affinity.required_anti
    for pod in placed_pods(node, incoming.uid):
        if required and matches_all_terms(required, pod, namespaces):
            for term in required:
                value = labels.get(term.topology_key)
                if value is not None:
                    counts.affinity[(term.topology_key, value)] += 1
        for term in anti:
            if term_matches_pod(term, pod, namespaces):
                value = labels.get(term.topology_key)
                if value is not None:
                    counts.anti[(term.topology_key, value)] += 1


@dataclass(slots=True)
class AffinityState:
    """The PreFilter state of one incoming pod over the session's nodes."""

    task: TaskInfo
    namespaces: NamespaceLabels
    counts: _Counts
    #: Whether the pod has required terms of its own (else only ``existing`` matters).
    incoming_terms: bool
    #: How many (pod, term) pairs ``counts.affinity`` holds: 0 when no pod matches yet.
    affinity_total: int = 0
    #: What each node added to ``counts`` (nodes that added nothing are left out), so a
    #: node whose pods changed is counted again alone (kube-scheduler's AddPod/RemovePod).
    per_node: dict[str, _Counts] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        task: TaskInfo,
        nodes: Iterable[NodeInfo],
        namespaces: NamespaceLabels,
        existing: AntiTerms | None = None,
    ) -> AffinityState:
        """The counts over ``nodes``. With ``existing`` (the placed pods' required
        anti-affinity terms and where their pods are, over the session's nodes, none of
        them the incoming pod), the ``existing`` count comes from there: each distinct term
        is matched once instead of once per pod, and ``nodes`` need only hold the nodes
        whose pods its own terms may match."""
        affinity = task.pod_affinity
        incoming = affinity is not None and bool(affinity.required or affinity.required_anti)
        per_node: dict[str, _Counts] = {}
        for node in nodes:
            if existing is None:
                if incoming or node.anti_affinity_uids:
                    here = _Counts()
                    _count_node(here, task, node, namespaces, incoming)
                    per_node[node.name] = here
            elif incoming:
                here = _Counts()
                _count_own(here, task, node, namespaces)
                per_node[node.name] = here
        if existing is not None:
            for term, on_nodes in existing.items():
                if not term_matches_pod(term, task, namespaces):
                    continue
                key = term.topology_key
                for node, n in on_nodes:
                    value = node.labels.get(key)
                    if value is not None:
                        into = per_node.get(node.name)
                        if into is None:
                            into = per_node[node.name] = _Counts()
                        into.existing[(key, value)] += n
        counts = _Counts()
        kept: dict[str, _Counts] = {}
        for name, here in per_node.items():
            if here.affinity or here.anti or here.existing:
                kept[name] = here
                counts.affinity.update(here.affinity)
                counts.anti.update(here.anti)
                counts.existing.update(here.existing)
        return cls(task, namespaces, counts, incoming, counts.affinity.total(), kept)

    def recount(self, nodes: Mapping[str, NodeInfo], names: Iterable[str]) -> None:
        """Count the named nodes again as they are now (their pods changed)."""
        counts = self.counts
        for name in names:
            old = self.per_node.pop(name, None)
            if old is not None:
                _take(counts.affinity, old.affinity)
                _take(counts.anti, old.anti)
                _take(counts.existing, old.existing)
            node = nodes.get(name)
            if node is None or not (self.incoming_terms or node.anti_affinity_uids):
                continue
            here = _Counts()
            _count_node(here, self.task, node, self.namespaces, self.incoming_terms)
            if here.affinity or here.anti or here.existing:
                self.per_node[name] = here
                counts.affinity.update(here.affinity)
                counts.anti.update(here.anti)
                counts.existing.update(here.existing)
        self.affinity_total = counts.affinity.total()

    @property
    def trivial(self) -> bool:
        """Nothing can fail: no terms of its own and no placed pod's anti-affinity to it."""
        return not self.incoming_terms and not self.counts.existing

    def filter(
        self, node: NodeInfo, base: NodeInfo | None, judged: TaskInfo | None = None
    ) -> Status | None:
        """The verdict on ``node``; ``base`` is the node of that name the state was built
        over (None if none was), whose contribution ``node``'s replaces. ``judged`` is the
        pod asked about when the state is shared by pods whose states are the same (the
        state's own task then stands for them all): the verdict names it, and a what-if
        copy's pods are counted without it."""
        task = self.task if judged is None else judged
        here: _Counts | None = None
        there: _Counts | None = None
        if node is not base:
            if self.trivial and not node.anti_affinity_uids:
                return None
            here = _Counts()
            _count_node(here, task, node, self.namespaces, self.incoming_terms)
            there = _Counts()
            if base is not None:
                _count_node(there, task, base, self.namespaces, self.incoming_terms)
            if here == there:
                here = there = None
        elif self.trivial:
            return None
        reason = self._verdict(node, here, there)
        if reason is None:
            return None
        code = (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            if reason == ERR_REASON_AFFINITY
            else Code.UNSCHEDULABLE
        )
        return Status(code, [reason], task=task.key, node=node.name)

    def _verdict(self, node: NodeInfo, here: _Counts | None, there: _Counts | None) -> str | None:
        """kube-scheduler's three checks in its order, on the counts corrected by ``here``
        (what the judged node holds) minus ``there`` (what the state counted for it)."""
        counts = self.counts

        def count(kind: str, pair: Pair) -> int:
            n: int = getattr(counts, kind)[pair]
            if here is not None and there is not None:
                n += getattr(here, kind)[pair] - getattr(there, kind)[pair]
            return n

        labels = node.labels
        affinity = self.task.pod_affinity
        if affinity is not None and affinity.required:
            pods_exist = True
            for term in affinity.required:
                value = labels.get(term.topology_key)
                if value is None:
                    return ERR_REASON_AFFINITY
                if count("affinity", (term.topology_key, value)) <= 0:
                    pods_exist = False
            if not pods_exist:
                total = self.affinity_total
                if here is not None and there is not None:
                    total += here.affinity.total() - there.affinity.total()
                # The first pod of a group with affinity to itself: nothing anywhere matches
                # its terms yet, but it matches them itself, so it may start the group.
                if total > 0 or not matches_all_terms(
                    affinity.required, self.task, self.namespaces
                ):
                    return ERR_REASON_AFFINITY
        if affinity is not None:
            for term in affinity.required_anti:
                value = labels.get(term.topology_key)
                if value is not None and count("anti", (term.topology_key, value)) > 0:
                    return ERR_REASON_ANTI_AFFINITY
        if counts.existing or (here is not None and here.existing):
            for pair in labels.items():
                if count("existing", pair) > 0:
                    return ERR_REASON_EXISTING_ANTI_AFFINITY
        return None


def _take(counts: Counter[Pair], part: Counter[Pair]) -> None:
    """``counts - part`` in place, dropping what reaches zero."""
    for pair, n in part.items():
        left = counts[pair] - n
        if left > 0:
            counts[pair] = left
        else:
            del counts[pair]


def inter_pod_affinity_error(
    task: TaskInfo,
    node: NodeInfo,
    nodes: Mapping[str, NodeInfo],
    namespaces: NamespaceLabels,
) -> Status | None:
    """The filter on its own, with a PreFilter over ``nodes`` (for tests and one-off
    questions; the plugin keeps the state per pod instead)."""
    state = AffinityState.build(task, nodes.values(), namespaces)
    return state.filter(node, nodes.get(node.name))
