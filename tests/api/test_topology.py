"""The topology tree: built from HyperNodes (every selector kind) or from label levels, and
refused as a whole, with a sentence per object, when it is not a tree."""

from __future__ import annotations

import pytest

from scheduler_core.api.pod_constraints import IN, LabelRequirement, LabelSelector
from scheduler_core.api.topology import (
    MEMBER_HYPERNODE,
    MEMBER_NODE,
    HyperNodeMember,
    HyperNodeSpec,
    MemberSelector,
    NetworkTopologyRequest,
    TopologyError,
    TopologyMode,
    build_from_hypernodes,
    build_from_labels,
)

NODES = {f"n{i}": {"rack": "a" if i < 4 else "b"} for i in range(8)}


def node(exact: str = "", regex: str = "", labels: LabelSelector | None = None) -> HyperNodeMember:
    return HyperNodeMember(MEMBER_NODE, MemberSelector(exact=exact, regex=regex, labels=labels))


def child(name: str) -> HyperNodeMember:
    return HyperNodeMember(MEMBER_HYPERNODE, MemberSelector(exact=name))


def rack(value: str) -> LabelSelector:
    return LabelSelector((LabelRequirement("rack", IN, frozenset({value})),))


TREE = [
    HyperNodeSpec("leaf-a", 1, "leaf", (node(exact="n0"), node(regex="n[1-3]"))),
    HyperNodeSpec("leaf-b", 1, "leaf", (node(labels=rack("b")),)),
    HyperNodeSpec("spine", 2, "spine", (child("leaf-a"), child("leaf-b"))),
]


def test_hypernodes_resolve_every_selector_kind_and_nest_nodes_upwards() -> None:
    topo = build_from_hypernodes(TREE, NODES)
    assert topo.domains["leaf-a"].nodes == {"n0", "n1", "n2", "n3"}
    assert topo.domains["leaf-b"].nodes == {"n4", "n5", "n6", "n7"}
    assert topo.domains["spine"].nodes == frozenset(NODES)
    assert topo.domains["leaf-a"].parent == "spine"
    assert topo.domains["spine"].children == ("leaf-a", "leaf-b")
    assert topo.tiers == (1, 2)
    assert [d.name for d in topo.domains_at(1)] == ["leaf-a", "leaf-b"]
    assert topo.domain_of("n5", 1) is topo.domains["leaf-b"]
    assert topo.tier_of_name("spine") == 2


def test_a_node_in_no_domain_belongs_to_none() -> None:
    topo = build_from_hypernodes(TREE, {**NODES, "lonely": {}})
    assert topo.domain_of("lonely", 1) is None
    assert topo.node_domains("lonely") == {}


def test_an_exact_node_the_cluster_does_not_have_adds_nothing() -> None:
    topo = build_from_hypernodes([HyperNodeSpec("x", 1, "", (node(exact="gone"),))], NODES)
    assert topo.domains["x"].nodes == frozenset()


