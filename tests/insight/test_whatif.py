"""A what-if schedules the submitted jobs alone by default; with scope "all" it decides what
``simulate`` decides on the same cluster plus the added objects. Either way it leaves the live
state as it was."""

from __future__ import annotations

from typing import Any

import pytest

from bench.synthetic import ClusterSpec, SyntheticCluster
from scheduler_core.cache.builder import build_snapshot
from scheduler_core.cache.objects import collect
from scheduler_core.conf import load_configuration
from scheduler_core.engine import run_session
from scheduler_core.insight.whatif import (
    MAX_OBJECTS,
    QueueChange,
    WhatIfError,
    WhatIfRequest,
    prepare,
    run_prepared,
    what_if,
)
from scheduler_core.report import session_report
from tests.builders import (
    HELM_CONF,
    accounting,
    assume,
    node,
    pod,
    podgroup,
    priority_class,
    queue,
)
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
    result = what_if(acct, load_configuration(CONF), WhatIfRequest(add=submission(), scope="all"))
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
        scope="all",
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
        (
            WhatIfRequest(queues=[QueueChange("a", capability={"cpu": "-4"})]),
            "capability.cpu.*must not be negative",
        ),
        (WhatIfRequest(add=[{"kind": "Pod"}] * (MAX_OBJECTS + 1)), "too many objects"),
        (WhatIfRequest(add=[{"kind": "Pod", "metadata": {}}]), "name"),
        (WhatIfRequest(add=submission(), scope="everything"), "scope 'everything'"),
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


def waiting_elsewhere() -> list[dict[str, Any]]:
    """Queue c (idle) has a pending job that a full session would place at once."""
    return [
        queue("c"),
        podgroup("other", 1, queue="c", phase="Pending"),
        pod("o0", group="other", cpu="1"),
    ]


def test_by_default_only_the_submitted_jobs_are_scheduled() -> None:
    cluster = base() + waiting_elsewhere()
    acct, _ = accounting(cluster, CONF)
    before = fingerprint(acct)
    conf = load_configuration(CONF)

    mine = what_if(acct, conf, WhatIfRequest(add=submission()))
    everything = what_if(acct, conf, WhatIfRequest(add=submission(), scope="all"))
    assert fingerprint(acct) == before

    # the whole session would also serve queue c's job ...
    assert "ns/o0" in {p.pod for p in everything.placed}
    expected = simulated(cluster + submission())
    assert sorted(e.pod for e in everything.evicted) == sorted(
        r["pod"] for r in expected["evicted"]
    )
    # ... the default answers for the submission alone: o0 stays pending, and every pod
    # placed or evicted is the new job's or one of its victims
    assert {p.pod for p in mine.placed} <= {"ns/w0", "ns/w1"}
    assert all(e.preemptor in ("ns/w0", "ns/w1") for e in mine.evicted)
    assert all(p.added for p in mine.placed)
    c = next(q for q in mine.queues if q.name == "c")
    assert c.after is not None and c.after.allocated == c.before.allocated  # type: ignore[union-attr]


def test_a_pod_joining_an_existing_podgroup_schedules_that_job() -> None:
    cluster = base() + waiting_elsewhere()
    acct, _ = accounting(cluster, CONF)
    extra = pod("o1", group="other", cpu="1")
    result = what_if(acct, load_configuration(CONF), WhatIfRequest(add=[extra]))
    # the job is scheduled as a whole: its waiting member o0 reclaims a place (after
    # which the job, minMember 1, no longer starves, so o1 waits)
    assert [(p.pod, p.added) for p in result.placed] == [("ns/o0", False)]
    assert result.unplaced == ["ns/o1"]


def test_the_whole_session_on_a_generated_cluster_equals_simulate_and_leaves_it_alone() -> None:
    """Many evictions and placements over a fork that shares its pods with the live cache:
    each change lands on the fork's own copy of the pod, never on the live one."""
    cluster = SyntheticCluster(ClusterSpec.at_scale(0.01))
    objects = [o for _, items in cluster.objects_by_kind() for o in items]
    conf_text = HELM_CONF.format(actions="enqueue, allocate, preempt, reclaim", configurations="")
    acct, _ = accounting(objects, conf_text)
    before = fingerprint(acct)
    gang = [
        podgroup(
            "probe", 2, queue=next(o for o in objects if o["kind"] == "Queue")["metadata"]["name"]
        ),
        pod("p0", group="probe", cpu="1"),
        pod("p1", group="probe", cpu="1"),
    ]
    result = what_if(acct, load_configuration(conf_text), WhatIfRequest(add=gang, scope="all"))
    assert fingerprint(acct) == before
    expected = session_report(
        run_session(build_snapshot(collect(objects + gang)), load_configuration(conf_text))
    )
    assert result.evicted and result.placed  # the case is not empty
    assert sorted((p.pod, p.node, p.pipelined) for p in result.placed) == sorted(
        [(r["pod"], r["node"], False) for r in expected["allocated"]]
        + [(r["pod"], r["node"], True) for r in expected["pipelined"]]
    )
    assert sorted((e.pod, e.node, e.action) for e in result.evicted) == sorted(
        (r["pod"], r["node"], r["action"]) for r in expected["evicted"]
    )


def test_a_what_if_over_its_work_bound_is_refused_and_changes_nothing() -> None:
    acct, _ = accounting(base(), CONF)
    before = fingerprint(acct)
    prepared = prepare(acct, load_configuration(CONF), WhatIfRequest(add=submission()))
    prepared.max_work = 1
    with pytest.raises(WhatIfError, match=r"too much work: \d+ \(pending pods x nodes"):
        run_prepared(prepared)
    assert fingerprint(acct) == before


def test_a_what_if_within_its_work_bound_runs() -> None:
    acct, _ = accounting(base(), CONF)
    prepared = prepare(acct, load_configuration(CONF), WhatIfRequest(add=submission()))
    prepared.max_work = 10**9
    assert run_prepared(prepared).placed


def assumed_cluster() -> list[dict[str, Any]]:
    """Queue a holds 2 CPU bound, and one more pod filter has passed but not yet bound."""
    return [
        node("n1", cpu="8"),
        queue("a"),
        queue("b"),
        podgroup("held", 1, queue="a"),
        pod("h0", group="held", cpu="1", node_name="n1"),
        pod("h1", group="held", cpu="1", node_name="n1"),
        podgroup("filtered", 1, queue="a", phase="Inqueue"),
        pod("f0", group="filtered", cpu="2"),
    ]


@pytest.mark.parametrize("scope", ["submitted", "all"])
def test_an_assumed_pod_counts_before_and_after_alike(scope: str) -> None:
    """'before' is the live accounting, which charges the assumed pod to its queue; 'after'
    must hold it too (and not place it a second time), or a what-if that changes nothing in
    a queue would show its allocation drop by the assumed pods."""
    acct, _ = accounting(assumed_cluster(), CONF)
    assume(acct, next(o for o in assumed_cluster() if o["metadata"]["name"] == "f0"), ["n1"])
    live = fingerprint(acct)
    other = [podgroup("elsewhere", 1, queue="b"), pod("e0", group="elsewhere", cpu="1")]
    result = what_if(acct, load_configuration(CONF), WhatIfRequest(add=other, scope=scope))
    assert fingerprint(acct) == live
    a = next(q for q in result.queues if q.name == "a")
    assert a.before is not None and a.after is not None
    assert a.before.allocated is not None and a.before.allocated["cpu"] == 4.0
    assert a.after.allocated == a.before.allocated
    assert "ns/f0" not in {p.pod for p in result.placed}
