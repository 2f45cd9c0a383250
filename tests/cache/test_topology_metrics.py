"""The network topology's metrics: refused or not, refusals counted, domains by tier."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from scheduler_core.cache.state import HYPERNODE, ClusterState
from scheduler_core.cache.topology_metrics import TopologyCollector
from tests.builders import hypernode, node


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_refusal_and_domains_are_read_at_scrape_time() -> None:
    state = ClusterState()
    registry = CollectorRegistry()
    registry.register(TopologyCollector(state))
    assert sample(registry, "queue_extender_topology_refused", source="none") == 0.0
    state.upsert("Node", node("n1"))
    state.upsert(HYPERNODE, hypernode("leaf", 1, nodes=["n1"]))
    state.upsert(HYPERNODE, hypernode("spine", 2, hypernodes=["leaf"]))
    assert sample(registry, "queue_extender_topology_domains", tier="1") == 1.0
    assert sample(registry, "queue_extender_topology_domains", tier="2") == 1.0
    state.upsert(HYPERNODE, hypernode("spine", 2, hypernodes=["leaf", "spine"]))
    assert sample(registry, "queue_extender_topology_refused", source="hypernodes") == 1.0
    assert sample(registry, "queue_extender_topology_refusals_total") == 1.0
    assert sample(registry, "queue_extender_topology_domains", tier="2") == 1.0  # last good