@pytest.mark.parametrize(
    ("specs", "offender", "words"),
    [
        pytest.param(
            [
                HyperNodeSpec("a", 1, "", (node(regex="n[0-3]"),)),
                HyperNodeSpec("b", 1, "", (node(regex="n[3-5]"),)),
            ],
            "b",
            "node n3 is in two domains of tier 1: a and b",
            id="node-in-two-domains-of-one-tier",
        ),
        pytest.param(
            [HyperNodeSpec("loop", 2, "", (child("loop"),))],
            "loop",
            "cycle: loop → loop",
            id="self-cycle",
        ),
        pytest.param(
            [
                HyperNodeSpec("x", 2, "", (child("y"),)),
                HyperNodeSpec("y", 3, "", (child("x"),)),
            ],
            "x",
            "cycle: x → y → x",
            id="two-node-cycle",
        ),
        pytest.param(
            [
                HyperNodeSpec("top", 2, "", (child("low"),)),
                HyperNodeSpec("low", 2, "", (node(exact="n0"),)),
            ],
            "low",
            "tier 2 is not lower than its parent top's tier 2",
            id="member-tier-not-lower",
        ),
        pytest.param(
            [HyperNodeSpec("top", 2, "", (child("missing"),))],
            "top",
            "member HyperNode missing does not exist",
            id="unknown-member",
        ),
        pytest.param(
            [HyperNodeSpec("bad", 1, "", (node(regex="n[0-"),))],
            "bad",
            "does not compile",
            id="regex-does-not-compile",
        ),
        pytest.param(
            [
                HyperNodeSpec("p1", 2, "", (child("leaf"),)),
                HyperNodeSpec("p2", 2, "", (child("leaf"),)),
                HyperNodeSpec("leaf", 1, "", (node(exact="n0"),)),
            ],
            "leaf",
            "member of two HyperNodes",
            id="hypernode-with-two-parents",
        ),
    ],
)
def test_a_bad_tree_is_refused_naming_the_object_and_why(
    specs: list[HyperNodeSpec], offender: str, words: str
) -> None:
    with pytest.raises(TopologyError) as refused:
        build_from_hypernodes(specs, NODES)
    assert words in refused.value.problems[offender]


LEVELS = ["dc", "spine", "block"]
LABELLED = {
    "a1": {"dc": "d1", "spine": "s1", "block": "b1"},
    "a2": {"dc": "d1", "spine": "s1", "block": "b1"},
    "b1": {"dc": "d1", "spine": "s2", "block": "b1"},
    "c1": {"dc": "d1", "spine": "s2"},
    "d1": {"spine": "s9", "block": "b9"},
}


def test_label_levels_build_the_same_kind_of_tree_named_by_path() -> None:
    topo = build_from_labels(LEVELS, LABELLED)
    assert topo.source == "labels"
    assert topo.tiers == (1, 2, 3)
    # two blocks called b1 under different spines are two domains
    assert topo.domains["d1/s1/b1"].nodes == {"a1", "a2"}
    assert topo.domains["d1/s2/b1"].nodes == {"b1"}
    assert topo.domains["d1/s2"].nodes == {"b1", "c1"}
    assert topo.domains["d1"].tier == 3
    assert topo.domains["d1"].children == ("d1/s1", "d1/s2")
    assert topo.domains["d1/s1/b1"].tier_name == "block"
    assert topo.tier_of_name("spine") == 2
    # a node lacking a level's label belongs to nothing at that level or below
    assert topo.domain_of("c1", 1) is None
    assert topo.node_domains("d1") == {}


def test_label_levels_listing_a_key_twice_are_refused() -> None:
    with pytest.raises(TopologyError):
        build_from_labels(["dc", "dc"], LABELLED)


@pytest.mark.parametrize(
    ("request_", "tier"),
    [
        (NetworkTopologyRequest(TopologyMode.HARD, highest_tier_allowed=1), 1),
        (NetworkTopologyRequest(TopologyMode.HARD, highest_tier_name="spine"), 2),
        (NetworkTopologyRequest(TopologyMode.HARD, highest_tier_name="nowhere"), None),
        (NetworkTopologyRequest(TopologyMode.SOFT), 2),
    ],
)
def test_the_highest_tier_a_request_allows(
    request_: NetworkTopologyRequest, tier: int | None
) -> None:
    assert build_from_hypernodes(TREE, NODES).highest_tier(request_) == tier


def test_placed_members_pin_the_narrowest_common_domain_within_the_bound() -> None:
    topo = build_from_hypernodes(TREE, NODES)
    assert topo.common_domain(["n0", "n2"], 2) is topo.domains["leaf-a"]
    assert topo.common_domain(["n0", "n5"], 2) is topo.domains["spine"]
    assert topo.common_domain(["n0", "n5"], 1) is None
    assert topo.common_domain([], 2) is None
