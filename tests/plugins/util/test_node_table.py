"""The node table carried from one session to the next.

A session's table starts from an earlier table's arrays and re-reads only the nodes whose
stamp changed. These tests change the live cluster between two sessions in every way an
event can (a pod bound, a pod deleted, a node replaced with the same or other labels and
taints, a node added) and check that the carried table holds what the nodes hold, and that
both plugins' vector scores still equal their scalar reference to the float.
"""

from __future__ import annotations

import gc
import types

from scheduler_core.api.node import NodeInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.task import NodeSelectorRequirement, TaskInfo
from scheduler_core.cache.state import ClusterState
from scheduler_core.conf import load_configuration
from scheduler_core.framework.framework import close_session, open_session
from scheduler_core.framework.session import Session
from scheduler_core.plugins.util.node_table import NodeTable, intolerable_prefer_no_schedule
from tests.builders import node, pod
from tests.plugins.util.test_table_scoring import DEFAULT_TIERS, assert_same_as_scalar

GPU = "nvidia.com/gpu"
PREFER = {"key": "spot", "value": "", "effect": "PreferNoSchedule"}
AFFINITY = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 7,
                "preference": {
                    "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]
                },
            },
            {
                "weight": 3,
                "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]},
            },
        ]
    }
}


def cluster() -> ClusterState:
    state = ClusterState()
    for obj in [
        node("n1", "8", "16Gi", labels={"zone": "a"}, extra={GPU: "4"}),
        node("n2", "8", "16Gi", labels={"zone": "b"}, taints=[PREFER]),
        node("n3", "4", "8Gi", labels={"zone": "a", "disk": "ssd"}),
        node("n4", "16", "32Gi"),
        pod("run1", node_name="n1", cpu="2", memory="4Gi", extra={GPU: "1"}),
        pod("run2", node_name="n2", cpu="6", memory="2Gi"),
        pod("run3", node_name="n3", cpu="1", memory="1Gi"),
    ]:
        state.upsert(obj["kind"], obj)
    return state


def live_session(state: ClusterState) -> Session:
    """As the extender's accounting opens it: over the live nodes, read-only."""
    conf = load_configuration(DEFAULT_TIERS)
    return open_session(state.shared_snapshot(), conf, clone=False, read_only=True)


def probe_tasks(state: ClusterState) -> list[TaskInfo]:
    """Pods that read every column: cpu/memory, a GPU, preferred affinity, tolerations."""
    for obj in [
        pod("plain", cpu="1", memory="2Gi"),
        pod("gpu", cpu="2", memory="1Gi", extra={GPU: "1"}),
        pod("picky", cpu="1", memory="1Gi", affinity=AFFINITY),
        pod("tolerant", tolerations=[{"key": "spot", "operator": "Exists"}]),
    ]:
        state.upsert("Pod", obj)
    tasks = [state.task(f"ns/{name}") for name in ("plain", "gpu", "picky", "tolerant")]
    return [t for t in tasks if t is not None]


def read_everything(ssn: Session, tasks: list[TaskInfo]) -> NodeTable:
    table = NodeTable.of(ssn)
    nodes = list(ssn.nodes.values())
    for task in tasks:
        ssn.node_scores(task, nodes)
        table.prefer_no_schedule_counts(task)
    table.requirement_mask(NodeSelectorRequirement("zone", "In", ("a",)))
    return table


def assert_holds_the_nodes(ssn: Session, table: NodeTable, tasks: list[TaskInfo]) -> None:
    nodes = list(ssn.nodes.values())
    found = table.rows(nodes)
    assert found is not None
    rows, names = found
    assert names == [n.name for n in nodes]
    for resource in ("cpu", "memory", GPU):
        col = table.column(resource)
        for row, n in zip(rows.tolist(), nodes, strict=True):
            assert col.allocatable[row] == n.allocatable.get(resource)
            assert col.used[row] == n.used.get(resource)
            assert col.pipelined[row] == n.pipelined.get(resource)
    zone_a = table.requirement_mask(NodeSelectorRequirement("zone", "In", ("a",)))
    assert zone_a[rows].tolist() == [n.labels.get("zone") == "a" for n in nodes]
    for task in tasks:
        counts = table.prefer_no_schedule_counts(task)[rows].tolist()
        assert counts == [intolerable_prefer_no_schedule(task, n) for n in nodes]
        assert_same_as_scalar(ssn, task, nodes)


