"""The load generator, for a few seconds at a small scale: every answer well formed, no 5xx,
no hung worker, the server still up. No latency is asserted: the figures are `make load`'s."""

from __future__ import annotations

from pathlib import Path

from app.serving.guard import METRICS_LIMITS, STATUS_LIMITS
from bench.load import run_load


def test_concurrent_clients_on_every_verb_get_well_formed_answers(tmp_path: Path) -> None:
    result = run_load(scale=0.01, clients=8, seconds=2.0, max_requests=3000, workdir=tmp_path)
    assert result["server_alive"]
    assert result["errors"] == 0, result["verbs"]
    assert set(result["verbs"]) == {"filter", "prioritize", "preempt"}
    assert all(v["requests"] > 0 for v in result["verbs"].values()), result["verbs"]
    assert result["rss_after_mib"] > 0


def test_idle_and_slow_connections_to_the_side_listeners_cost_the_verbs_nothing(
    tmp_path: Path,
) -> None:
    """More connections than the metrics and status listeners' caps together: the excess is
    closed as it arrives, no verb call fails, the server's memory stays flat."""
    idle, slow = 400, 60
    result = run_load(
        scale=0.01,
        clients=4,
        seconds=3.0,
        max_requests=2000,
        workdir=tmp_path,
        idle=idle,
        slow=slow,
    )
    assert result["server_alive"]
    assert result["errors"] == 0, result["verbs"]
    attack = result["attack"]
    caps = METRICS_LIMITS.max_connections + STATUS_LIMITS.max_connections
    assert attack["opened"] >= idle + slow
    assert attack["closed_by_server"] >= idle + slow - caps, attack
    assert result["rss_after_mib"] - result["rss_before_mib"] < 50
