"""HyperNode objects and a PodGroup's networkTopology, as the engine reads them."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.api.pod_constraints import IN, LabelRequirement, LabelSelector
from scheduler_core.api.topology import (
    MEMBER_HYPERNODE,
    MEMBER_NODE,
    MemberSelector,
    NetworkTopologyRequest,
    TopologyMode,
)
from scheduler_core.cache.convert import podgroup_to_info
from scheduler_core.cache.convert_topology import hypernode_to_spec, network_topology_request
from tests.builders import hypernode, podgroup, with_network_topology


def test_a_hypernode_with_every_selector_kind_converts() -> None:
    obj = hypernode(
        "leaf-a",
        1,
        nodes=["n1"],
        hypernodes=["sub"],
        node_regex="gpu-a-.*",
        node_labels={"rack": "a"},
        tier_name="leaf",
    )
    spec = hypernode_to_spec(obj)
    assert (spec.name, spec.tier, spec.tier_name) == ("leaf-a", 1, "leaf")
    kinds = [(m.type, m.selector.exact, m.selector.regex, m.selector.labels) for m in spec.members]
    assert kinds == [
        (MEMBER_NODE, "n1", "", None),
        (MEMBER_HYPERNODE, "sub", "", None),
        (MEMBER_NODE, "", "gpu-a-.*", None),
        (MEMBER_NODE, "", "", LabelSelector((LabelRequirement("rack", IN, frozenset({"a"})),))),
    ]


def test_a_tier_written_as_digits_reads_as_the_number() -> None:
    obj = hypernode("s", 2)
    obj["spec"]["tier"] = "2"
    assert hypernode_to_spec(obj).tier == 2


def _bad(change: str) -> dict[str, Any]:
    obj = hypernode("s", 1, nodes=["n1"])
    member = obj["spec"]["members"][0]
    if change == "negative tier":
        obj["spec"]["tier"] = -1
    elif change == "tier not a number":
        obj["spec"]["tier"] = "one"
    elif change == "no spec":
        del obj["spec"]
    elif change == "unknown member type":
        member["type"] = "Rack"
    elif change == "two selectors":
        member["selector"]["regexMatch"] = {"pattern": "n.*"}
    elif change == "no selector":
        member["selector"] = {}
    elif change == "empty exact name":
        member["selector"]["exactMatch"] = {"name": ""}
    elif change == "members not a list":
        obj["spec"]["members"] = {"n1": "Node"}
    elif change == "bad label operator":
        member["selector"] = {
            "labelMatch": {"matchExpressions": [{"key": "k", "operator": "Near"}]}
        }
    return obj


@pytest.mark.parametrize(
    ("change", "names"),
    [
        ("negative tier", "spec.tier"),
        ("tier not a number", "spec.tier"),
        ("no spec", "spec is required"),
        ("unknown member type", "spec.members[0].type"),
        ("two selectors", "exactly one of exactMatch, regexMatch, labelMatch"),
        ("no selector", "exactly one of"),
        ("empty exact name", "exactMatch.name"),
        ("members not a list", "spec.members must be a list"),
        ("bad label operator", "labelMatch.matchExpressions[0].operator"),
    ],
)
def test_a_hypernode_the_schema_refuses_is_an_error_naming_the_object_and_field(
    change: str, names: str
) -> None:
    with pytest.raises(ValueError, match="HyperNode s") as raised:
        hypernode_to_spec(_bad(change))
    assert names in str(raised.value)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (None, None),
        ({}, NetworkTopologyRequest(TopologyMode.HARD)),
        ({"mode": "soft"}, NetworkTopologyRequest(TopologyMode.SOFT)),
        ({"mode": "hard", "highestTierAllowed": 2}, NetworkTopologyRequest(TopologyMode.HARD, 2)),
        ({"highestTierAllowed": 0}, NetworkTopologyRequest(TopologyMode.HARD, 0)),
        (
            {"mode": "soft", "highestTierName": "spine"},
            NetworkTopologyRequest(TopologyMode.SOFT, None, "spine"),
        ),
    ],
)
def test_a_well_formed_request_reads_as_volcano_defines_it(
    raw: Any, expected: NetworkTopologyRequest | None
) -> None:
    assert network_topology_request(raw) == expected


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (
            {"highestTierAllowed": 1, "highestTierName": "leaf"},
            "sets both highestTierAllowed and highestTierName",
        ),
        ({"mode": "strict"}, "mode 'strict' is not hard or soft"),
        ({"highestTierAllowed": -1}, "highestTierAllowed must be an integer ≥ 0"),
        ({"highestTierAllowed": "2"}, "highestTierAllowed must be an integer ≥ 0"),
        ({"highestTierAllowed": True}, "highestTierAllowed must be an integer ≥ 0"),
        ({"highestTierName": 3}, "highestTierName must be a string"),
        ("hard", "must be a mapping"),
    ],
)
def test_a_malformed_request_is_held_hard_with_its_sentence(raw: Any, problem: str) -> None:
    request = network_topology_request(raw)
    assert request is not None
    assert request.mode == TopologyMode.HARD
    assert problem in request.problem
    assert request.describe().startswith("malformed (")


def test_the_podgroup_carries_its_request_and_stays_readable_when_it_is_malformed() -> None:
    good = podgroup_to_info(with_network_topology(podgroup("g"), "soft", tier=2))
    assert good.network_topology == NetworkTopologyRequest(TopologyMode.SOFT, 2)
    bad = podgroup_to_info(with_network_topology(podgroup("g", 3), "hard", 1, "leaf"))
    assert bad.min_member == 3
    assert bad.network_topology is not None and bad.network_topology.problem
    assert podgroup_to_info(podgroup("g")).network_topology is None


def test_an_empty_label_match_and_one_on_a_hypernode_member_select_nothing() -> None:
    obj = hypernode("s", 2, node_labels={})
    obj["spec"]["members"].append(
        {"type": "HyperNode", "selector": {"labelMatch": {"matchLabels": {"tier": "leaf"}}}}
    )
    spec = hypernode_to_spec(obj)
    assert [m.selector for m in spec.members] == [MemberSelector(), MemberSelector()]
