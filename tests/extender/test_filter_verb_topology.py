"""filter places a topology gang's members in one network domain: the lowest tier that holds
every member not placed yet, the fullest such domain, kept for the gang while its assumption
lives; hard refuses every node when no domain holds the gang, soft falls back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.api.topology import NetworkTopologyRequest, TopologyMode
from scheduler_core.conf import DEFAULT_CONF
from scheduler_core.extender.filter_verb import filter_pod
from scheduler_core.framework.status import Code
from tests.builders import (
    SPINE_LEAF,
    accounting,
    leaf_of,
    native_podgroup,
    node,
    pod,
    podgroup,
    spine_leaf_cluster,
    spine_leaf_nodes,
    with_label_topology,
    with_network_topology,
)

LEVELS = SPINE_LEAF
NODES = [f"n{i}" for i in range(16)]
GANG = "ns/g"
HARD_LEAF = NetworkTopologyRequest(TopologyMode.HARD, highest_tier_allowed=1)
HARD_SPINE = NetworkTopologyRequest(TopologyMode.HARD, highest_tier_allowed=2)
SOFT_LEAF = NetworkTopologyRequest(TopologyMode.SOFT, highest_tier_allowed=1)


def member(i: int, cpu: str = "4") -> dict[str, Any]:
    return pod(f"g-{i}", cpu=cpu, group="g")


@dataclass
class Case:
    name: str
    busy: dict[str, str]
    gang: int
    request: NetworkTopologyRequest
    #: The nodes the first member passes (a domain's name, or "" for every node).
    passes: str
    #: How the other nodes fail (when they do).
    code: Code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    running: dict[str, str] = field(default_factory=dict)


CASES = [
    Case("one busy node in leaf a sends the gang to leaf b", {"n1": "2"}, 4, HARD_LEAF, "s/b"),
    Case(
        "the fullest leaf that holds the gang is chosen",
        {"n0": "1", "n4": "2", "n8": "1"},
        2,
        HARD_LEAF,
        "s/b",
    ),
    Case(
        "a gang no leaf holds goes to the lowest tier that holds it",
        {},
        6,
        HARD_SPINE,
        "s",
    ),
    Case(
        "a running member pins the gang to its leaf",
        {},
        2,
        HARD_LEAF,
        "t/c",
        running={"g-run": "n9"},
    ),
    Case(
        "soft prefers a domain and leaves the others to preemption",
        {"n1": "2"},
        4,
        SOFT_LEAF,
        "s/b",
        Code.UNSCHEDULABLE,
    ),
    Case("soft with no domain falls back to every node", {}, 6, SOFT_LEAF, ""),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_member_passes_only_the_chosen_domain(case: Case) -> None:
    acct, _ = accounting(spine_leaf_cluster(case.busy, case.gang, running=case.running))
    with_label_topology(acct, LEVELS, {GANG: case.request})
    result = filter_pod(acct, member(0), NODES)
    wanted = spine_leaf_nodes(case.passes) if case.passes else set(NODES)
    assert set(result.passed) == wanted
    assert set(result.failed) == set(NODES) - wanted
    for status in result.failed.values():
        assert status.code is case.code
        assert status.reason_code == "topology-outside-domain"
        assert status.message == f"outside network domain {case.passes} of gang ns/g"
    assert acct.assumed


def test_hard_with_no_domain_fails_every_node_names_the_best_and_places_no_member() -> None:
    acct, _ = accounting(spine_leaf_cluster({"n1": "2", "n5": "2", "n9": "2", "n13": "2"}, 4))
    with_label_topology(acct, LEVELS, {GANG: HARD_LEAF})
    for i in range(4):
        result = filter_pod(acct, member(i), NODES)
        assert result.passed == []
        assert set(result.failed) == set(NODES)
        status = result.failed["n0"]
        assert status.reason_code == "topology-no-domain"
        # evictions inside one leaf could make room: preemption is worth asking
        assert status.code is Code.UNSCHEDULABLE
        assert status.message == (
            "gang ns/g asks for one network domain (hard, tier ≤ 1): needs 4 pods "
            "(cpu 16, memory 4Gi) within one tier-1 domain; the most any tier-1 domain "
            "holds is 3 (s/a)"
        )
    assert acct.assumed == {}
    assert {p.key for p in acct.parked} == {f"ns/g-{i}" for i in range(4)}


def test_a_tier_name_the_tree_lacks_fails_every_node_as_unresolvable() -> None:
    acct, _ = accounting(spine_leaf_cluster({}, 2))
    asks = NetworkTopologyRequest(TopologyMode.HARD, highest_tier_name="rack")
    with_label_topology(acct, LEVELS, {GANG: asks})
    status = filter_pod(acct, member(0), NODES).failed["n0"]
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert "'rack' is not a tier of the topology" in status.message


def test_every_member_follows_the_first_members_choice_without_choosing_again() -> None:
    acct, _ = accounting(spine_leaf_cluster({"n1": "2"}, 4))
    with_label_topology(acct, LEVELS, {GANG: HARD_LEAF})
    passed = [set(filter_pod(acct, member(i), NODES).passed) for i in range(4)]
    assert all(p == spine_leaf_nodes("s/b") for p in passed)
    assert acct.domains.made == 1
    assert len(acct.assumed) == 4


def test_the_choice_outlives_a_cluster_change_while_the_gang_is_assumed() -> None:
    acct, clock = accounting(spine_leaf_cluster({"n1": "2"}, 4), ttl=30.0)
    with_label_topology(acct, LEVELS, {GANG: HARD_LEAF})
    assert set(filter_pod(acct, member(0), NODES).passed) == spine_leaf_nodes("s/b")
    clock.now += 20
    # leaf b fills up meanwhile; the gang's first member is still assumed there
    acct.state.upsert("Pod", pod("busy-n4", cpu="1", node_name="n4"))
    assert set(filter_pod(acct, member(1), NODES).passed) == spine_leaf_nodes("s/b")
    clock.now += 20  # 40 s after the choice, 20 s after member 1's assumption: still held
    assert set(filter_pod(acct, member(2), NODES).passed) == spine_leaf_nodes("s/b")
    assert acct.domains.made == 1


def test_the_choice_expires_with_the_gangs_assumption_and_is_made_again() -> None:
    acct, clock = accounting(spine_leaf_cluster({"n1": "2"}, 4), ttl=30.0)
    with_label_topology(acct, LEVELS, {GANG: HARD_LEAF})
    assert set(filter_pod(acct, member(0), NODES).passed) == spine_leaf_nodes("s/b")
    acct.state.upsert("Pod", pod("busy-n4", cpu="3", node_name="n4"))
    acct.state.delete("Pod", "ns/busy-n1")
    clock.now += 31  # member 0 was never bound: its assumption and the choice are gone
    assert set(filter_pod(acct, member(1), NODES).passed) == spine_leaf_nodes("s/a")
    assert acct.domains.made == 2


def test_a_new_tree_makes_the_choice_again_at_once() -> None:
    acct, _ = accounting(spine_leaf_cluster({"n1": "2"}, 4))
    with_label_topology(acct, LEVELS, {GANG: HARD_LEAF})
    assert set(filter_pod(acct, member(0), NODES).passed) == spine_leaf_nodes("s/b")
    # n7 moves to a leaf of its own: leaf b holds only 3 members now, as does leaf a
    moved = node("n7", cpu="4", labels={"spine": "s", "leaf": "e"})
    acct.state.upsert("Node", moved)
    result = filter_pod(acct, member(1), NODES)
    assert acct.domains.made == 2
    assert set(result.passed) == spine_leaf_nodes("t/c")


def test_a_refusal_is_judged_again_when_the_cluster_changes() -> None:
    acct, _ = accounting(spine_leaf_cluster({"n1": "2", "n5": "2", "n9": "2", "n13": "2"}, 4))
    with_label_topology(acct, LEVELS, {GANG: HARD_LEAF})
    assert filter_pod(acct, member(0), NODES).passed == []
    acct.state.delete("Pod", "ns/busy-n13")
    assert set(filter_pod(acct, member(0), NODES).passed) == spine_leaf_nodes("t/d")


def test_a_pod_whose_gang_asks_nothing_passes_every_node() -> None:
    acct, _ = accounting(spine_leaf_cluster({"n1": "2"}, 4))
    with_label_topology(acct, LEVELS, {})
    assert filter_pod(acct, member(0), NODES).passed == NODES
    assert acct.domains.made == 0


# --- properties ---------------------------------------------------------------------------


@st.composite
def clusters(draw: st.DrawFn) -> tuple[dict[str, str], int, int, NetworkTopologyRequest]:
    busy = draw(
        st.dictionaries(st.sampled_from(NODES), st.sampled_from(["1", "2", "3", "4"]), max_size=10)
    )
    gang = draw(st.integers(min_value=2, max_value=9))
    cpu = draw(st.sampled_from([1, 2, 4]))
    tier = draw(st.sampled_from([1, 2]))
    mode = draw(st.sampled_from(list(TopologyMode)))
    return busy, gang, cpu, NetworkTopologyRequest(mode, highest_tier_allowed=tier)


def domains_at(tier: int) -> list[str]:
    return ["s/a", "s/b", "t/c", "t/d"] if tier == 1 else ["s", "t"]


def holds(domain: str, busy: dict[str, str], cpu: int) -> int:
    """How many members of ``cpu`` the domain's nodes hold, node by node (the oracle)."""
    return sum((4 - int(busy.get(n, "0"))) // cpu for n in spine_leaf_nodes(domain))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_a_hard_gang_never_gets_a_node_outside_its_domain(
    drawn: tuple[dict[str, str], int, int, NetworkTopologyRequest],
) -> None:
    busy, gang, cpu, request = drawn
    acct, _ = accounting(spine_leaf_cluster(busy, gang, cpu=str(cpu)))
    hard = NetworkTopologyRequest(TopologyMode.HARD, request.highest_tier_allowed)
    with_label_topology(acct, LEVELS, {GANG: hard})
    used: set[str] = set()
    for i in range(gang):
        used |= set(filter_pod(acct, member(i, str(cpu)), NODES).passed)
    allowed = [d for t in (1, 2) if t <= (hard.highest_tier_allowed or 0) for d in domains_at(t)]
    if used:
        assert any(used <= spine_leaf_nodes(d) for d in allowed)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_a_domain_is_chosen_whenever_one_of_an_allowed_tier_holds_the_whole_gang(
    drawn: tuple[dict[str, str], int, int, NetworkTopologyRequest],
) -> None:
    busy, gang, cpu, request = drawn
    acct, _ = accounting(spine_leaf_cluster(busy, gang, cpu=str(cpu)))
    with_label_topology(acct, LEVELS, {GANG: request})
    passed = set(filter_pod(acct, member(0, str(cpu)), NODES).passed)
    tiers = [t for t in (1, 2) if t <= (request.highest_tier_allowed or 0)]
    fitting = [d for t in tiers for d in domains_at(t) if holds(d, busy, cpu) >= gang]
    if fitting:
        lowest = min(1 if "/" in d else 2 for d in fitting)
        # one domain of the lowest tier that holds the gang, and only its nodes
        assert any(
            passed == spine_leaf_nodes(d) for d in fitting if (1 if "/" in d else 2) == lowest
        )


