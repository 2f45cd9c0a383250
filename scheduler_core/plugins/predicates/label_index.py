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

A label key is indexed when a selector first asks about it (a walk over every pod once,
reading one label), so keys nobody selects on cost nothing.

The index follows the nodes it was built over through ``refresh`` (a statement changed a
node's pods); a change it cannot follow (the cache moving shared nodes) means a new index.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pod_constraints import EXISTS, IN, LabelSelector, PodAffinityTerm
from scheduler_core.plugins.predicates.placed import anti_affinity_pods


class LabelIndex:
    """Per label key asked about (indexed on first use): for each value, the nodes holding
    pods with it and how many; and the staying pods' required anti-affinity terms."""

    __slots__ = ("_anti", "_anti_view", "_by_value", "_node_anti", "_nodes", "_values")

    def __init__(self, nodes: Mapping[str, NodeInfo]) -> None:
        self._nodes = nodes
        #: label key -> node name -> its pods' values of the key, counted
        self._values: dict[str, dict[str, Counter[str]]] = {}
        #: label key -> value -> the nodes holding pods with it
        self._by_value: dict[str, dict[str, set[str]]] = {}
        #: required anti-affinity term of a staying pod -> node name -> pods with it there
        self._anti: dict[PodAffinityTerm, dict[str, int]] = {}
        self._node_anti: dict[str, Counter[PodAffinityTerm]] = {}
        self._anti_view: dict[PodAffinityTerm, list[tuple[NodeInfo, int]]] | None = None
        for name, node in nodes.items():
            if node.anti_affinity_uids:
                self._add_anti(name, node)

    def _add_anti(self, name: str, node: NodeInfo) -> None:
        terms: Counter[PodAffinityTerm] = Counter()
        for task in anti_affinity_pods(node, ""):
            assert task.pod_affinity is not None
            terms.update(task.pod_affinity.required_anti)
        if terms:
            self._node_anti[name] = terms
            for term, n in terms.items():
                self._anti.setdefault(term, {})[name] = n

    def _remove_anti(self, name: str) -> None:
        for term in self._node_anti.pop(name, ()):
            on = self._anti[term]
            del on[name]
            if not on:
                del self._anti[term]

    @staticmethod
    def _node_values(node: NodeInfo, key: str) -> Counter[str]:
        found = [v for v in (t.labels.get(key) for t in node.tasks.values()) if v is not None]
        return Counter(found)

    def _by_node(self, key: str) -> dict[str, Counter[str]]:
        """The key's values per node, indexed over every node on first use."""
        by_node = self._values.get(key)
        if by_node is None:
            by_node = self._values[key] = {}
            self._by_value[key] = {}
            for name, node in self._nodes.items():
                self._index_node(key, name, node)
        return by_node

    def _index_node(self, key: str, name: str, node: NodeInfo) -> None:
        values = self._node_values(node, key)
        if values:
            self._values[key][name] = values
            by_value = self._by_value[key]
            for value in values:
                by_value.setdefault(value, set()).add(name)

    def _unindex_node(self, key: str, name: str) -> None:
        values = self._values[key].pop(name, None)
        if values:
            by_value = self._by_value[key]
            for value in values:
                on = by_value[value]
                on.discard(name)
                if not on:
                    del by_value[value]

    def refresh(self, nodes: Mapping[str, NodeInfo], names: Iterable[str]) -> None:
        """Index the named nodes again as they are now (their pods changed)."""
        self._nodes = nodes
        self._anti_view = None
        for name in names:
            self._remove_anti(name)
            node = nodes.get(name)
            if node is not None and node.anti_affinity_uids:
                self._add_anti(name, node)
            for key in self._values:
                self._unindex_node(key, name)
                if node is not None:
                    self._index_node(key, name, node)

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
                self._by_node(req.key)
                by_value = self._by_value[req.key]
                found: set[str] = set()
                for value in req.values:
                    found.update(by_value.get(value, ()))
            elif req.operator == EXISTS:
                found = set(self._by_node(req.key))
            else:
                continue
            if best is None or len(found) < len(best):
                best = found
                if not best:
                    break
        return best

    def values_snapshot(self) -> tuple[dict[str, dict[str, Counter[str]]], dict[str, Any]]:
        """A copy of the keys indexed so far (for tests comparing it with a fresh index)."""
        return (
            {key: {n: Counter(v) for n, v in by.items()} for key, by in self._values.items()},
            {key: {v: set(on) for v, on in by.items()} for key, by in self._by_value.items()},
        )

    def index_keys(self, keys: Iterable[str]) -> None:
        """Index ``keys`` now (a fresh index to compare a kept one with)."""
        for key in keys:
            self._by_node(key)

    def anti_snapshot(self) -> dict[PodAffinityTerm, dict[str, int]]:
        """A copy of the anti-affinity term index (for tests)."""
        return {term: dict(on) for term, on in self._anti.items()}
