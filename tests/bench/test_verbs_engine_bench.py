"""The CPU-per-pod rows replay what kube-scheduler makes the extender do for each pod of
``bench-e2e``'s ``ours``: a filter call the real engine passes on every offered node, then
the bind's watch event, which leaves the pod on its node in the cache."""

from __future__ import annotations

import asyncio
import itertools

import orjson
import pytest

from bench import Budget, verbs_engine_bench
from bench.cycle_bench import NAMESPACE, CycleScale
from bench.verbs_bench import Connection
from scheduler_core.api.types import TaskStatus

SMALL = CycleScale(nodes=20, pods=30, pace_ms=0.0)


def test_each_pod_is_passed_on_every_offered_node_and_bound_in_the_cache_binds_later() -> None:
    fixture = verbs_engine_bench.build(SMALL)
    lag, batch = 6, 3

    async def replay() -> list[bytes]:
        conn = Connection(asyncio.get_running_loop(), fixture.backend)
        one = verbs_engine_bench.driver(fixture, conn, lag=lag, batch=batch)
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
        if index < SMALL.pods - lag:  # (30 pods: the last bind batch ends 6 pods back)
            assert task.node_name == fixture.state.node_names()[(index * 37) % SMALL.nodes]
            assert task.status == TaskStatus.BOUND
        else:
            assert task.status == TaskStatus.PENDING


def test_the_live_row_brings_each_pod_into_the_cache_just_before_its_filter_call() -> None:
    fixture = verbs_engine_bench.build(SMALL, live=True)
    assert fixture.state.task(f"{NAMESPACE}/p-00000") is None  # none of them yet
    seen_before_filter: list[bool] = []

    async def replay() -> list[bytes]:
        conn = Connection(asyncio.get_running_loop(), fixture.backend)
        one = verbs_engine_bench.driver(fixture, conn, lag=0, batch=1, live=True)
        for index in range(SMALL.pods):
            nxt = fixture.state.task(f"{NAMESPACE}/p-{index:05d}")
            seen_before_filter.append(nxt is not None)
            await one(index)
        return conn.transport.written

    answers = asyncio.run(replay())
    assert not any(seen_before_filter)
    for index, raw in enumerate(answers):
        request = orjson.loads(fixture.requests[index].split(b"\r\n\r\n", 1)[1])
        assert orjson.loads(raw.split(b"\r\n\r\n", 1)[1])["NodeNames"] == request["NodeNames"]
        task = fixture.state.task(f"{NAMESPACE}/p-{index:05d}")
        assert task is not None and task.status == TaskStatus.BOUND


def test_binds_reach_the_cache_a_lag_behind_their_filter_calls_a_batch_at_a_time() -> None:
    lag, batch, pods = 32, 5, 200
    applied = [list(verbs_engine_bench.binds_after(i, lag, batch)) for i in range(pods)]
    order = [pod for after in applied for pod in after]
    assert order == list(range(len(order)))  # each pod once, in the order filtered
    assert len(order) == pods - lag
    batches = [after for after in applied if after]
    assert all(len(after) == batch for after in batches[1:])  # (the first may be shorter)
    for index, after in enumerate(applied):
        assert all(pod <= index - lag for pod in after)  # never before its filter call
        assert bool(after) == ((index + 1) % batch == 0 and index + 1 > lag)
    assert verbs_engine_bench.binds_after(9, lag=0, batch=1) == range(9, 10)  # at once


def test_each_row_replays_the_binds_as_bench_e2e_saw_them_at_its_scale() -> None:
    assert set(verbs_engine_bench.BIND_MODEL) == set(verbs_engine_bench.SCALES)
    lag_200, batch_200 = verbs_engine_bench.BIND_MODEL["verbs-engine-200"]
    assert lag_200 > batch_200 > 1  # bursts, tens of assumptions open at a follow
    assert verbs_engine_bench.BIND_MODEL["verbs-engine-1000"] == (1, 1)  # keeping pace


@pytest.mark.parametrize(
    ("nodes", "percentage", "names"),
    [
        (20, 0, 20),
        (99, 0, 99),
        (100, 0, 100),
        (200, 0, 100),
        (1_000, 0, 420),
        (5_000, 0, 500),
        (1_000, 10, 100),
        (1_000, 30, 300),
        (200, 100, 200),
        (1_000, 100, 1_000),
    ],
)
def test_kube_scheduler_offers_the_feasible_nodes_it_looks_for(
    nodes: int, percentage: int, names: int
) -> None:
    assert verbs_engine_bench.offered(nodes, percentage) == names


def test_the_rows_offer_every_node_as_the_rendered_configuration_has_kube_scheduler_do() -> None:
    assert verbs_engine_bench.RENDERED_PERCENTAGE == 100
    assert verbs_engine_bench.offered(1_000) == 1_000


