"""Which of a session's nodes hold a pod carrying a label, so a selector's candidates are found
without walking every pod.

The predicates that look at other pods (inter-pod affinity, topology spread) count, for one
incoming pod, the placed pods a selector matches. Walking every node's pods for every pod
judged costs O(cluster) per pod; the index answers "which nodes may hold a pod this selector
matches" from the selector's most selective requirement (``In`` or ``Exists`` on a key), and
only those nodes are walked. The answer is a superset (a node is named if any of its pods,
leaving or not, carries the label; namespaces are not looked at), so counting just those
nodes with the same code as the full walk gives the same counts: a node left out holds no
pod the selector can match. A selector whose requirements are all ``NotIn`` /
``DoesNotExist`` (or that has none) can match anything: no candidates, the caller walks.

It also keeps the staying pods' required anti-affinity terms by term, with where their pods
are: a pod judged against them (kube-scheduler's "existing pods' anti-affinity") then
matches each distinct term once, not once per pod carrying it.

The index follows the nodes it was built over through ``refresh`` (a statement changed a
node's pods); a change it cannot follow (the cache moving shared nodes) means a new index.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pod_constraints import EXISTS, IN, LabelSelector, PodAffinityTerm
from scheduler_core.plugins.predicates.placed import anti_affinity_pods

Pair = tuple[str, str]


class LabelIndex:
    """Per label pair and per label key: the nodes holding pods with it, and how many."""

    __slots__ = (
        "_anti",
        "_anti_view",
        "_by_key",
        "_by_pair",
        "_node_anti",
        "_node_pairs",
        "_nodes",
    )

    def __init__(self, nodes: Mapping[str, NodeInfo]) -> None:
        self._nodes = nodes
        self._by_pair: dict[Pair, dict[str, int]] = {}
        self._by_key: dict[str, dict[str, int]] = {}
        #: node name -> the label pairs of its pods, so it can be taken out again
        self._node_pairs: dict[str, Counter[Pair]] = {}
        #: required anti-affinity term of a staying pod -> node name -> pods with it there
        self._anti: dict[PodAffinityTerm, dict[str, int]] = {}
        self._node_anti: dict[str, Counter[PodAffinityTerm]] = {}
        self._anti_view: dict[PodAffinityTerm, list[tuple[NodeInfo, int]]] | None = None
        for name, node in nodes.items():
            self._add(name, node)

    def _add(self, name: str, node: NodeInfo) -> None:
        if node.anti_affinity_uids:
            terms: Counter[PodAffinityTerm] = Counter()
            for task in anti_affinity_pods(node, ""):
                assert task.pod_affinity is not None
                terms.update(task.pod_affinity.required_anti)
            if terms:
                self._node_anti[name] = terms
                for term, n in terms.items():
                    self._anti.setdefault(term, {})[name] = n
        pairs: Counter[Pair] = Counter()
        for task in node.tasks.values():
            pairs.update(task.labels.items())
        if not pairs:
            return
        self._node_pairs[name] = pairs
        by_pair, by_key = self._by_pair, self._by_key
        for pair, n in pairs.items():
            by_pair.setdefault(pair, {})[name] = n
            keyed = by_key.setdefault(pair[0], {})
            keyed[name] = keyed.get(name, 0) + n

    def _remove(self, name: str) -> None:
        for term in self._node_anti.pop(name, ()):
            on = self._anti[term]
            del on[name]
            if not on:
                del self._anti[term]
        pairs = self._node_pairs.pop(name, None)
        if pairs is None:
            return
        for pair, n in pairs.items():
            nodes = self._by_pair[pair]
            del nodes[name]
            if not nodes:
                del self._by_pair[pair]
            keyed = self._by_key[pair[0]]
            left = keyed[name] - n
            if left > 0:
                keyed[name] = left
            else:
                del keyed[name]
                if not keyed:
                    del self._by_key[pair[0]]

    def refresh(self, nodes: Mapping[str, NodeInfo], names: Iterable[str]) -> None:
        """Index the named nodes again as they are now (their pods changed)."""
        self._nodes = nodes
        self._anti_view = None
        for name in names:
            self._remove(name)
            node = nodes.get(name)
            if node is not None:
                self._add(name, node)

    def anti_terms(self) -> Mapping[PodAffinityTerm, list[tuple[NodeInfo, int]]]:
        """The staying pods' required anti-affinity terms, each with the nodes holding pods
        with it and how many (``AffinityState.build``'s ``existing``, for a pod placed on
        none of the nodes)."""
        view = self._anti_view
        if view is None:
            nodes = self._nodes
            view = self._anti_view = {
                term: [(nodes[name], n) for name, n in on.items()]
                for term, on in self._anti.items()
            }
        return view

    def candidates(self, selector: LabelSelector | None) -> set[str] | None:
        """The nodes that may hold a pod ``selector`` matches (a superset); None when any
        node may (no ``In`` or ``Exists`` requirement to look up)."""
        if selector is None:  # a missing selector matches no pod
            return set()
        best: set[str] | None = None
        for req in selector.requirements:
            if req.operator == IN:
                found: set[str] = set()
                for value in req.values:
                    found.update(self._by_pair.get((req.key, value), ()))
            elif req.operator == EXISTS:
                found = set(self._by_key.get(req.key, ()))
            else:
                continue
            if best is None or len(found) < len(best):
                best = found
                if not best:
                    break
        return best

    def pairs_snapshot(self) -> dict[Pair, dict[str, int]]:
        """A copy of the pair index (for tests comparing it with a fresh one)."""
        return {pair: dict(nodes) for pair, nodes in self._by_pair.items()}

    def anti_snapshot(self) -> dict[PodAffinityTerm, dict[str, int]]:
        """A copy of the anti-affinity term index (for tests)."""
        return {term: dict(on) for term, on in self._anti.items()}

    def keys_snapshot(self) -> dict[str, dict[str, int]]:
        """A copy of the key index (for tests comparing it with a fresh one)."""
        return {key: dict(nodes) for key, nodes in self._by_key.items()}
