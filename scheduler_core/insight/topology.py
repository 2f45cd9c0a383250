"""The network topology as a person reads it: where the tree comes from, its domains by
tier, and why the tree the cluster describes now is refused, if it is (the last good tree
keeps serving meanwhile, and is what the domains show).

Read from the cluster state's own record (the tree snapshots carry, the refusal it keeps),
never rebuilt here: what this shows is what placement uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.insight.described import described


@dataclass(frozen=True, slots=True)
class DomainView:
    name: str
    tier: int
    tier_name: str = field(metadata=described("the HyperNode's tierName, or the level's label key"))
    node_count: int
    parent: str | None
    children: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TierView:
    tier: int = field(metadata=described("1 is the narrowest, closest to the nodes"))
    #: The tier's name (a HyperNode ``tierName`` or a level's label key); empty when unnamed.
    tier_name: str
    domains: tuple[DomainView, ...]


@dataclass(frozen=True, slots=True)
class RefusalView:
    source: str
    #: Each offending object (a HyperNode's name, or ``levels``) and what is wrong with it.
    problems: dict[str, str] = field(
        metadata=described("offending object -> what is wrong with it")
    )
    message: str


@dataclass(frozen=True, slots=True)
class TopologyView:
    #: From ``networkTopology.enabled``.
    enabled: bool = field(metadata=described("whether PodGroups' networkTopology is honoured"))
    #: Where the tree comes from now.
    source: str = field(metadata=described('"hypernodes", "labels" or "none"'))
    label_levels: tuple[str, ...]
    hypernodes: int
    nodes_in_domains: int
    tiers: tuple[TierView, ...] = field(metadata=described("the serving tree's domains, by tier"))
    refusal: RefusalView | None = field(
        metadata=described("why the tree the cluster describes now is refused (null when it holds)")
    )
    notes: tuple[str, ...]


def topology_view(state: ClusterState, conf: SchedulerConfiguration) -> TopologyView:
    """The view; call with the state's lock held."""
    status = state.topology_status()
    tree = status.tree
    tiers = []
    for tier in tree.tiers:
        domains = tuple(
            DomainView(d.name, d.tier, d.tier_name, len(d.nodes), d.parent, d.children)
            for d in tree.domains_at(tier)
        )
        names = sorted({d.tier_name for d in domains if d.tier_name})
        tiers.append(TierView(tier, "/".join(names), domains))
    in_domains = set().union(*(d.nodes for d in tree.domains.values())) if tree.domains else set()
    refusal = None
    if status.refusal is not None:
        refusal = RefusalView(
            status.refusal.source,
            dict(status.refusal.problems),
            f"refused ({status.refusal.describe()}); the last good tree keeps serving",
        )
    notes = []
    if not conf.network_topology.enabled:
        notes.append(
            "networkTopology.enabled is false: requests are ignored and gangs are placed by count"
        )
    if status.source != tree.source and tree.source != "none" and refusal is None:
        notes.append(f"the serving tree comes from {tree.source}")
    return TopologyView(
        enabled=conf.network_topology.enabled,
        source=status.source,
        label_levels=status.levels,
        hypernodes=len(status.hypernodes) + len(status.unreadable),
        nodes_in_domains=len(in_domains),
        tiers=tuple(tiers),
        refusal=refusal,
        notes=tuple(notes),
    )
