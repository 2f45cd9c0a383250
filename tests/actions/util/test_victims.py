"""The victim helpers the preempt and reclaim actions share: validation, ordering and the
predicate search over nodes."""

from __future__ import annotations

import pytest

from scheduler_core.actions.util.predicate_helper import (
    PredicateHelper,
    calculate_num_feasible_nodes_to_find,
)
from scheduler_core.actions.util.victims import sort_by_importance, validate_victims
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.status import Code, Status
from tests.builders import task


def test_validate_victims_counts_future_idle_and_every_victim() -> None:
    n = NodeInfo.new("n1", Resource(2000, 0, {"pods": 110}))
    running = task("r", 2000)
    n.add_task(running)
    assert validate_victims(task("p", 1000), n, []) is not None
    assert validate_victims(task("p", 1000), n, [running]) is None
    assert validate_victims(task("p", 3000), n, [running]) is not None
    empty = NodeInfo.new("n2", Resource(2000, 0, {"pods": 110}))
    assert validate_victims(task("p", 1000), empty, []) is None  # no victim needed


def test_sort_by_importance_is_priority_then_earliest_start() -> None:
    tasks = [
        task("late", priority=5, started="2024-01-01T12:00:00Z"),
        task("low", priority=1, started="2024-01-01T01:00:00Z"),
        task("early", priority=5, started="2024-01-01T08:00:00Z"),
    ]
    assert [t.name for t in sort_by_importance(tasks)] == ["early", "late", "low"]


@pytest.mark.parametrize(
    ("nodes", "percentage", "expected"),
    [
        (50, 0, 50),  # small clusters are searched whole
        (100, 0, 100),
        (1000, 0, 420),  # adaptive: 50 - 1000/125 = 42%
        (5000, 0, 500),  # 50 - 40 = 10%
        (10000, 0, 500),  # floor of 5%
        (1000, 100, 1000),
        (1000, 20, 200),
        (300, 10, 100),  # never below 100
    ],
)
def test_feasible_nodes_to_find(nodes: int, percentage: int, expected: int) -> None:
    assert calculate_num_feasible_nodes_to_find(nodes, percentage) == expected


def test_predicate_helper_caches_errors_per_job_role_and_rotates() -> None:
    nodes = [NodeInfo.new(f"n{i}", Resource(1000, 0, {"pods": 110})) for i in range(3)]
    calls: list[str] = []

    def predicate(t: TaskInfo, n: NodeInfo) -> Status | None:
        calls.append(n.name)
        if n.name == "n1":
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["no"], task=t.key, node=n.name)
        return None

    helper = PredicateHelper()
    found, errors = helper.predicate_nodes(task("a", role="worker"), nodes, predicate)
    assert [n.name for n in found] == ["n0", "n2"] and set(errors) == {"n1"}
    calls.clear()
    found, errors = helper.predicate_nodes(task("b", role="worker"), nodes, predicate)
    assert "n1" not in calls and set(errors) == {"n1"}  # same job and role: cached
    calls.clear()
    helper.predicate_nodes(task("c", role=""), nodes, predicate)
    helper.predicate_nodes(task("c", role=""), nodes, predicate)
    assert calls.count("n1") == 2  # no role: never cached

    # past the cut-off, the next call starts where the previous one stopped
    many = [NodeInfo.new(f"m{i:03d}", Resource(1000, 0, {"pods": 110})) for i in range(200)]
    helper = PredicateHelper()
    first, _ = helper.predicate_nodes(task("d"), many, lambda t, n: None)
    second, _ = helper.predicate_nodes(task("e"), many, lambda t, n: None)
    assert len(first) == 100 and first[0].name == "m000"
    assert second[0].name == "m100"
