"""The network topology a gang may ask to land inside, and what a job asks of it.

A *domain* is a set of nodes that share a network level: a leaf switch, a spine, an NVLink
block. Domains form tiers: tier 1 is the narrowest (closest to the nodes), each higher tier
groups the ones below it. The tree comes from one of two sources, both reduced here to the
same plain ``Topology``:

- Volcano's ``HyperNode`` objects (``topology.volcano.sh/v1alpha1``): a HyperNode of tier
  ``t`` lists its members, nodes or HyperNodes of a lower tier, by exact name, by regular
  expression or (nodes only) by labels;
- node-label levels: a configured list of label keys from the widest level to the
  narrowest (``datacenter → spine → block``); a node belongs to the level-``i`` domain named
  by its values of the first ``i`` keys.

A bad tree is refused as a whole (``TopologyError`` with one sentence per offending object)
so that the caller can keep serving the last good one: half a tree would place gangs across
switches without saying so.

A job's request is Volcano's ``PodGroup.spec.networkTopology``: ``mode`` hard or soft and a
tier bound given as ``highestTierAllowed`` (a number) or ``highestTierName`` (a HyperNode
``tierName``, or a level's label key).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from scheduler_core.api.pod_constraints import LabelSelector

#: What a HyperNode member is.
MEMBER_NODE = "Node"
MEMBER_HYPERNODE = "HyperNode"


class TopologyMode(StrEnum):
    """``spec.networkTopology.mode``: hard keeps every member inside one domain of an allowed
    tier or places none; soft prefers the lowest tier that holds the gang, else anywhere."""

    HARD = "hard"
    SOFT = "soft"


@dataclass(frozen=True, slots=True)
class NetworkTopologyRequest:
    """What a job asks: its mode and at most one of the two forms of its tier bound."""

    mode: TopologyMode = TopologyMode.HARD
    highest_tier_allowed: int | None = None
    highest_tier_name: str = ""
    #: Why the PodGroup's request is malformed (both bound forms, an unknown mode...); such
    #: a request is held as hard with no domain, so that no member is placed and each is
    #: told this sentence. Empty for a well-formed request.
    problem: str = ""
    #: The request stands for a Kubernetes PodGroup's ``schedulingConstraints.topology``
    #: key (``highest_tier_name``): kube-scheduler places such a gang in one domain of that
    #: key itself, so a key the tree does not name as a tier leaves the gang to it (placed
    #: as any other here) instead of holding it.
    from_constraint: bool = False

    def describe(self) -> str:
        """The request as a person wrote it, for sentences: ``hard, tier ≤ 2``."""
        if self.problem:
            return f"malformed ({self.problem})"
        if self.from_constraint:
            return f"hard, one {self.highest_tier_name} (schedulingConstraints)"
        if self.highest_tier_allowed is not None:
            bound = f"tier ≤ {self.highest_tier_allowed}"
        elif self.highest_tier_name:
            bound = f"tier ≤ {self.highest_tier_name}"
        else:
            bound = "any tier"
        return f"{self.mode.value}, {bound}"


# --- HyperNodes as specified ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MemberSelector:
    """One of ``exactMatch.name``, ``regexMatch.pattern`` or ``labelMatch`` (a selector)."""

    exact: str = ""
    regex: str = ""
    labels: LabelSelector | None = None


@dataclass(frozen=True, slots=True)
class HyperNodeMember:
    type: str  # MEMBER_NODE or MEMBER_HYPERNODE
    selector: MemberSelector


@dataclass(frozen=True, slots=True)
class HyperNodeSpec:
    """A HyperNode as converted from the API object, not yet resolved against the others."""

    name: str
    tier: int
    tier_name: str = ""
    members: tuple[HyperNodeMember, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)


# --- the resolved tree --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Domain:
    """One domain of the tree: its name, tier and every node under it (transitively)."""

    name: str
    tier: int
    nodes: frozenset[str]
    tier_name: str = ""
    parent: str | None = None
    children: tuple[str, ...] = ()

    def describe(self) -> str:
        label = f"tier {self.tier}" + (f" ({self.tier_name})" if self.tier_name else "")
        return f"{self.name} ({label}, {len(self.nodes)} nodes)"


class TopologyError(ValueError):
    """A tree refused as a whole. ``problems`` maps each offending object (a HyperNode's
    name, or the label level) to the sentence that says what is wrong with it."""

    def __init__(self, problems: Mapping[str, str]) -> None:
        self.problems = dict(sorted(problems.items()))
        super().__init__("; ".join(f"{name}: {why}" for name, why in self.problems.items()))


class Topology:
    """A validated tree of domains. Never changed once built: a change of HyperNodes or node
    labels builds a new one, so a decision made against one tree can compare identities to
    know whether it still holds."""

    __slots__ = ("_by_tier", "_node_domains", "_tier_names", "domains", "source")

    def __init__(self, domains: Mapping[str, Domain] | None = None, source: str = "none") -> None:
        self.domains: Mapping[str, Domain] = dict(domains or {})
        #: Where the tree came from: ``hypernodes``, ``labels`` or ``none``.
        self.source = source
        by_tier: dict[int, list[Domain]] = {}
        self._node_domains: dict[str, dict[int, Domain]] = {}
        self._tier_names: dict[str, int] = {}
        for domain in self.domains.values():
            by_tier.setdefault(domain.tier, []).append(domain)
            if domain.tier_name:
                self._tier_names.setdefault(domain.tier_name, domain.tier)
            for node in domain.nodes:
                self._node_domains.setdefault(node, {})[domain.tier] = domain
        self._by_tier: dict[int, tuple[Domain, ...]] = {
            tier: tuple(sorted(ds, key=lambda d: d.name)) for tier, ds in sorted(by_tier.items())
        }

    def __repr__(self) -> str:
        return f"Topology(source={self.source!r}, domains={len(self.domains)})"

    @property
    def empty(self) -> bool:
        return not self.domains

    @property
    def tiers(self) -> tuple[int, ...]:
        """The tiers that have domains, narrowest first."""
        return tuple(self._by_tier)

    def domains_at(self, tier: int) -> tuple[Domain, ...]:
        """The domains of one tier, by name."""
        return self._by_tier.get(tier, ())

    def domain_of(self, node: str, tier: int) -> Domain | None:
        """The domain of ``tier`` that holds ``node``; None when the node belongs to none."""
        return self._node_domains.get(node, {}).get(tier)

    def node_domains(self, node: str) -> Mapping[int, Domain]:
        """Every domain that holds ``node``, by tier."""
        return self._node_domains.get(node, {})

    def tier_of_name(self, tier_name: str) -> int | None:
        return self._tier_names.get(tier_name)

    def highest_tier(self, request: NetworkTopologyRequest) -> int | None:
        """The highest tier ``request`` allows, as a number. A request with no bound allows
        every tier of the tree; a tier name the tree does not know allows none (None)."""
        if request.highest_tier_allowed is not None:
            return request.highest_tier_allowed
        if request.highest_tier_name:
            return self.tier_of_name(request.highest_tier_name)
        return self.tiers[-1] if self.tiers else None

    def common_domain(self, nodes: Iterable[str], max_tier: int) -> Domain | None:
        """The narrowest domain of tier ≤ ``max_tier`` that holds every one of ``nodes``
        (the domain members already placed pin); None when there is none or no node given."""
        names = list(nodes)
        if not names:
            return None
        first = self.node_domains(names[0])
        for tier in sorted(first):
            if tier > max_tier:
                break
            domain = first[tier]
            if all(n in domain.nodes for n in names[1:]):
                return domain
        return None


EMPTY_TOPOLOGY = Topology()


# --- building ----------------------------------------------------------------------------


def build_from_hypernodes(
    specs: Iterable[HyperNodeSpec], nodes: Mapping[str, Mapping[str, str]]
) -> Topology:
    """Resolve HyperNodes against each other and the cluster's nodes (name → labels).

    Refused (``TopologyError``), each with its sentence: a regular expression that does not
    compile; a HyperNode member naming a HyperNode that does not exist; a HyperNode that is a
    member of two others; a cycle; a member whose tier is not lower than its parent's; a node
    in two domains of one tier. A node member named exactly that the cluster does not have
    yet is no error (nodes come and go): it simply adds nothing until it exists. A pattern
    selects every name it matches anywhere in, as Volcano's Go ``regexp.MatchString`` does
    (``^gpu-a-[0-9]+$`` for a whole name)."""
    by_name: dict[str, HyperNodeSpec] = {}
    problems: dict[str, str] = {}
    for spec in specs:
        by_name[spec.name] = spec
    compiled: dict[tuple[str, int], re.Pattern[str]] = {}
    for spec in by_name.values():
        for i, member in enumerate(spec.members):
            if member.selector.regex:
                try:
                    compiled[(spec.name, i)] = re.compile(member.selector.regex)
                except re.error as exc:
                    problems[spec.name] = (
                        f"member {i}: regexMatch pattern {member.selector.regex!r} does not "
                        f"compile: {exc}"
                    )
    if problems:
        raise TopologyError(problems)

    children: dict[str, list[str]] = {}
    parents: dict[str, str] = {}
    direct_nodes: dict[str, set[str]] = {}
    for spec in by_name.values():
        kids: list[str] = []
        own: set[str] = set()
        for i, member in enumerate(spec.members):
            sel = member.selector
            pattern = compiled.get((spec.name, i))
            if member.type == MEMBER_HYPERNODE:
                if sel.exact:
                    if sel.exact not in by_name:
                        problems[spec.name] = f"member HyperNode {sel.exact} does not exist"
                        continue
                    kids.append(sel.exact)
                elif pattern is not None:
                    kids.extend(n for n in sorted(by_name) if pattern.search(n))
                elif sel.labels is not None:
                    kids.extend(n for n in sorted(by_name) if sel.labels.matches(by_name[n].labels))
            else:
                if sel.exact:
                    if sel.exact in nodes:
                        own.add(sel.exact)
                elif pattern is not None:
                    own.update(n for n in nodes if pattern.search(n))
                elif sel.labels is not None:
                    own.update(n for n, labels in nodes.items() if sel.labels.matches(labels))
        for kid in kids:
            if kid in parents and parents[kid] != spec.name:
                problems[kid] = f"member of two HyperNodes: {parents[kid]} and {spec.name}"
                continue
            parents[kid] = spec.name
        children[spec.name] = sorted(set(kids))
        direct_nodes[spec.name] = own
    if problems:
        raise TopologyError(problems)

    for name in sorted(by_name):
        cycle = _cycle_from(name, children)
        if cycle:
            problems[name] = "cycle: " + " → ".join(cycle)
    if problems:
        raise TopologyError(problems)

    for name, kids in children.items():
        for kid in kids:
            if by_name[kid].tier >= by_name[name].tier:
                problems[kid] = (
                    f"tier {by_name[kid].tier} is not lower than its parent {name}'s tier "
                    f"{by_name[name].tier}"
                )
    if problems:
        raise TopologyError(problems)

    resolved: dict[str, frozenset[str]] = {}

    def nodes_of(name: str) -> frozenset[str]:
        if name not in resolved:
            under = set(direct_nodes[name])
            for kid in children[name]:
                under |= nodes_of(kid)
            resolved[name] = frozenset(under)
        return resolved[name]

    domains = {
        name: Domain(
            name=name,
            tier=spec.tier,
            nodes=nodes_of(name),
            tier_name=spec.tier_name,
            parent=parents.get(name),
            children=tuple(children[name]),
        )
        for name, spec in by_name.items()
    }
    _check_one_domain_per_tier(domains.values())
    return Topology(domains=domains, source="hypernodes")


def _cycle_from(start: str, children: Mapping[str, Sequence[str]]) -> list[str]:
    """The path of a cycle that returns to ``start``, or [] when there is none."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        name, path = stack.pop()
        for kid in children.get(name, ()):
            if kid == start:
                return [*path, kid]
            if kid not in seen:
                seen.add(kid)
                stack.append((kid, [*path, kid]))
    return []


