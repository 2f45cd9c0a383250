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
reading one label), so keys nobody selects on cost nothing. What such a walk finds in a
session no statement has changed yet is kept (``KeptLabels``, in the owner's memos) for the
owner's next session while the cluster's placement epoch stands still: the reclaim loop's
cycles then walk the pods once a change, not once a cycle.

The index follows the nodes it was built over through ``refresh`` (a statement changed a
node's pods); a change it cannot follow (the cache moving shared nodes) means a new index.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pod_constraints import EXISTS, IN, LabelSelector, PodAffinityTerm
from scheduler_core.api.snapshot import PlacementEpoch
from scheduler_core.plugins.predicates.placed import anti_affinity_pods

NodeValues = dict[str, Counter[str]]
ValueNodes = dict[str, set[str]]


class KeptLabels:
    """Label values per node as a session found them before any statement changed its
    nodes, for one placement epoch of one cluster: an index over nodes that stand at the
    same epoch starts from them. What is kept is replaced whole, never changed in place (a
    taker copies what it changes), so sessions of one owner on several threads may share
    it: each reads only what was kept at its own epoch."""

    def __init__(self) -> None:
        self._kept: tuple[PlacementEpoch, dict[str, tuple[NodeValues, ValueNodes]]] | None = None

    def take(self, epoch: PlacementEpoch, key: str) -> tuple[NodeValues, ValueNodes] | None:
        """Copies the index may change of what was kept for ``key`` at ``epoch``."""
        kept = self._kept
        if kept is None or not kept[0].same_placements(epoch):
            return None
        found = kept[1].get(key)
        if found is None:
            return None
        by_node, by_value = found
        # A node's counts are replaced, never changed in place; the value sets change.
        return dict(by_node), {value: set(on) for value, on in by_value.items()}

    def keep(
        self, epoch: PlacementEpoch, key: str, by_node: NodeValues, by_value: ValueNodes
    ) -> None:
        kept = self._kept
        keys = kept[1] if kept is not None and kept[0].same_placements(epoch) else {}
        copies = (dict(by_node), {value: set(on) for value, on in by_value.items()})
        self._kept = (epoch, {**keys, key: copies})


class LabelIndex:
    """Per label key asked about (indexed on first use): for each value, the nodes holding
    pods with it and how many; and the staying pods' required anti-affinity terms.

    ``kept``: label values found by earlier sessions, to start from those found at
    ``epoch`` (where ``nodes`` stand) and to keep what this one finds; given only while no
    statement has changed ``nodes``."""

    __slots__ = (
        "_anti",
        "_anti_view",
        "_by_value",
        "_kept",
        "_node_anti",
        "_nodes",
        "_values",
    )

    def __init__(
        self,
        nodes: Mapping[str, NodeInfo],
        kept: KeptLabels | None = None,
        epoch: PlacementEpoch | None = None,
    ) -> None:
        self._nodes = nodes
        #: where to take and keep label values, and the epoch ``nodes`` stand at
        self._kept = (kept, PlacementEpoch(epoch.value, epoch.lineage)) if kept and epoch else None
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
        """The key's values per node, indexed over every node on first use (or taken from
        what an earlier session found at the same epoch)."""
        by_node = self._values.get(key)
        if by_node is not None:
            return by_node
        kept = self._kept
        found = kept[0].take(kept[1], key) if kept is not None else None
        if found is not None:
            by_node, self._by_value[key] = found
            self._values[key] = by_node
            return by_node
        by_node = self._values[key] = {}
        self._by_value[key] = {}
        for name, node in self._nodes.items():
            self._index_node(key, name, node)
        if kept is not None:
            kept[0].keep(kept[1], key, by_node, self._by_value[key])
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

    def refresh(self, nodes: Mapping[str, NodeInfo], names: Collection[str]) -> None:
        """Index the named nodes again as they are now (their pods changed)."""
        self._nodes = nodes
        self._anti_view = None
        if names:
            self._kept = None  # what this index finds from now on is not the epoch's
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
