"""ClusterState feeds the network topology: built lazily from HyperNodes or label levels,
refused whole with its reasons while the last good tree keeps serving."""

from __future__ import annotations

import pytest

from scheduler_core.api.topology import EMPTY_TOPOLOGY, NetworkTopologyRequest, TopologyMode
from scheduler_core.cache.builder import build_checked_snapshot
from scheduler_core.cache.state import HYPERNODE, ClusterState
from scheduler_core.cache.yaml_source import load_cluster_text
from tests.builders import hypernode, node, podgroup, queue, with_network_topology

LEVELS = ("topology/spine", "topology/leaf")


def two_leaves() -> ClusterState:
    """n1..n4: leaf-a holds n1, n2 (by name), leaf-b n3, n4 (by regex and by label);
    spine holds both leaves."""
    state = ClusterState()
    for i in range(1, 5):
        state.upsert("Node", node(f"n{i}", labels={"rack": "b"} if i == 4 else {}))
    state.upsert(HYPERNODE, hypernode("leaf-a", 1, nodes=["n1", "n2"]))
    state.upsert(HYPERNODE, hypernode("leaf-b", 1, node_regex="n3", node_labels={"rack": "b"}))
    state.upsert(HYPERNODE, hypernode("spine", 2, hypernodes=["leaf-a", "leaf-b"]))
    return state


def domains(state: ClusterState) -> dict[str, tuple[int, list[str]]]:
    tree = state.snapshot().topology
    return {name: (d.tier, sorted(d.nodes)) for name, d in tree.domains.items()}


def test_hypernodes_of_every_selector_kind_build_the_snapshots_tree() -> None:
    state = two_leaves()
    assert domains(state) == {
        "leaf-a": (1, ["n1", "n2"]),
        "leaf-b": (1, ["n3", "n4"]),
        "spine": (2, ["n1", "n2", "n3", "n4"]),
    }
    assert state.snapshot().topology.source == "hypernodes"


def test_without_hypernodes_or_levels_the_tree_is_empty() -> None:
    state = ClusterState()
    state.upsert("Node", node("n1"))
    assert state.snapshot().topology is EMPTY_TOPOLOGY
    assert state.topology_status().source == "none"


def test_label_levels_build_the_tree_from_node_labels_and_hypernodes_are_not_used() -> None:
    state = two_leaves()
    state.upsert("Node", node("n1", labels={"topology/spine": "s1", "topology/leaf": "l1"}))
    state.set_topology_levels(LEVELS)
    tree = state.snapshot().topology
    assert tree.source == "labels"
    assert {name: sorted(d.nodes) for name, d in tree.domains.items()} == {
        "s1": ["n1"],
        "s1/l1": ["n1"],
    }
    state.set_topology_levels(())
    assert state.snapshot().topology.source == "hypernodes"


def test_a_node_heartbeat_does_not_rebuild_the_tree_but_a_label_change_does() -> None:
    state = two_leaves()
    first = state.topology()
    builds = state.topology_status().builds
    state.upsert("Node", node("n1"))  # same labels: a heartbeat
    assert state.topology() is first
    assert state.topology_status().builds == builds
    state.upsert("Node", node("n1", labels={"zone": "z1"}))
    assert state.topology() is first  # rebuilt, the same tree: its identity is kept
    assert state.topology_status().builds == builds + 1
    state.upsert("Node", node("n3", labels={"rack": "b"}))  # leaf-b by regex and by label
    assert state.topology() is first
    state.upsert("Node", node("n1", labels={"rack": "b"}))  # now in leaf-a and leaf-b
    assert state.topology() is first and state.topology_status().refusal is not None
    state.upsert("Node", node("n1"))
    state.upsert("Node", node("n5", labels={"rack": "b"}))
    changed = state.topology()
    assert changed is not first and "n5" in changed.domains["leaf-b"].nodes


def test_many_changes_build_the_tree_once_on_the_next_read() -> None:
    state = two_leaves()
    state.topology()
    builds = state.topology_status().builds
    for i in range(5, 25):
        state.upsert("Node", node(f"n{i}"))
    state.upsert(HYPERNODE, hypernode("leaf-c", 1, node_regex="n1[0-9]"))
    assert state.topology_status().builds == builds + 1
    assert sorted(state.topology().domains["leaf-c"].nodes) == [f"n{i}" for i in range(10, 20)]


def test_a_pattern_selects_the_names_it_matches_anywhere_as_volcano_does() -> None:
    state = ClusterState()
    for name in ("gpu-a-1", "xgpu-a-2", "gpu-b-1"):
        state.upsert("Node", node(name))
    state.upsert(HYPERNODE, hypernode("loose", 1, node_regex="gpu-a"))
    state.upsert(HYPERNODE, hypernode("anchored", 2, node_regex="^gpu-[ab]-1$"))
    assert domains(state) == {
        "loose": (1, ["gpu-a-1", "xgpu-a-2"]),
        "anchored": (2, ["gpu-a-1", "gpu-b-1"]),
    }
    state.upsert("Node", node("gpu-a-3"))  # a node joining is matched against every pattern
    assert domains(state)["loose"] == (1, ["gpu-a-1", "gpu-a-3", "xgpu-a-2"])


