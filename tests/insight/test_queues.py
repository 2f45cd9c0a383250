"""Queue views: a parent queue's branch is summed for reading."""

from __future__ import annotations

import pytest

from scheduler_core.insight.queues import held_with_children, queue_views
from tests.builders import accounting, node, pod, podgroup, queue


def tree() -> list[dict[str, object]]:
    return [
        node("n1", cpu="16", memory="64Gi"),
        queue("root"),
        queue("mid", parent="root"),
        queue("leaf", parent="mid"),
        queue("alone"),
        podgroup("m", 1, queue="mid"),
        pod("m0", group="m", cpu="1", memory="1Gi", node_name="n1"),
        podgroup("l", 1, queue="leaf"),
        pod("l0", group="l", cpu="2", memory="128Mi", node_name="n1"),
        podgroup("a", 1, queue="alone"),
        pod("a0", group="a", cpu="4", node_name="n1"),
    ]


@pytest.mark.parametrize(
    ("name", "cpu", "memory"),
    [("root", 3.0, 2**30 + 128 * 2**20), ("mid", 3.0, 2**30 + 128 * 2**20)],
)
def test_a_parent_holds_what_its_whole_branch_holds(name: str, cpu: float, memory: float) -> None:
    acct, _ = accounting(tree())
    branches = held_with_children(queue_views(acct))
    assert branches[name]["cpu"] == cpu
    assert branches[name]["memory"] == memory


def test_only_queues_with_children_are_summed() -> None:
    acct, _ = accounting(tree())
    assert set(held_with_children(queue_views(acct))) == {"root", "mid"}


def test_a_cycle_of_parents_is_summed_once() -> None:
    acct, _ = accounting(tree())
    views = queue_views(acct)
    by = {v.name: v for v in views}
    by["leaf"].children = ["root"]  # as a Queue naming its own ancestor as parent would
    branches = held_with_children(views)
    assert branches["root"]["cpu"] == 3.0
