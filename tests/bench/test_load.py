"""The load generator, for a few seconds at a small scale: every answer well formed, no 5xx,
no hung worker, the server still up. No latency is asserted: the figures are `make load`'s."""

from __future__ import annotations

from pathlib import Path

from bench.load import run_load


def test_concurrent_clients_on_every_verb_get_well_formed_answers(tmp_path: Path) -> None:
    result = run_load(scale=0.01, clients=8, seconds=2.0, max_requests=3000, workdir=tmp_path)
    assert result["server_alive"]
    assert result["errors"] == 0, result["verbs"]
    assert set(result["verbs"]) == {"filter", "prioritize", "preempt"}
    assert all(v["requests"] > 0 for v in result["verbs"].values()), result["verbs"]
    assert result["rss_after_mib"] > 0
