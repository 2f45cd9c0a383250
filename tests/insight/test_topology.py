"""The topology view: the serving tree by tier, its source, the refusal, the conf's switch."""

from __future__ import annotations

from scheduler_core.cache.state import HYPERNODE, ClusterState
from scheduler_core.conf import load_configuration
from scheduler_core.insight.topology import topology_view
from tests.builders import hypernode, node

TIERS = "tiers:\n- plugins: [{name: gang}]\n"


def test_label_levels_show_their_domains_by_tier_named_by_their_keys() -> None:
    state = ClusterState()
    for name, leaf in (("n1", "a"), ("n2", "a"), ("n3", "b"), ("n4", "")):
        labels = {"spine": "s1", "leaf": leaf} if leaf else {}
        state.upsert("Node", node(name, labels=labels))
    conf = load_configuration("networkTopology: {labelLevels: [spine, leaf]}\n" + TIERS)
    state.set_topology_levels(conf.network_topology.label_levels)
    with state.locked():
        view = topology_view(state, conf)
    assert (view.source, view.label_levels, view.nodes_in_domains) == (
        "labels",
        ("spine", "leaf"),
        3,
    )
    assert [(t.tier, t.tier_name, [d.name for d in t.domains]) for t in view.tiers] == [
        (1, "leaf", ["s1/a", "s1/b"]),
        (2, "spine", ["s1"]),
    ]
    assert view.refusal is None and view.notes == ()


def test_a_refusal_and_requests_turned_off_are_said() -> None:
    state = ClusterState()
    state.upsert("Node", node("n1"))
    state.upsert(HYPERNODE, hypernode("leaf", 1, nodes=["n1"], hypernodes=["leaf"]))
    conf = load_configuration("networkTopology: {enabled: false}\n" + TIERS)
    with state.locked():
        view = topology_view(state, conf)
    assert not view.enabled
    assert view.refusal is not None
    assert view.refusal.problems == {"leaf": "cycle: leaf → leaf"}
    assert view.tiers == ()  # no good tree yet
    assert view.notes == (
        "networkTopology.enabled is false: requests are ignored and gangs are placed by count",
    )
