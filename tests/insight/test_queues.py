"""Queue views: a parent queue's branch is summed for reading."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(min_value=-1, max_value=5), st.integers(min_value=0, max_value=3)),
        min_size=1,
        max_size=6,
    )
)
def test_a_branch_holds_the_sum_of_what_its_queues_hold(spec: list[tuple[int, int]]) -> None:
    """Queue i's parent is an earlier queue (or none), each holds some CPU: every summed
    branch equals the CPU of the queue and all queues below it."""
    objects: list[dict[str, object]] = [node("n1", cpu="64", memory="256Gi")]
    parents: dict[str, str] = {}
    for i, (parent, cpu) in enumerate(spec):
        name = f"q{i}"
        parents[name] = f"q{parent}" if 0 <= parent < i else ""
        objects.append(queue(name, parent=parents[name]))
        if cpu:
            objects += [
                podgroup(f"j{i}", 1, queue=name),
                pod(f"p{i}", group=f"j{i}", cpu=str(cpu), node_name="n1"),
            ]
    acct, _ = accounting(objects)
    held = {f"q{i}": float(cpu) for i, (_, cpu) in enumerate(spec)}

    def below(name: str) -> set[str]:
        kids = {q for q, p in parents.items() if p == name}
        return kids.union(*(below(k) for k in kids))

    branches = held_with_children(queue_views(acct))
    assert set(branches) == {q for q in parents if below(q)}
    for name, summed in branches.items():
        assert summed["cpu"] == sum(held[q] for q in below(name) | {name})