def _check_one_domain_per_tier(domains: Iterable[Domain]) -> None:
    owner: dict[tuple[str, int], str] = {}
    problems: dict[str, str] = {}
    for domain in sorted(domains, key=lambda d: d.name):
        for node in sorted(domain.nodes):
            other = owner.setdefault((node, domain.tier), domain.name)
            if other != domain.name:
                problems[domain.name] = (
                    f"node {node} is in two domains of tier {domain.tier}: {other} and "
                    f"{domain.name}"
                )
    if problems:
        raise TopologyError(problems)


def build_from_labels(levels: Sequence[str], nodes: Mapping[str, Mapping[str, str]]) -> Topology:
    """The tree that node-label levels describe, ``levels`` from the widest to the narrowest.

    The narrowest level is tier 1 and the widest tier ``len(levels)``; each domain's tier name
    is its label key. A domain is named by the values along its path (``dc1/spine-a/b3``), so
    that two blocks called ``b3`` under different spines stay two domains. A node lacking one
    level's label belongs to no domain at that level or below it."""
    if len(set(levels)) != len(levels):
        raise TopologyError({"levels": f"a label key is listed twice: {list(levels)}"})
    depth = len(levels)
    members: dict[tuple[str, ...], set[str]] = {}
    for node, labels in nodes.items():
        path: tuple[str, ...] = ()
        for key in levels:
            value = labels.get(key)
            if value is None:
                break
            path = (*path, value)
            members.setdefault(path, set()).add(node)
    kids_of: dict[tuple[str, ...], list[str]] = {}
    for path in members:
        if len(path) > 1:
            kids_of.setdefault(path[:-1], []).append("/".join(path))
    domains: dict[str, Domain] = {}
    for path, under in members.items():
        name = "/".join(path)
        kids = tuple(sorted(kids_of.get(path, ())))
        domains[name] = Domain(
            name=name,
            tier=depth - len(path) + 1,
            nodes=frozenset(under),
            tier_name=levels[len(path) - 1],
            parent="/".join(path[:-1]) or None,
            children=kids,
        )
    return Topology(domains=domains, source="labels")
