"""The row beside the reclaim loop measures what it claims: the same filter calls with no
cycle, beside cycles decided in a forked child, and beside cycles on a thread, each call
with a cycle running beside it."""

from __future__ import annotations

from bench import Budget, beside_reclaim_bench


def test_the_row_measures_the_calls_beside_cycles_in_a_child_and_on_a_thread() -> None:
    row = beside_reclaim_bench.bench_beside(
        Budget(n=1, seconds=60, warmup=0), verbs_row="verbs-engine-200", backlog=(8, 24)
    )
    assert row.error is None and len(row.samples) == 1
    assert {"quiet_p50_ms", "forked_p50_ms", "thread_p50_ms"} <= set(row.extra)
    assert row.extra["forked_cycles"] >= 1 and row.extra["thread_cycles"] >= 1
    assert row.target == round(row.extra["quiet_p50_ms"] * beside_reclaim_bench.ALLOWED_SLOWDOWN, 3)
