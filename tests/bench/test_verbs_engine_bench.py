"""The CPU-per-pod rows replay what kube-scheduler makes the extender do for each pod of
``bench-e2e``'s ``ours``: a filter call the real engine passes on every offered node, then
the bind's watch event, which leaves the pod on that node in the cache."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from bench import Budget, verbs_engine_bench
from bench.cycle_bench import NAMESPACE, CycleScale
from bench.verbs_bench import Connection
from scheduler_core.api.types import TaskStatus

SMALL = CycleScale(nodes=20, pods=30, pace_ms=0.0)


def test_each_pod_is_passed_on_every_offered_node_and_then_bound_in_the_cache() -> None:
    fixture = verbs_engine_bench.build(SMALL)

    async def replay() -> list[bytes]:
        conn = Connection(asyncio.get_running_loop(), fixture.backend)
        one = verbs_engine_bench.driver(fixture, conn)
        for index in range(SMALL.pods):
            await one(index)
        return conn.transport.written

    answers = asyncio.run(replay())
    assert len(answers) == SMALL.pods
    for index, raw in enumerate(answers):
        request = orjson.loads(fixture.requests[index].split(b"\r\n\r\n", 1)[1])
        answer = orjson.loads(raw.split(b"\r\n\r\n", 1)[1])
        assert answer["NodeNames"] == request["NodeNames"]
        assert len(request["NodeNames"]) == SMALL.nodes  # all of them, below 100 nodes
        task = fixture.state.task(f"{NAMESPACE}/p-{index:05d}")
        assert task is not None
        assert task.node_name == request["NodeNames"][0]
        assert task.status == TaskStatus.BOUND


@pytest.mark.parametrize(
    ("nodes", "names"), [(20, 20), (99, 99), (100, 100), (200, 100), (1_000, 420), (5_000, 500)]
)
def test_kube_scheduler_offers_its_adaptive_share_of_the_nodes(nodes: int, names: int) -> None:
    assert verbs_engine_bench.offered(nodes) == names


def test_the_rows_report_cpu_per_pod_against_their_targets() -> None:
    budgets = {name: Budget(n=2, seconds=30, warmup=0) for name in verbs_engine_bench.BENCHES}
    rows = verbs_engine_bench.run({"verbs-engine-200"}, budgets)
    assert [r.name for r in rows] == ["verbs-engine-200"]
    (row,) = rows
    assert row.error is None and len(row.samples) == 2 and row.unit == "us"
    assert row.extra["pods_bound"] == 2 * verbs_engine_bench.PODS_PER_SAMPLE
