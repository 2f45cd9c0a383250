"""TopologySource resolves node selectors through its own index and pattern cache: the tree
it builds is the one ``build_from_hypernodes`` builds from the same objects, however the
nodes came and went."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pod_constraints import (
    DOES_NOT_EXIST,
    EXISTS,
    IN,
    NOT_IN,
    LabelRequirement,
    LabelSelector,
)
from scheduler_core.api.resource import Resource
from scheduler_core.api.topology import (
    MEMBER_HYPERNODE,
    MEMBER_NODE,
    HyperNodeMember,
    HyperNodeSpec,
    MemberSelector,
    Topology,
    TopologyError,
    build_from_hypernodes,
)
from scheduler_core.cache.topology_source import TopologyRefusal, TopologySource

NAMES = [f"n{i}" for i in range(12)]
KEYS = ["rack", "zone"]
VALUES = ["a", "b", "c"]

labels_st = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2)
requirement_st = st.one_of(
    st.builds(
        LabelRequirement,
        st.sampled_from(KEYS),
        st.sampled_from([IN, NOT_IN]),
        st.frozensets(st.sampled_from(VALUES), min_size=1, max_size=2),
    ),
    st.builds(LabelRequirement, st.sampled_from(KEYS), st.sampled_from([EXISTS, DOES_NOT_EXIST])),
)
selector_st = st.one_of(
    st.builds(MemberSelector, exact=st.sampled_from(NAMES)),
    st.builds(MemberSelector, regex=st.sampled_from(["n1.*", "n[0-3]", "n(2|5|7)", "n[", ".*"])),
    st.builds(
        MemberSelector,
        labels=st.builds(LabelSelector, st.tuples(requirement_st) | st.tuples()),
    ),
)
leaf_st = st.lists(st.builds(HyperNodeMember, st.just(MEMBER_NODE), selector_st), max_size=3)


def node(name: str, labels: dict[str, str]) -> NodeInfo:
    return NodeInfo.new(name, Resource.empty(), Resource.empty(), labels=labels)


def direct(specs: list[HyperNodeSpec], nodes: dict[str, NodeInfo]) -> object:
    try:
        tree = build_from_hypernodes(specs, {n: v.labels for n, v in nodes.items()})
    except TopologyError as exc:
        return exc.problems
    return shape(tree)


def shape(tree: Topology) -> dict[str, tuple[int, frozenset[str]]]:
    return {name: (d.tier, d.nodes) for name, d in tree.domains.items()}


def through_source(source: TopologySource, nodes: dict[str, NodeInfo]) -> object:
    tree = source.current(nodes)
    if source.refusal is not None:
        return dict(source.refusal.problems)
    return shape(tree)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(st.sampled_from(NAMES), labels_st, max_size=8),
    st.lists(leaf_st, min_size=1, max_size=3),
    st.lists(st.tuples(st.sampled_from(NAMES), labels_st, st.booleans()), max_size=6),
)
def test_the_resolved_tree_is_the_tree_of_the_objects_as_nodes_come_and_go(
    initial: dict[str, dict[str, str]],
    leaves: list[list[HyperNodeMember]],
    changes: list[tuple[str, dict[str, str], bool]],
) -> None:
    specs = [HyperNodeSpec(f"leaf{i}", 1, members=tuple(m)) for i, m in enumerate(leaves)]
    specs.append(
        HyperNodeSpec(
            "spine",
            2,
            members=tuple(
                HyperNodeMember(MEMBER_HYPERNODE, MemberSelector(exact=s.name)) for s in specs
            ),
        )
    )
    source = TopologySource()
    for spec in specs:
        source.put_hypernode_spec(spec)
    nodes = {name: node(name, labels) for name, labels in initial.items()}
    for current in nodes.values():
        source.node_changed(None, current)
    assert through_source(source, nodes) == direct(specs, nodes)
    for name, labels, present in changes:
        old = nodes.pop(name, None)
        new = node(name, labels) if present else None
        if new is not None:
            nodes[name] = new
        source.node_changed(old, new)
        assert through_source(source, nodes) == direct(specs, nodes)


def test_a_long_refusal_is_logged_with_its_first_problems_and_a_count() -> None:
    refusal = TopologyRefusal("hypernodes", {f"leaf{i:02d}": "wrong" for i in range(12)})
    assert refusal.describe(limit=2) == "leaf00: wrong; leaf01: wrong; and 10 more"
    assert refusal.describe().count("wrong") == 12
