"""The network topology tree the cluster state serves, built lazily from what feeds it.

The tree is a function of the HyperNodes (or the configured label levels) and of the nodes'
names and labels. Building it walks every node (a regular expression or a label selector per
member), so it is never built on an event: an event that changes one of its inputs (a
HyperNode, a node added or removed, a node whose labels changed, the levels) only marks it
stale, and the next reader (a snapshot) builds it once. A node heartbeat changes none of its
inputs and costs a comparison of two label maps.

A tree that does not hold (a cycle, a node in two domains of one tier, a HyperNode the schema
would refuse...) is refused whole: the last good tree keeps serving, and the refusal (each
offending object with its sentence) is kept until a good tree replaces it, for the people's
API, the log, a metric and, on the leader, an event on each refused HyperNode.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pod_constraints import EXISTS, IN, LabelSelector
from scheduler_core.api.topology import (
    EMPTY_TOPOLOGY,
    MEMBER_NODE,
    HyperNodeMember,
    HyperNodeSpec,
    MemberSelector,
    Topology,
    TopologyError,
    build_from_hypernodes,
    build_from_labels,
)
from scheduler_core.cache.convert_topology import hypernode_to_spec

log = logging.getLogger("scheduler_core.cache")

SOURCE_HYPERNODES = "hypernodes"
SOURCE_LABELS = "labels"
SOURCE_NONE = "none"


@dataclass(frozen=True, slots=True)
class TopologyRefusal:
    """Why the tree the inputs describe now is refused: each offending object (a HyperNode's
    name, or ``levels``) with its sentence, and which source it came from."""

    source: str
    problems: Mapping[str, str] = field(default_factory=dict)

    def describe(self, limit: int | None = None) -> str:
        """Each problem as ``object: sentence``; with ``limit``, the first ones and a count
        of the rest (a log line stays readable when a whole rack of HyperNodes is wrong)."""
        items = sorted(self.problems.items())
        shown = items if limit is None else items[:limit]
        text = "; ".join(f"{name}: {why}" for name, why in shown)
        if len(items) > len(shown):
            text += f"; and {len(items) - len(shown)} more"
        return text


class TopologySource:
    """The HyperNodes, the label levels, the last good tree and the current refusal. Not
    locked: it lives inside ``ClusterState`` and is used under its lock."""

    def __init__(self) -> None:
        self.hypernodes: dict[str, HyperNodeSpec] = {}
        #: HyperNode name -> why its object cannot be read (the whole tree is refused while
        #: one is unreadable: a tree without it would place gangs it should not).
        self.unreadable: dict[str, str] = {}
        self.levels: tuple[str, ...] = ()
        self.stale = True
        self.tree: Topology = EMPTY_TOPOLOGY
        self.refusal: TopologyRefusal | None = None
        #: How many times a tree was refused (a new refusal, not the same one read again).
        self.refusals_total = 0
        #: Refusals the leader has not yet reported as events: HyperNode name -> sentence.
        self.unreported: dict[str, str] = {}
        #: Successful builds: a reader compares it to know the tree was rebuilt.
        self.builds = 0
        #: Node-member regular expressions -> the node names they match, kept as nodes come
        #: and go (a name never changes), so that a rebuild after one node joined tests one
        #: name per pattern rather than every name against every pattern.
        self._regex_matches: dict[str, tuple[re.Pattern[str], set[str]]] = {}

    # --- inputs -------------------------------------------------------------------------

    def put_hypernode(self, obj: Mapping[str, Any]) -> None:
        name = _object_name(obj)
        try:
            spec = hypernode_to_spec(obj)
        except ValueError as exc:
            self.hypernodes.pop(name, None)
            self.unreadable[name] = str(exc)
        else:
            self.unreadable.pop(name, None)
            self.hypernodes[name] = spec
        self.stale = True

    def put_hypernode_spec(self, spec: HyperNodeSpec) -> None:
        self.unreadable.pop(spec.name, None)
        self.hypernodes[spec.name] = spec
        self.stale = True

    def delete_hypernode(self, name: str) -> None:
        self.hypernodes.pop(name, None)
        self.unreadable.pop(name, None)
        self.stale = True

    def node_changed(self, old: NodeInfo | None, new: NodeInfo | None) -> None:
        """A node was added, removed or updated: stale only when its name or labels moved."""
        if old is None and new is not None:
            for pattern, matched in self._regex_matches.values():
                if pattern.search(new.name):
                    matched.add(new.name)
        elif new is None and old is not None:
            for _, matched in self._regex_matches.values():
                matched.discard(old.name)
        if old is None or new is None or old.labels != new.labels:
            self.stale = True

    def set_levels(self, levels: Sequence[str]) -> bool:
        """Use these label levels (empty: HyperNodes); whether they changed."""
        levels = tuple(levels)
        if levels == self.levels:
            return False
        self.levels = levels
        self.stale = True
        return True

    @property
    def source(self) -> str:
        """Where the tree comes from now."""
        if self.levels:
            return SOURCE_LABELS
        if self.hypernodes or self.unreadable:
            return SOURCE_HYPERNODES
        return SOURCE_NONE

    # --- the tree -----------------------------------------------------------------------

    def current(self, nodes: Mapping[str, NodeInfo]) -> Topology:
        """The tree to serve: rebuilt first when an input changed since the last build."""
        if self.stale:
            self.stale = False
            self._rebuild(nodes)
        return self.tree

    def _rebuild(self, nodes: Mapping[str, NodeInfo]) -> None:
        source = self.source
        labels = {name: node.labels for name, node in nodes.items()}
        try:
            if source == SOURCE_LABELS:
                tree = build_from_labels(self.levels, labels)
            elif source == SOURCE_HYPERNODES:
                if self.unreadable:
                    raise TopologyError(self.unreadable)
                tree = build_from_hypernodes(self._resolved(labels), labels)
            else:
                tree = EMPTY_TOPOLOGY
        except TopologyError as exc:
            self._refuse(TopologyRefusal(source, exc.problems))
            return
        if self.refusal is not None:
            log.info("Network topology accepted again (%s): the refusal is lifted", source)
        self.refusal = None
        self.unreported = {}
        self.builds += 1
        if tree.source == self.tree.source and tree.domains == self.tree.domains:
            # The same tree (a label that places no node elsewhere): keep its identity, so
            # that the choices made in it (kept while the tree is the same) still hold.
            return
        self.tree = tree
        log.info(
            "Network topology from %s: %d domains in %d tiers",
            source,
            len(tree.domains),
            len(tree.tiers),
        )

    def _resolved(self, nodes: Mapping[str, Mapping[str, str]]) -> list[HyperNodeSpec]:
        """The HyperNodes with their node members chosen by regular expression or by labels
        replaced by the nodes they select, named exactly: the same tree, built without
        testing every node against every selector (a rack a leaf, by label, is 600 selectors
        over 5,000 nodes). A HyperNode with a pattern that does not compile is left as it is,
        for the tree to refuse with its sentence (which names the member by its place);
        HyperNode members are few and left to the tree."""
        index = _LabelIndex(nodes)
        used: set[str] = set()
        out: list[HyperNodeSpec] = []
        for spec in self.hypernodes.values():
            members: list[HyperNodeMember] = []
            changed = False
            patterns = [m.selector.regex for m in spec.members if m.type == MEMBER_NODE]
            used.update(p for p in patterns if p)
            if any(p and self._regex(p, nodes) is None for p in patterns):
                out.append(spec)
                continue
            for member in spec.members:
                selector = member.selector
                matched: Iterable[str] | None = None
                if member.type == MEMBER_NODE and not selector.exact:
                    if selector.regex:
                        matched = self._regex(selector.regex, nodes)
                    elif selector.labels is not None:
                        matched = index.select(selector.labels)
                if matched is None:
                    members.append(member)
                    continue
                changed = True
                members.extend(
                    HyperNodeMember(MEMBER_NODE, MemberSelector(exact=name))
                    for name in sorted(matched)
                )
            out.append(replace(spec, members=tuple(members)) if changed else spec)
        for gone in self._regex_matches.keys() - used:
            del self._regex_matches[gone]
        return out

    def _regex(self, text: str, nodes: Mapping[str, Mapping[str, str]]) -> set[str] | None:
        """The nodes ``text`` matches whole; None when it does not compile."""
        known = self._regex_matches.get(text)
        if known is None:
            try:
                pattern = re.compile(text)
            except re.error:
                return None
            known = (pattern, {name for name in nodes if pattern.search(name)})
            self._regex_matches[text] = known
        return known[1]

    def _refuse(self, refusal: TopologyRefusal) -> None:
        if refusal == self.refusal:
            return
        self.refusal = refusal
        self.refusals_total += 1
        if refusal.source == SOURCE_HYPERNODES:
            self.unreported = dict(refusal.problems)
        log.error(
            "Network topology from %s refused, the last good tree (%d domains) keeps serving: %s",
            refusal.source,
            len(self.tree.domains),
            refusal.describe(limit=10),
        )

    def take_unreported(self) -> dict[str, str]:
        """The refused HyperNodes not yet reported (the leader's events), emptied."""
        taken, self.unreported = self.unreported, {}
        known = self.hypernodes.keys() | self.unreadable.keys()
        return {name: why for name, why in taken.items() if name in known}

    def copy(self) -> TopologySource:
        other = TopologySource()
        other.hypernodes = dict(self.hypernodes)
        other.unreadable = dict(self.unreadable)
        other.levels = self.levels
        other.stale = self.stale
        other.tree = self.tree
        other.refusal = self.refusal
        other.refusals_total = self.refusals_total
        other.builds = self.builds
        other._regex_matches = {
            text: (pattern, set(matched))
            for text, (pattern, matched) in self._regex_matches.items()
        }
        return other


class _LabelIndex:
    """Node names by label key and value, built once per rebuild: a selector with an ``In``
    (or ``Exists``) requirement is then tested on the nodes that requirement admits only."""

    def __init__(self, nodes: Mapping[str, Mapping[str, str]]) -> None:
        self._nodes = nodes
        self._by_key: dict[str, dict[str, set[str]]] = {}
        for name, labels in nodes.items():
            for key, value in labels.items():
                self._by_key.setdefault(key, {}).setdefault(value, set()).add(name)

    def _admitted(self, key: str, values: Iterable[str] | None) -> set[str]:
        by_value = self._by_key.get(key, {})
        chosen = by_value.values() if values is None else (by_value.get(v, ()) for v in values)
        out: set[str] = set()
        for names in chosen:
            out.update(names)
        return out

    def select(self, selector: LabelSelector) -> set[str]:
        candidates: Iterable[str] = self._nodes
        narrowest: set[str] | None = None
        for req in selector.requirements:
            if req.operator in (IN, EXISTS):
                admitted = self._admitted(req.key, req.values if req.operator == IN else None)
                if narrowest is None or len(admitted) < len(narrowest):
                    narrowest = admitted
        if narrowest is not None:
            candidates = narrowest
        return {name for name in candidates if selector.matches(self._nodes[name])}


def _object_name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else ""
