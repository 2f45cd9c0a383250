"""The hard predicate verdicts kept per constraints signature move the helper's rotation
exactly as the walk they stand for."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.actions.util.predicate_helper import HardVerdicts, PredicateHelper
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.status import Code, Status
from tests.builders import task


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 400).flatmap(
        lambda total: st.tuples(
            st.just(total),
            st.sets(st.integers(0, max(total - 1, 0))),
            st.integers(0, 1000),
            st.sampled_from([0, 10, 50, 100]),
        )
    )
)
def test_advance_moves_the_rotation_as_walk_indices_does(
    drawn: tuple[int, set[int], int, int],
) -> None:
    total, failing, last_index, percentage = drawn
    nodes = [NodeInfo.new(f"n{i:03d}", Resource(1000, 0, {"pods": 110})) for i in range(total)]
    names = {f"n{i:03d}" for i in failing}

    def predicate(t: TaskInfo, n: NodeInfo) -> Status | None:
        if n.name in names:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["no"], task=t.key, node=n.name)
        return None

    verdicts = HardVerdicts(nodes, predicate)
    walked, moved = PredicateHelper(), PredicateHelper()
    for helper in (walked, moved):
        helper._last_index = last_index
        helper.percentage_of_nodes_to_find = percentage
    for _ in range(3):  # and again from where each left off
        verdicts.walk_indices(walked, task("p"))
        verdicts.advance(moved, task("p"))
        assert moved._last_index == walked._last_index
