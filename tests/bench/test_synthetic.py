"""The bench's synthetic cluster is what it claims to be, and ``python -m bench`` runs.

Small scale only, and no timing assertions: the numbers themselves are the bench's
business. What is checked here is that the scenarios the bench times are the ones it
describes (the preempt candidates really hold valid victims, the filter targets pass, the
sync probe really flips), so a change in the engine cannot silently turn a bench into one
that measures an early exit.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from app.backend.engine import BackendOptions, EngineBackend
from bench import Measurement, percentile
from bench.__main__ import parse_only, render
from bench.engine_bench import build_fixture, fit_growth, pick_filter_pods
from bench.http_bench import _rss_growth
from bench.synthetic import (
    DENSE_QUEUE,
    POD_GROUP_SIZE,
    PREEMPT_VICTIMS,
    ClusterSpec,
    SyntheticCluster,
)
from scheduler_core.api.resource import ZERO
from scheduler_core.cache.objects import collect
from scheduler_core.cache.state import KINDS, ClusterState
from scheduler_core.conf import default_configuration

REPO = Path(__file__).resolve().parents[2]
SMALL = 0.02  # 100 nodes, 40 pod groups, 1,000 pods


@pytest.fixture(scope="module")
def cluster() -> SyntheticCluster:
    return SyntheticCluster(ClusterSpec.at_scale(SMALL))


def test_the_cluster_has_the_requested_size(cluster: SyntheticCluster) -> None:
    spec = cluster.spec
    assert (spec.nodes, spec.groups, spec.parents) == (100, 40, 1)
    objects = collect(obj for _, objs in cluster.objects_by_kind() for obj in objs)
    assert len(objects.nodes) == 100
    assert len(objects.pods) == 40 * POD_GROUP_SIZE
    assert len(objects.podgroups) == 40
    assert len(objects.queues) == 1 + 9  # one parent, nine leaves
    assert set(objects.priority_classes) == {"bench-low", "bench-mid", "bench-high"}
    leaves = [q for q in objects.queues if q.parent]
    assert {q.parent for q in leaves} == {"dept-00"}
    assert len({q.weight for q in objects.queues}) > 1  # weights vary


def test_the_state_holds_every_object_without_overcommitting_a_node(
    cluster: SyntheticCluster,
) -> None:
    state = ClusterState()
    cluster.feed(state)
    assert state.has_synced()
    assert state.rejected == {}
    counts = state.counts()
    assert (counts["pods"], counts["nodes"], counts["podgroups"]) == (1000, 100, 40)
    assert counts["jobs"] == 40  # every pod found its PodGroup
    snapshot = state.snapshot()
    placed = sum(len(node.tasks) for node in snapshot.nodes.values())
    summary = cluster.summary()
    assert placed == summary["pods_running"]
    for node in snapshot.nodes.values():
        assert node.used.less_equal(node.allocatable, ZERO), node.name
    assert 0.6 <= summary["cpu_used_fraction"] <= 0.8
    assert 3000 <= summary["pod_json_bytes_avg"] <= 6000


def test_generation_is_deterministic(cluster: SyntheticCluster) -> None:
    again = SyntheticCluster(ClusterSpec.at_scale(SMALL))
    sample = range(0, 1000, 97)
    assert [again.pod(i) for i in sample] == [cluster.pod(i) for i in sample]
    assert again.preempt_candidates() == cluster.preempt_candidates()


def test_every_preempt_candidate_yields_the_proposed_victims(cluster: SyntheticCluster) -> None:
    fixture = build_fixture(cluster)
    preemptor = cluster.pod(cluster.preemptor_pod())
    assert preemptor["metadata"]["labels"]["volcano.sh/queue-name"] == DENSE_QUEUE
    candidates = cluster.preempt_candidates()
    assert len(candidates) == cluster.spec.dense_nodes
    answer = fixture.backend.preempt(preemptor, candidates)
    assert set(answer) == set(candidates)
    for node, victims in answer.items():
        assert len(victims.uids) == PREEMPT_VICTIMS
        assert set(victims.uids) == set(candidates[node])


def test_the_filter_targets_pass(cluster: SyntheticCluster) -> None:
    fixture = build_fixture(cluster)
    picks = pick_filter_pods(cluster, fixture.backend.explain, 2)
    assert picks
    for index in picks:
        decision = fixture.backend.filter(cluster.pod(index), cluster.node_names)
        assert decision.passed == cluster.node_names
        fixture.backend.accounting.release(cluster.pod_key(index))


def test_binding_probe_pod_a_flips_the_verdict_on_probe_pod_b() -> None:
    cluster = SyntheticCluster(ClusterSpec.at_scale(SMALL, probe=True))
    state = ClusterState()
    cluster.feed(state)
    backend = EngineBackend(state, default_configuration(), BackendOptions())
    pod_b = cluster.probe_pod("b", bound=False)
    assert backend.filter(pod_b, cluster.node_names).passed
    backend.accounting.release("bench-probe/probe-b")
    state.upsert("Pod", cluster.probe_pod("a", bound=True))
    decision = backend.filter(pod_b, cluster.node_names)
    assert not decision.passed
    assert {s.reason_code for s in decision.failed.values()} == {"queue-overused"}


def test_measurements_judge_the_right_statistic() -> None:
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0
    assert percentile([float(i) for i in range(1, 101)], 99) == 99.0
    one_outlier = Measurement("a", "", samples=[1.0] * 99 + [9.0], target=2.0)
    assert one_outlier.judged() == 1.0 and one_outlier.verdict() == "PASS"
    two_outliers = Measurement("a", "", samples=[1.0] * 98 + [9.0, 9.0], target=2.0)
    assert two_outliers.judged() == 9.0 and two_outliers.verdict() == "MISS"
    slow = Measurement("b", "", samples=[3.0, 4.0], target=2.0)
    assert slow.verdict() == "MISS" and slow.miss_factor() == 2.0
    ratio = Measurement("c", "", unit="×", value=2.5, target=3.0, target_stat="value")
    assert ratio.verdict() == "PASS"
    broken = Measurement("d", "", error="boom", target=1.0)
    assert broken.verdict() == "ERROR"
    slow.rss_mib = 1234.4
    table = render([slow, ratio, broken])
    assert "MISS (2.0×)" in table and "PASS" in table and "ERROR" in table
    assert "RSS MiB" in table.splitlines()[0] and "1,234" in table.splitlines()[2]


def test_verb_rss_growth_is_the_servers_rss_after_minus_before() -> None:
    grown = _rss_growth(
        {"samples": [1.0] * 10, "server_rss_before_mib": 250.0, "server_rss_mib": 262.5}
    )
    assert grown.value == 12.5 and grown.verdict() == "MISS" and grown.rss_mib == 262.5
    steady = _rss_growth(
        {"samples": [1.0] * 10, "server_rss_before_mib": 250.0, "server_rss_mib": 250.4}
    )
    assert steady.verdict() == "PASS"
    unread = _rss_growth({"samples": [1.0], "server_rss_before_mib": None, "server_rss_mib": 1.0})
    assert unread.verdict() == "ERROR"


def test_unknown_bench_names_are_refused() -> None:
    assert parse_only("filter-http,sync") == {"filter-http", "sync"}
    with pytest.raises(ValueError, match="unknown bench nope"):
        parse_only("nope")


def test_quick_filter_inprocess_runs(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    argv = ["-m", "bench", "--quick", "--only", "filter-inprocess", "--json", str(out)]
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=REPO,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert b"filter-inprocess" in done.stdout
    document = orjson.loads(out.read_bytes())
    assert document["scale"] == 0.1 and document["cluster"]["nodes"] == 500
    (result,) = document["results"]
    assert result["name"] == "filter-inprocess"
    assert result["n"] >= 3
    assert result["verdict"] in ("PASS", "MISS")
    assert result["extra"]["outcomes"].get("pass", 0) == result["n"]
    assert result["rss_mib"] > 0  # the bench process's resident memory beside the row


def test_the_fit_variant_gives_a_tenth_of_the_pods_anti_affinity_and_a_tenth_hard_spread() -> None:
    fit = SyntheticCluster(ClusterSpec.at_scale(0.1, fit=True))
    pods = list(fit.pods())
    anti = [p for p in pods if "affinity" in p["spec"]]
    spread = [p for p in pods if "topologySpreadConstraints" in p["spec"]]
    assert all("app" in p["metadata"]["labels"] for p in pods)
    assert abs(len(anti) / len(pods) - 0.1) < 0.02
    assert abs(len(spread) / len(pods) - 0.1) < 0.02
    # Waiting pods too: the loop's preemptors are where the constraints cost.
    waiting = [p for p in pods if not p["spec"].get("nodeName")]
    assert any("affinity" in p["spec"] for p in waiting)
    assert any("topologySpreadConstraints" in p["spec"] for p in waiting)
    for p in anti:
        (term,) = p["spec"]["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]
        assert term["labelSelector"]["matchLabels"] == {"app": p["metadata"]["labels"]["app"]}
    plain = SyntheticCluster(ClusterSpec.at_scale(0.1))
    assert not any("app" in p["metadata"]["labels"] for p in plain.pods())


@pytest.mark.parametrize(
    ("plain", "fit", "growth"),
    [
        ([100.0, 200.0, 300.0], [150.0, 300.0, 450.0], 1.5),
        ([100.0], [90.0], 0.9),
        (None, [100.0], None),  # the plain row did not run
    ],
)
def test_the_fit_cycle_reports_its_p50_over_the_plain_cycles(
    plain: list[float] | None, fit: list[float], growth: float | None
) -> None:
    rows = [Measurement("reclaim-cycle-fit", "", samples=fit)]
    if plain is not None:
        rows.append(Measurement("reclaim-cycle", "", samples=plain))
    fit_growth(rows)
    assert rows[0].extra.get("growth_vs_plain") == growth


def test_feeding_the_cluster_marks_every_watched_kind_synced() -> None:
    # A kind the cache watches but the feed never marks keeps the bench server unready.
    state = ClusterState()
    SyntheticCluster(ClusterSpec.at_scale(0.01)).feed(state)
    assert state.has_synced(KINDS)
