"""The replayed scheduling loop: each pod is judged, scored and bound, and the leader's
write-back runs beside it (what the row measures, not how fast)."""

from __future__ import annotations

from bench import Budget, cycle_bench


def test_the_cycle_row_binds_every_pod_it_replays_with_the_status_writer_running() -> None:
    budget = Budget(n=30, seconds=60, warmup=5)
    [row] = cycle_bench.run({"cycle-200"}, {"cycle-200": budget})
    assert row.error is None
    assert row.extra["outcomes"] == {"bound": 35, "no-node": 0}
    assert len(row.samples) == 30
    assert row.value == sum(row.samples) / 30
    assert 0 < row.extra["kept_of_plain"] < 1


def test_a_replayed_bind_is_in_the_cache_before_the_next_pod_is_judged() -> None:
    fixture = cycle_bench.build(nodes=3, pods=4)
    first, names = fixture.pods[0], fixture.names
    assert fixture.backend.filter(first, names).passed == names
    bound = {**first, "spec": {**first["spec"], "nodeName": names[0]}}
    bound["metadata"] = {**first["metadata"], "resourceVersion": "99"}
    fixture.state.upsert("Pod", bound)
    with fixture.state.locked():
        task = fixture.state.task(f"{cycle_bench.NAMESPACE}/{first['metadata']['name']}")
    assert task is not None and task.node_name == names[0]