def test_a_node_the_cache_lacks_fails_outside_the_domain_and_a_repeat_passes_as_offered() -> None:
    acct, _ = accounting(spine_leaf_cluster({"n1": "2"}, 4))
    with_label_topology(acct, LEVELS, {GANG: HARD_LEAF})
    offered = [*NODES, "n4", "ghost"]
    result = filter_pod(acct, member(0), offered)
    assert result.passed == ["n4", "n5", "n6", "n7", "n4"]
    assert result.failed["ghost"].reason_code == "topology-outside-domain"
    assert set(result.failed) == set(NODES) - spine_leaf_nodes("s/b") | {"ghost"}


def test_a_podgroups_own_request_and_the_confs_label_levels_place_the_gang() -> None:
    # the cache's own conversion: spec.networkTopology and networkTopology.labelLevels
    objects = [
        o
        for o in spine_leaf_cluster({"n1": "2"}, 4)
        if not (o["kind"] == "PodGroup" and o["metadata"]["name"] == "g")
    ]
    objects.append(with_network_topology(podgroup("g", 4, phase="Inqueue"), "hard", tier=1))
    conf = DEFAULT_CONF + "networkTopology:\n  labelLevels: [spine, leaf]\n"
    acct, _ = accounting(objects, conf)
    assert set(filter_pod(acct, member(0), NODES).passed) == spine_leaf_nodes("s/b")


