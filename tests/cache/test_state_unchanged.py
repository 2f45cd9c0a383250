"""Watch updates that change nothing the engine reads are dropped before conversion; any
other change is applied.

Kubelets rewrite their nodes' heartbeat stamps and controllers their pods' managedFields;
each such update used to cost a conversion and a new decision version (a rebuilt accounting
session). Only the server's version stamp, managedFields and a node condition's
lastHeartbeatTime are left out of the comparison, so a change of anything else is never
taken for an unchanged object.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.task import TaskInfo
from scheduler_core.cache import convert
from scheduler_core.cache import store as store_module
from scheduler_core.cache.state import ClusterState
from tests import builders as b
from tests.cache.test_state import summary

Path = tuple[str | int, ...]

UNREAD: set[Path] = {
    ("metadata", "resourceVersion"),
    ("metadata", "managedFields", 0, "manager"),
    ("status", "conditions", 0, "lastHeartbeatTime"),
}


def unread(path: Path) -> bool:
    return path in UNREAD or path[:2] == ("metadata", "managedFields")


def with_server_fields(obj: b.Obj, version: str) -> b.Obj:
    """``obj`` as the API server serves it: a resourceVersion and managedFields (and, on a
    node, heartbeat stamps on its conditions)."""
    obj = copy.deepcopy(obj)
    obj["metadata"]["resourceVersion"] = version
    obj["metadata"]["managedFields"] = [{"manager": f"kubelet-{version}", "operation": "Update"}]
    if obj["kind"] == "Node":
        for condition in obj["status"]["conditions"]:
            condition["lastHeartbeatTime"] = f"2026-12-06T00:00:{int(version) % 60:02d}Z"
    return obj


def full_pod() -> b.Obj:
    return b.pod(
        "p",
        node_name="n1",
        labels={"app": "a"},
        annotations={"note": "x"},
        tolerations=[{"key": "k", "operator": "Exists"}],
        node_selector={"zone": "z1"},
        priority=5,
        started="2026-12-06T00:00:00Z",
        created="2026-12-06T00:00:00Z",
    )


def full_node() -> b.Obj:
    return b.node(
        "n1",
        labels={"zone": "z1"},
        taints=[{"key": "t", "value": "v", "effect": "NoSchedule"}],
    )


def leaves(obj: Any, path: Path = ()) -> Iterator[Path]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from leaves(v, (*path, i))
    else:
        yield path


def changed(obj: b.Obj, path: Path) -> b.Obj:
    """``obj`` with the leaf at ``path`` given another value of its type."""
    obj = copy.deepcopy(obj)
    parent: Any = obj
    for step in path[:-1]:
        parent = parent[step]
    value = parent[path[-1]]
    if isinstance(value, bool):
        parent[path[-1]] = not value
    elif isinstance(value, int):
        parent[path[-1]] = value + 1
    else:
        parent[path[-1]] = f"{value}-changed"
    return obj


def set_at(obj: b.Obj, path: Path, value: Any) -> b.Obj:
    obj = copy.deepcopy(obj)
    parent: Any = obj
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return obj


def counts(state: ClusterState, kind: str) -> tuple[int, int, int]:
    return (
        state.events[(kind, "upsert")],
        state.events[(kind, "unchanged")],
        state.rejected[kind],
    )


def applied_state(*objects: b.Obj) -> ClusterState:
    state = ClusterState()
    state.upsert("Node", with_server_fields(b.node("n1"), "1"))
    for obj in objects:
        state.upsert(obj["kind"], obj)
    return state


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["Pod", "Node"]), st.data())
def test_an_update_of_any_field_the_engine_may_read_is_applied(
    kind: str, data: st.DataObject
) -> None:
    first = with_server_fields(full_pod() if kind == "Pod" else full_node(), "1")
    paths = [p for p in leaves(first) if not unread(p) and p != ("kind",)]
    path = data.draw(st.sampled_from(paths))
    state = applied_state(first)
    before = counts(state, kind)
    update = with_server_fields(changed(first, path), "2")
    state.upsert(kind, update)
    upserts, unchanged, rejected = counts(state, kind)
    assert unchanged == before[1], f"a change of {path} was dropped"
    assert upserts + rejected == before[0] + before[2] + 1


@pytest.mark.parametrize(
    ("kind", "update", "dropped"),
    [
        ("Node", lambda o: with_server_fields(o, "2"), True),
        ("Pod", lambda o: with_server_fields(o, "2"), True),
        (
            "Node",
            lambda o: with_server_fields(changed(o, ("status", "conditions", 0, "status")), "2"),
            False,
        ),
        (
            "Node",
            lambda o: with_server_fields(set_at(o, ("status", "allocatable", "cpu"), "8"), "2"),
            False,
        ),
        ("Pod", lambda o: with_server_fields(changed(o, ("spec", "nodeName")), "2"), False),
        ("Pod", lambda o: with_server_fields(changed(o, ("status", "phase")), "2"), False),
    ],
    ids=[
        "node heartbeat only",
        "pod resourceVersion and managedFields only",
        "node condition status",
        "node allocatable",
        "pod bound elsewhere",
        "pod phase",
    ],
)
def test_only_updates_that_change_nothing_read_are_dropped(
    kind: str, update: Any, dropped: bool
) -> None:
    first = with_server_fields(full_pod() if kind == "Pod" else full_node(), "1")
    state = applied_state(first)
    version = state.version
    state.upsert(kind, update(first))
    assert (state.version == version) is dropped
    assert (state.events[(kind, "unchanged")] == 1) is dropped


def test_a_dropped_pod_update_keeps_its_task_as_the_conversion_of_the_new_version() -> None:
    first = with_server_fields(full_pod(), "1")
    state = applied_state(first)
    second = with_server_fields(first, "2")
    state.upsert("Pod", second)
    with state.locked():
        assert state.cached_task(second) is not None


def test_a_pod_is_converted_again_after_its_priority_class_changed() -> None:
    first = with_server_fields(b.pod("p", priority_class="high"), "1")
    state = applied_state(b.priority_class("high", 10), first)
    state.upsert("PriorityClass", b.priority_class("high", 20))
    state.upsert("Pod", with_server_fields(first, "2"))
    assert state.events[("Pod", "unchanged")] == 0


def test_a_pod_deleted_and_created_again_alike_is_applied() -> None:
    first = with_server_fields(full_pod(), "1")
    state = applied_state(first)
    state.delete("Pod", "ns/p")
    state.upsert("Pod", with_server_fields(first, "3"))
    assert state.events[("Pod", "unchanged")] == 0
    assert state.events[("Pod", "upsert")] == 2


# --- a bind: only the node name and the status moved -----------------------------------------


@pytest.mark.parametrize(
    ("changes", "labels"),
    [
        ({"node_name": "n1"}, {}),  # kube-scheduler's bind
        ({"node_name": "n1", "phase": "Running", "started": "2026-01-01T00:00:00Z"}, {}),
        ({"unschedulable": True}, {}),  # its attempt failed
        ({"nominated": "n1"}, {}),
        ({"node_name": "n1"}, {"app": "b"}),  # and a label changed: converted afresh
    ],
)
def test_a_pod_that_moved_has_the_task_a_fresh_cache_gives_it(
    changes: dict[str, Any], labels: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []

    def spy(old: TaskInfo, pod: dict[str, Any]) -> TaskInfo:
        made.append(old.key)
        return convert.replaced_placement(old, pod)

    monkeypatch.setattr(store_module, "replaced_placement", spy)
    state = ClusterState()
    state.upsert("Node", b.node("n1"))
    before = with_server_fields(b.pod("p", priority=0, labels={"app": "a"}), "1")
    state.upsert("Pod", before)
    moved = b.pod("p", priority=0, labels=labels or {"app": "a"}, **changes)
    moved = with_server_fields(moved, "2")
    state.upsert("Pod", moved)
    assert made == ([] if labels else ["ns/p"])  # the last conversion reused only then
    fresh = ClusterState()
    fresh.upsert("Node", b.node("n1"))
    fresh.upsert("Pod", moved)
    task, expected = state.task("ns/p"), fresh.task("ns/p")
    assert task is not None and expected is not None
    assert task.resreq.to_quantities() == expected.resreq.to_quantities()
    assert replace(task, resreq=expected.resreq, init_resreq=expected.init_resreq) == expected
    assert state.events[("Pod", "upsert")] == 2
    with state.locked(), fresh.locked():
        assert summary(state.snapshot()) == summary(fresh.snapshot())
