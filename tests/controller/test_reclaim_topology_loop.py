"""The reclaim loop and a gang with a network topology request: victims in one domain, and
when no single domain could hold the gang even after reclaim, no eviction and a
``ReclaimCannotHelp`` event (kind topology) on each waiting member saying why."""

from __future__ import annotations

from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.framework.cannot_help import CANNOT_HELP_REASON
from tests.actions.test_reclaim_topology import LEAF_A, topology_snapshot, two_leaves
from tests.controller.test_reclaim_loop import Harness


def harness(q2_on: list[str]) -> Harness:
    h = Harness()
    h.objs = two_leaves(q2_on)

    def take() -> ClusterSnapshot:
        h.snapshot()  # the cache, as the harness keeps it
        return topology_snapshot(h.objs)

    h.take_snapshot = take
    return h


def test_no_domain_can_hold_the_gang_so_nothing_is_evicted_and_each_member_is_told() -> None:
    h = harness(["n0", "n1", "n2", "n4", "n5", "n6"])
    decision = h.loop.run_once()
    assert decision is not None and decision.evictions == []
    assert h.rest.posts == [] and h.reserved == []
    told = sorted((name, reason) for name, reason, _ in h.recorder.events)
    assert told == [(f"g-{i}", CANNOT_HELP_REASON) for i in range(4)]
    note = h.recorder.events[0][2]
    assert note.startswith(
        "no eviction can help this pod: no single domain can hold the gang even after reclaim"
    )
    assert "the most any tier-1 domain holds is 3 (s/a)" in note


def test_the_loop_evicts_in_the_one_leaf_that_then_holds_the_gang() -> None:
    h = harness(["n0", "n1", "n4", "n5", "n6", "n7"])
    decision = h.loop.run_once()
    assert decision is not None
    assert sorted(p.victim.name for p in decision.evictions) == ["b-n0", "b-n1"]
    assert {p.node for p in decision.evictions} <= LEAF_A
    assert all(reason != CANNOT_HELP_REASON for _, reason, _ in h.recorder.events)