# --- a Kubernetes PodGroup's schedulingConstraints -------------------------------------------

LEVELS_CONF = "networkTopology: {labelLevels: [spine, leaf]}\n" + DEFAULT_CONF


def native_gang(key: str) -> list[dict[str, Any]]:
    """The 16 spine/leaf nodes, one busy node in leaf s/a, and a native gang of 4 four-CPU
    members whose PodGroup asks its members to share one domain of ``key``."""
    objects = [o for o in spine_leaf_cluster({"n1": "2"}, 0) if o["kind"] != "PodGroup"]
    objects.append(native_podgroup("k", 4, topology=[key]))
    objects += [pod(f"k-{i}", cpu="4", scheduling_group="k") for i in range(4)]
    return objects


def test_a_native_gangs_topology_key_naming_a_level_lands_it_in_one_domain_of_that_level() -> None:
    acct, _ = accounting(native_gang("leaf"), LEVELS_CONF)
    result = filter_pod(acct, native_gang("leaf")[-1], NODES)
    leaf = {n for n in NODES if leaf_of(int(n[1:])) == leaf_of(4)}
    assert set(result.passed) == leaf
    assert all(s.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE for s in result.failed.values())


def test_a_native_gangs_topology_key_the_tree_lacks_leaves_it_to_kube_scheduler() -> None:
    acct, _ = accounting(native_gang("topology.kubernetes.io/zone"), LEVELS_CONF)
    result = filter_pod(acct, native_gang("topology.kubernetes.io/zone")[-1], NODES)
    assert set(result.passed) == set(NODES)