def test_a_node_added_or_removed_changes_the_domains_it_belongs_to() -> None:
    state = two_leaves()
    state.upsert("Node", node("n5", labels={"rack": "b"}))
    assert "n5" in state.topology().domains["leaf-b"].nodes
    state.delete("Node", "n5")
    assert "n5" not in state.topology().domains["leaf-b"].nodes


def test_a_hypernode_that_refers_to_itself_is_refused_and_the_last_tree_keeps_serving() -> None:
    state = two_leaves()
    good = state.topology()
    state.upsert(HYPERNODE, hypernode("spine", 2, hypernodes=["leaf-a", "leaf-b", "spine"]))
    assert state.snapshot().topology is good
    refusal = state.topology_status().refusal
    assert refusal is not None
    assert refusal.problems == {"spine": "cycle: spine → spine"}
    assert state.take_topology_refusals() == {"spine": "cycle: spine → spine"}
    assert state.take_topology_refusals() == {}  # reported once
    state.upsert(HYPERNODE, hypernode("spine", 2, hypernodes=["leaf-a"]))
    assert state.topology_status().refusal is None
    assert state.snapshot().topology is not good


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (hypernode("leaf-x", 1, hypernodes=["nowhere"]), "does not exist"),
        (hypernode("leaf-x", 1, node_regex="n[1"), "does not compile"),
        (hypernode("leaf-x", 1, nodes=["n1"]), "node n1 is in two domains of tier 1"),
        (hypernode("leaf-x", 3, hypernodes=["spine"]), ""),
        (hypernode("leaf-x", 2, hypernodes=["leaf-a"]), "member of two HyperNodes"),
    ],
)
def test_each_bad_tree_is_refused_with_its_reason(bad: dict[str, object], problem: str) -> None:
    state = two_leaves()
    good = state.topology()
    state.upsert(HYPERNODE, bad)
    refusal = state.topology_status().refusal
    if not problem:  # a wider parent is fine
        assert refusal is None
        return
    assert refusal is not None and problem in refusal.describe()
    assert state.topology() is good


def test_a_member_whose_tier_is_not_lower_than_its_parents_is_refused() -> None:
    state = two_leaves()
    state.upsert(HYPERNODE, hypernode("spine", 1, hypernodes=["leaf-a", "leaf-b"]))
    refusal = state.topology_status().refusal
    assert refusal is not None
    assert "is not lower than its parent spine's tier 1" in refusal.describe()


def test_an_unreadable_hypernode_refuses_the_tree_with_its_sentence() -> None:
    state = two_leaves()
    good = state.topology()
    broken = hypernode("leaf-b", 1, nodes=["n3"])
    broken["spec"]["members"][0]["type"] = "Rack"
    state.upsert(HYPERNODE, broken)
    refusal = state.topology_status().refusal
    assert refusal is not None
    assert "spec.members[0].type must be Node or HyperNode" in refusal.problems["leaf-b"]
    assert state.topology() is good
    state.delete(HYPERNODE, "leaf-b")
    state.delete(HYPERNODE, "spine")
    assert state.topology_status().refusal is None
    assert sorted(state.topology().domains) == ["leaf-a"]


def test_a_fork_serves_the_same_tree_and_follows_its_own_changes() -> None:
    state = two_leaves()
    tree = state.topology()
    fork = state.fork()
    assert fork.topology() is tree
    fork.delete(HYPERNODE, "spine")
    assert "spine" not in fork.topology().domains
    assert "spine" in state.topology().domains


def test_the_podgroups_request_reaches_its_job_and_a_changed_request_is_structural() -> None:
    state = ClusterState()
    state.upsert("Queue", queue("q"))
    state.upsert("PodGroup", podgroup("g", queue="q"))
    assert state.snapshot().jobs["ns/g"].network_topology is None
    before = state.changes.version
    state.upsert("PodGroup", with_network_topology(podgroup("g", queue="q"), "soft", tier=1))
    job = state.snapshot().jobs["ns/g"]
    assert job.network_topology == NetworkTopologyRequest(TopologyMode.SOFT, 1)
    assert state.changes.since(before) is None  # not a sums-only change


def test_a_cluster_file_feeds_hypernodes_and_reports_a_refused_tree() -> None:
    text = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi}}
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: leaf-a}
spec:
  tier: 1
  members:
  - type: Node
    selector: {exactMatch: {name: n1}}
"""
    loaded = load_cluster_text(text)
    snapshot, refusal = build_checked_snapshot(loaded.objects)
    assert refusal is None
    assert sorted(snapshot.topology.domains["leaf-a"].nodes) == ["n1"]
    looped = load_cluster_text(
        text.replace(
            "type: Node\n    selector: {exactMatch: {name: n1}}",
            "type: HyperNode\n    selector: {exactMatch: {name: leaf-a}}",
        )
    )
    snapshot, refusal = build_checked_snapshot(looped.objects)
    assert refusal is not None and "cycle" in refusal.describe()
    assert snapshot.topology.empty
