"""The standing-backlog cluster is what its rows claim: full nodes, four queues at their
deserved share, every waiting pod unschedulable, and a cycle that decides nothing."""

from __future__ import annotations

from bench import Budget, backlog_bench
from scheduler_core.conf import default_configuration
from scheduler_core.controller.decision import decide, live_configuration
from scheduler_core.controller.snapshot import loop_snapshot


def test_the_backlog_cluster_is_full_fair_and_decides_nothing() -> None:
    state = backlog_bench.build(nodes=8, waiting=24)
    snapshot = loop_snapshot(state)
    assert all(node.future_idle().milli_cpu == 0 for node in snapshot.nodes.values())
    waiting = [t for j in snapshot.jobs.values() for t in j.tasks.values() if not t.node_name]
    assert len(waiting) == 24 and all(t.unschedulable for t in waiting)
    with state.locked():
        assert state.any_unschedulable()  # the loop's gate is open
    decision = decide(snapshot, live_configuration(default_configuration()))
    assert decision.evictions == []
    shares = {name: share for name, share in decision.shares.items() if name.startswith("q")}
    assert len(shares) == backlog_bench.QUEUES
    for share in shares.values():
        assert share is not None
        assert share.allocated.milli_cpu == share.deserved.milli_cpu  # at, not above, its share


def test_a_backlog_row_reports_each_action() -> None:
    [row] = backlog_bench.run(
        {"reclaim-backlog-1000"},
        {"reclaim-backlog-1000": Budget(n=1, seconds=60, warmup=0)},
    )
    assert row.error is None
    assert row.extra["evictions"] == 0
    assert {"snapshot_ms", "enqueue_ms", "preempt_ms", "reclaim_ms"} <= set(row.extra)
