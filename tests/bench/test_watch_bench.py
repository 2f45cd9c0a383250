"""The pod informer's rows replay each ``bench-e2e`` pod's two watch events, its creation
and its bind, through the reflector's event handling: into nothing, and into the cache,
which must end up holding every pod bound where its event says."""

from __future__ import annotations

import orjson

from bench import Budget, watch_bench
from bench.cycle_bench import NAMESPACE, CycleScale
from scheduler_core.api.types import TaskStatus
from scheduler_core.cache.sink_feed import SinkFeed
from scheduler_core.cache.state import ClusterState
from scheduler_core.cache.watch_protocol import ReflectorStats

SMALL = CycleScale(nodes=20, pods=2 * watch_bench.PODS_PER_SAMPLE, pace_ms=0.0)


def test_each_pod_is_created_then_bound_as_the_api_server_writes_it() -> None:
    created, bound = watch_bench.pod_events(7, SMALL.nodes)
    first, second = orjson.loads(created), orjson.loads(bound)
    assert (first["type"], second["type"]) == ("ADDED", "MODIFIED")
    assert created.endswith(b"\n") and created.count(b"\n") == 1
    assert first["object"]["metadata"]["managedFields"]
    assert "nodeName" not in first["object"]["spec"]
    assert second["object"]["spec"]["nodeName"] == "n0007"


def test_the_stream_puts_each_pod_in_the_cache_bound_to_its_node() -> None:
    state = ClusterState()
    feed = SinkFeed("Pod", "pods", state, ReflectorStats())
    for chunks in watch_bench.batches(SMALL):
        assert feed.follow(watch_bench.StreamedResponse(chunks)) == (None, len(chunks))
    assert feed.stats.events["ADDED"] == feed.stats.events["MODIFIED"] == SMALL.pods
    for index in range(SMALL.pods):
        task = state.task(f"{NAMESPACE}/p-{index:05d}")
        assert task is not None
        assert task.node_name == f"n{index % SMALL.nodes:04d}"
        assert task.status == TaskStatus.BOUND


def test_the_rows_report_cpu_per_pod_against_their_targets() -> None:
    budgets = {name: Budget(n=2, seconds=30, warmup=1) for name in watch_bench.BENCHES}
    rows = {r.name: r for r in watch_bench.run(set(watch_bench.BENCHES), budgets)}
    assert set(rows) == set(watch_bench.BENCHES)
    assert {name: (r.error, len(r.samples), r.unit) for name, r in rows.items()} == {
        name: (None, 2, "us") for name in watch_bench.BENCHES
    }
    assert {name: r.target for name, r in rows.items()} == watch_bench.TARGETS_US
    # One batch of warm-up and two samples, each of PODS_PER_SAMPLE pods' two events.
    assert all(r.extra["events"] == {"ADDED": 150, "MODIFIED": 150} for r in rows.values())
