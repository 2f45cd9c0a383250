"""The topology row chooses a domain for its gang and reports the cold first choice."""

from __future__ import annotations

from bench import Budget, topology_bench


def test_the_row_chooses_a_block_for_the_sixteen_pod_gang() -> None:
    [row] = topology_bench.run({"topology-choose-1000"}, {"topology-choose-1000": Budget(1, 5)})
    assert row.error is None and row.samples
    assert row.extra["domain"] is not None and row.extra["tiers_tried"] == 2
    assert row.extra["first_choice_ms"] > 0