def test_a_table_carried_over_pod_events_holds_what_the_nodes_hold() -> None:
    state = cluster()
    tasks = probe_tasks(state)
    first = read_everything(live_session(state), tasks)

    state.upsert("Pod", pod("bound", node_name="n4", cpu="3", memory="3Gi", extra={GPU: "0"}))
    state.delete("Pod", "ns/run2")
    ssn = live_session(state)
    table = NodeTable.of(ssn)
    assert table is not first
    assert_holds_the_nodes(ssn, table, tasks)


def test_a_table_carried_over_node_updates_holds_what_the_nodes_hold() -> None:
    state = cluster()
    tasks = probe_tasks(state)
    read_everything(live_session(state), tasks)

    # n1 replaced by an equal node (a status heartbeat), n2 loses its taint and moves zone,
    # n3 gets more memory and loses its disk label.
    state.upsert("Node", node("n1", "8", "16Gi", labels={"zone": "a"}, extra={GPU: "4"}))
    state.upsert("Node", node("n2", "8", "16Gi", labels={"zone": "a"}))
    state.upsert("Node", node("n3", "4", "16Gi", labels={"zone": "a"}))
    ssn = live_session(state)
    assert_holds_the_nodes(ssn, NodeTable.of(ssn), tasks)


def test_a_changed_node_set_builds_afresh() -> None:
    state = cluster()
    tasks = probe_tasks(state)
    read_everything(live_session(state), tasks)

    state.upsert("Node", node("n5", "2", "4Gi", taints=[PREFER]))
    state.delete("Node", "n4")
    ssn = live_session(state)
    assert_holds_the_nodes(ssn, NodeTable.of(ssn), tasks)


def test_a_table_over_copied_nodes_leaves_the_live_lineage_intact() -> None:
    """A one-off session over copies (a what-if) reads its own nodes, and the next live
    session still starts from the live table, not from the copies."""
    state = cluster()
    tasks = probe_tasks(state)
    read_everything(live_session(state), tasks)
    copies = {name: n.copy_sharing_tasks() for name, n in state.nodes_view().items()}
    copies["n4"].add_task(tasks[0].clone())
    conf = load_configuration(DEFAULT_TIERS)
    snapshot = state.shared_snapshot()
    snapshot.nodes = copies
    what_if = open_session(snapshot, conf, clone=False, read_only=True)
    assert_holds_the_nodes(what_if, read_everything(what_if, tasks), tasks)

    state.upsert("Pod", pod("bound", node_name="n3", cpu="1", memory="1Gi"))
    ssn = live_session(state)
    assert_holds_the_nodes(ssn, NodeTable.of(ssn), tasks)


def test_a_node_gets_a_new_stamp_whenever_its_tasks_change() -> None:
    n = NodeInfo.new("n", Resource(4000.0, 2.0**33))
    task = TaskInfo("u", "p", "ns", "ns/p", Resource(1000.0, 2.0**30), Resource(1000.0, 2.0**30))
    stamps = [n.stamp]
    n.add_task(task)
    stamps.append(n.stamp)
    n.remove_task(task)
    stamps.append(n.stamp)
    stamps.append(n.copy_sharing_tasks().stamp)
    assert len(set(stamps)) == len(stamps)


def test_a_closed_sessions_table_keeps_no_node_alive_and_still_seeds_the_next() -> None:
    state = cluster()
    tasks = probe_tasks(state)
    conf = load_configuration(DEFAULT_TIERS)
    snapshot = state.shared_snapshot()
    snapshot.nodes = {name: n.copy_sharing_tasks() for name, n in state.nodes_view().items()}
    copy = snapshot.nodes["n1"]
    what_if = open_session(snapshot, conf, clone=False, read_only=True)
    table = read_everything(what_if, tasks)
    candidates = list(what_if.nodes.values())
    close_session(what_if)
    assert table.rows(candidates) is None  # a closed session's table answers nothing
    del what_if, snapshot, candidates
    gc.collect()
    holders = [r for r in gc.get_referrers(copy) if not isinstance(r, types.FrameType)]
    assert holders == []

    ssn = live_session(state)
    assert_holds_the_nodes(ssn, NodeTable.of(ssn), tasks)


def test_a_row_read_again_beyond_the_exact_limit_makes_its_column_inexact() -> None:
    nodes = {f"n{i}": NodeInfo.new(f"n{i}", Resource(8000, 2**34)) for i in range(3)}
    table = NodeTable(nodes)
    for name in ("cpu", "memory"):
        assert table.column(name).exact
    nodes["n1"].used = Resource(1000, 2**60)  # memory beyond EXACT_LIMIT (2**50)
    table.nodes_changed(["n1"])
    assert table.column("cpu").exact
    assert not table.column("memory").exact
    nodes["n1"].used = Resource(1000, 2**30)
    table.nodes_changed(["n1"])
    assert not table.column("memory").exact  # once inexact, until the table is read anew
