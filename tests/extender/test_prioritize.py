"""prioritize scores nodes 0..10 with the configured node order (binpack by default)."""

from __future__ import annotations

from scheduler_core.api.topology import NetworkTopologyRequest, TopologyMode
from scheduler_core.extender.filter_verb import filter_pod
from scheduler_core.extender.prioritize import prioritize_pod
from tests.builders import (
    SPINE_LEAF,
    accounting,
    node,
    pod,
    spine_leaf_cluster,
    spine_leaf_nodes,
    with_label_topology,
)

NODES = [node("empty", cpu="8"), node("half", cpu="8"), node("full", cpu="8")]
LOAD = [pod("h1", cpu="4", node_name="half"), pod("f1", cpu="7", node_name="full")]


def test_default_binpack_prefers_the_fullest_node_that_still_fits() -> None:
    acct, _ = accounting([*NODES, *LOAD])
    scores = dict(prioritize_pod(acct, pod("p", cpu="1"), ["empty", "half", "full"]))
    assert scores["full"] == 10
    assert scores["full"] > scores["half"] > scores["empty"]
    assert all(0 <= s <= 10 for s in scores.values())


def test_least_requested_node_order_prefers_the_emptiest_node() -> None:
    conf = """
actions: "allocate"
tiers:
- plugins:
  - name: nodeorder
    arguments: {leastrequested.weight: 1, mostrequested.weight: 0, balancedresource.weight: 0,
                nodeaffinity.weight: 0, tainttoleration.weight: 0, imagelocality.weight: 0,
                podaffinity.weight: 0}
"""
    acct, _ = accounting([*NODES, *LOAD], conf)
    scores = dict(prioritize_pod(acct, pod("p", cpu="1"), ["empty", "half", "full"]))
    assert scores["empty"] == 10
    assert scores["empty"] > scores["half"] > scores["full"]


def test_unknown_nodes_score_zero_in_input_order() -> None:
    acct, _ = accounting([*NODES, *LOAD])
    result = prioritize_pod(acct, pod("p", cpu="1"), ["nope", "full"])
    assert [name for name, _ in result] == ["nope", "full"]
    assert result[0][1] == 0


def test_a_topology_gang_member_prefers_the_fuller_leaf_of_its_chosen_spine() -> None:
    # leaf a holds 2 members, leaf b 4: the gang of 6 needs spine s; leaf a is the fuller
    acct, _ = accounting(spine_leaf_cluster({"n0": "2", "n1": "2"}, 6))
    spine = NetworkTopologyRequest(TopologyMode.HARD, highest_tier_allowed=2)
    with_label_topology(acct, SPINE_LEAF, {"ns/g": spine})
    member = pod("g-0", cpu="4", group="g")
    nodes = sorted(spine_leaf_nodes("s"))
    assert set(filter_pod(acct, member, nodes).passed) == set(nodes)
    scores = dict(prioritize_pod(acct, member, nodes))
    assert scores["n2"] > scores["n4"]
    # a pod of no topology gang is scored by node order alone: n2 and n4 alike
    plain = dict(prioritize_pod(acct, pod("lone", cpu="4"), nodes))
    assert plain["n2"] == plain["n4"]