def test_offered_lists_repeat_the_last_order_two_times_in_three_and_keep_the_set() -> None:
    names = [f"n{i}" for i in range(10)]
    lists = verbs_engine_bench.offered_names(names, 9)
    assert all(sorted(offer) == sorted(names) for offer in lists)
    repeats = sum(1 for before, after in itertools.pairwise(lists) if before == after)
    assert repeats == 5  # of 8 pairs: the order changes at the third, sixth and ninth pod
    assert lists[1] == names and lists[2] != names and lists[5] not in (names, lists[2])


def test_the_rows_report_cpu_per_pod_against_their_targets() -> None:
    budgets = {name: Budget(n=2, seconds=30, warmup=0) for name in verbs_engine_bench.BENCHES}
    rows = verbs_engine_bench.run({"verbs-engine-200"}, budgets)
    assert [r.name for r in rows] == ["verbs-engine-200"]
    (row,) = rows
    assert row.error is None and len(row.samples) == 2 and row.unit == "us"
    assert row.extra["pods_bound"] == 2 * verbs_engine_bench.PODS_PER_SAMPLE


def test_the_exact_row_scores_each_pod_on_the_nodes_its_filter_passed() -> None:
    fixture = verbs_engine_bench.build(SMALL)

    async def replay() -> list[bytes]:
        conn = Connection(asyncio.get_running_loop(), fixture.backend)
        one = verbs_engine_bench.driver(fixture, conn, lag=2, batch=1, prioritize=True)
        for index in range(SMALL.pods):
            await one(index)
        return conn.transport.written

    answers = asyncio.run(replay())
    assert len(answers) == 2 * SMALL.pods  # a filter and a prioritize answer a pod
    for index in range(SMALL.pods):
        passed = orjson.loads(answers[2 * index].split(b"\r\n\r\n", 1)[1])["NodeNames"]
        scored = orjson.loads(answers[2 * index + 1].split(b"\r\n\r\n", 1)[1])
        assert [entry["Host"] for entry in scored] == passed
        assert all(0 <= entry["Score"] <= 10 for entry in scored)
        assert any(entry["Score"] > 0 for entry in scored)  # scored, not the neutral answer
    assert set(verbs_engine_bench.SCALES) >= verbs_engine_bench.PRIORITIZED


def test_the_churn_row_starts_with_pods_running_and_deletes_one_as_each_pod_arrives() -> None:
    running = 5
    fixture = verbs_engine_bench.build(SMALL, live=True, running=running)
    state = fixture.state

    def status(index: int) -> TaskStatus | None:
        task = state.task(f"{NAMESPACE}/p-{index:05d}")
        return None if task is None else task.status

    assert [status(i) for i in range(running + 1)] == [TaskStatus.BOUND] * running + [None]

    async def replay() -> list[bytes]:
        conn = Connection(asyncio.get_running_loop(), fixture.backend)
        one = verbs_engine_bench.driver(fixture, conn, lag=1, batch=1, live=True)
        for index in range(running, SMALL.pods):
            await one(index)
            assert status(index - running) is None  # the pod that arrived 5 before: gone
            assert status(index - running + 1) == TaskStatus.BOUND
        return conn.transport.written

    answers = asyncio.run(replay())
    assert len(answers) == SMALL.pods - running
    assert all(orjson.loads(a.split(b"\r\n\r\n", 1)[1])["NodeNames"] for a in answers)
    assert verbs_engine_bench.RUNNING.keys() <= verbs_engine_bench.LIVE


def test_the_gangs_row_puts_each_pod_in_a_podgroup_of_its_own_created_and_deleted_with_it() -> None:
    running = 4
    fixture = verbs_engine_bench.build(SMALL, live=True, running=running, gangs=True)
    state = fixture.state

    def job_of(index: int) -> str | None:
        task = state.task(f"{NAMESPACE}/p-{index:05d}")
        return None if task is None else task.job

    assert [job_of(i) for i in range(running)] == [f"{NAMESPACE}/pg-{i:05d}" for i in range(4)]
    assert state.job(f"{NAMESPACE}/pg-{running:05d}") is None  # not yet

    async def replay() -> list[bytes]:
        conn = Connection(asyncio.get_running_loop(), fixture.backend)
        one = verbs_engine_bench.driver(fixture, conn, lag=1, batch=1, live=True)
        for index in range(running, SMALL.pods):
            await one(index)
            assert job_of(index) == f"{NAMESPACE}/pg-{index:05d}"
            assert state.job(f"{NAMESPACE}/pg-{index:05d}") is not None
            assert state.job(f"{NAMESPACE}/pg-{index - running:05d}") is None  # gone with it
        return conn.transport.written

    answers = asyncio.run(replay())
    assert all(orjson.loads(a.split(b"\r\n\r\n", 1)[1])["NodeNames"] for a in answers)
    assert set(verbs_engine_bench.RUNNING) >= verbs_engine_bench.GANGS
