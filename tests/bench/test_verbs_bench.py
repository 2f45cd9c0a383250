"""The service-cost rows drive the verbs listener's real protocol and application: each call
is answered 200 in the verb's shape (what the rows measure, not how fast)."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from bench import Budget, verbs_bench


@pytest.mark.parametrize("verb", ["filter", "prioritize", "preempt"])
def test_a_call_through_the_protocol_is_answered_in_the_verbs_shape(verb: str) -> None:
    raw = verbs_bench.request(f"/{verb}", verbs_bench.bodies()[verb])

    async def twice() -> list[bytes]:
        conn = verbs_bench.Connection(asyncio.get_running_loop())
        return [await conn.call(raw), await conn.call(raw)]  # one keep-alive connection

    answers = asyncio.run(twice())
    assert answers[0] == answers[1]
    answer = orjson.loads(answers[0].split(b"\r\n\r\n", 1)[1])
    if verb == "filter":
        assert len(answer["NodeNames"]) == verbs_bench.NODES
    elif verb == "prioritize":
        assert len(answer) == verbs_bench.NODES
    else:
        victims = answer["NodeNameToMetaVictims"]
        assert len(victims) == verbs_bench.CANDIDATES
        assert all(len(v["Pods"]) == verbs_bench.VICTIMS for v in victims.values())


def test_the_rows_report_cpu_per_call_against_their_targets() -> None:
    budgets = {name: Budget(n=2, seconds=30, warmup=0) for name in verbs_bench.BENCHES}
    rows = verbs_bench.run(set(verbs_bench.BENCHES), budgets)
    assert [r.name for r in rows] == list(verbs_bench.BENCHES)
    for row in rows:
        assert row.error is None and len(row.samples) == 2 and row.unit == "us"
        assert row.target == verbs_bench.TARGETS_US[row.name]
