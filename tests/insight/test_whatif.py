"""A what-if decides what ``simulate`` decides on the same cluster plus the added objects,
and leaves the live state as it was."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.cache.builder import build_snapshot
from scheduler_core.cache.objects import collect
from scheduler_core.conf import load_configuration
from scheduler_core.engine import run_session
from scheduler_core.insight.whatif import (
    MAX_OBJECTS,
    QueueChange,
    WhatIfError,
    WhatIfRequest,
    what_if,
)
from scheduler_core.report import session_report
from tests.builders import HELM_CONF, node, pod, podgroup, priority_class, queue
from tests.extender.conftest import accounting
from tests.insight.conftest import fingerprint

CONF = HELM_CONF.format(actions="enqueue, allocate, preempt, reclaim", configurations="")


def base() -> list[dict[str, Any]]:
    """Queue b holds both nodes; queue a (same weight) has nothing yet."""
    return [
        node("n1", cpu="4"),
        node("n2", cpu="4"),
        queue("a"),
        queue("b"),
        priority_class("low", 1),
        podgroup("greedy", 1, queue="b", priority_class="low"),
        *[pod(f"g{i}", group="greedy", cpu="1", node_name=f"n{1 + i % 2}") for i in range(8)],
    ]


def submission() -> list[dict[str, Any]]:
    return [
        podgroup("newjob", 2, queue="a", phase="Pending"),
        pod("w0", group="newjob", cpu="1"),
        pod("w1", group="newjob", cpu="1"),
    ]


def simulated(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return session_report(run_session(build_snapshot(collect(objects)), load_configuration(CONF)))


def test_whatif_decides_what_simulate_decides_and_changes_nothing_live() -> None:
    acct, _ = accounting(base(), CONF)
    before = fingerprint(acct)
    result = what_if(acct, load_configuration(CONF), WhatIfRequest(add=submission()))
    assert fingerprint(acct) == before

    expected = simulated(base() + submission())
    assert sorted((p.pod, p.node) for p in result.placed if not p.pipelined) == sorted(
        (r["pod"], r["node"]) for r in expected["allocated"]
    )
    assert sorted((p.pod, p.node) for p in result.placed if p.pipelined) == sorted(
        (r["pod"], r["node"]) for r in expected["pipelined"]
    )
    assert sorted((e.pod, e.node, e.action) for e in result.evicted) == sorted(
        (r["pod"], r["node"], r["action"]) for r in expected["evicted"]
    )
    # the case is not empty: the new job reclaims from b
    assert result.evicted and {e.action for e in result.evicted} == {"reclaim"}
    assert all(e.queue == "b" for e in result.evicted)
    assert "reclaimed from queue b" in result.evicted[0].reason
    a = next(q for q in result.queues if q.name == "a")
    assert a.before is None or a.before.deserved in (None, {"cpu": 0.0, "memory": 0.0})
    assert a.after is not None and a.after.deserved is not None and a.after.deserved["cpu"] > 0


def test_removing_pods_and_changing_weights_match_simulate_too() -> None:
    acct, _ = accounting(base(), CONF)
    before = fingerprint(acct)
    request = WhatIfRequest(
        add=submission(),
        remove=["ns/g0", "ns/g1"],
        queues=[QueueChange("a", weight=3)],
    )
    result = what_if(acct, load_configuration(CONF), request)
    assert fingerprint(acct) == before
    changed = [o for o in base() if o["metadata"]["name"] not in ("g0", "g1")]
    for obj in changed:
        if obj["kind"] == "Queue" and obj["metadata"]["name"] == "a":
            obj["spec"]["weight"] = 3
    expected = simulated(changed + submission())
    assert sorted((p.pod, p.node) for p in result.placed if not p.pipelined) == sorted(
        (r["pod"], r["node"]) for r in expected["allocated"]
    )
    assert sorted(e.pod for e in result.evicted) == sorted(r["pod"] for r in expected["evicted"])
    assert {p.pod for p in result.placed if p.added} <= {"ns/w0", "ns/w1"}


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (WhatIfRequest(), "nothing to try"),
        (WhatIfRequest(add=[{"kind": "Node", "metadata": {"name": "x"}}]), "kind 'Node'"),
        (WhatIfRequest(remove=["ns/ghost"]), "cannot remove pod ns/ghost"),
        (WhatIfRequest(queues=[QueueChange("ghost", weight=2)]), "queue ghost does not exist"),
        (WhatIfRequest(queues=[QueueChange("a", weight=0)]), "weight must be at least 1"),
        (WhatIfRequest(add=[{"kind": "Pod"}] * (MAX_OBJECTS + 1)), "too many objects"),
        (WhatIfRequest(add=[{"kind": "Pod", "metadata": {}}]), "name"),
    ],
)
def test_bad_requests_are_refused_with_a_sentence_and_change_nothing(
    request_: WhatIfRequest, message: str
) -> None:
    acct, _ = accounting(base(), CONF)
    before = fingerprint(acct)
    with pytest.raises(WhatIfError, match=message):
        what_if(acct, load_configuration(CONF), request_)
    assert fingerprint(acct) == before
