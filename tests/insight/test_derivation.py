"""A queue's deserved derivation is the proportion loop's (or capacity's) own record."""

from __future__ import annotations

import pytest

from scheduler_core.insight.derivation import (
    BOUND_CAPABILITY,
    BOUND_GUARANTEE,
    BOUND_REQUEST,
    BOUND_SHARE,
    queue_derivation,
)
from scheduler_core.insight.queues import queue_view
from scheduler_core.report import queue_attrs
from tests.builders import accounting, node, pod, podgroup, queue


def cluster() -> list[dict[str, object]]:
    """12 CPU; small (weight 1) asks 1 CPU, big (weight 2) and other (weight 1) ask plenty."""
    return [
        node("n1", cpu="12", memory="48Gi"),
        queue("small", 1),
        queue("big", 2),
        queue("other", 1),
        podgroup("s", 1, queue="small", phase="Inqueue"),
        pod("s0", group="s", cpu="1", memory="1Gi"),
        podgroup("b", 1, queue="big", phase="Inqueue"),
        *[pod(f"b{i}", group="b", cpu="4", memory="1Gi") for i in range(4)],
        podgroup("o", 1, queue="other", phase="Inqueue"),
        *[pod(f"o{i}", group="o", cpu="4", memory="1Gi") for i in range(4)],
    ]


def test_each_pass_is_recorded_and_ends_at_the_plugins_deserved() -> None:
    acct, _ = accounting(cluster())
    ssn = acct.session()
    attrs = queue_attrs(ssn)
    for name in ("small", "big", "other"):
        derivation = queue_derivation(ssn, name)
        assert derivation.plugin == "proportion"
        assert derivation.rounds, name
        assert derivation.rounds[-1].deserved == {
            k: round(v, 6) for k, v in attrs[name].deserved.to_quantities().items() if k != "pods"
        }


def test_a_queue_that_asks_little_is_bound_by_its_request_in_the_first_pass() -> None:
    acct, _ = accounting(cluster())
    small = queue_derivation(acct.session(), "small")
    assert small.bound_by == {"cpu": BOUND_REQUEST, "memory": BOUND_REQUEST}
    first = small.rounds[0]
    assert first.round == 1
    assert first.total_weight == 4
    assert first.offered is not None and first.offered["cpu"] == 3.0  # 12 * 1/4
    assert first.deserved is not None and first.deserved["cpu"] == 1.0
    assert "cpu" in first.clamped["request"]
    assert first.met == "request"


def test_queues_asking_more_than_remains_share_it_by_weight_over_passes() -> None:
    acct, _ = accounting(cluster())
    ssn = acct.session()
    big, other = queue_derivation(ssn, "big"), queue_derivation(ssn, "other")
    assert big.bound_by == {"cpu": BOUND_SHARE, "memory": BOUND_REQUEST}
    assert len(big.rounds) >= 2  # what small left in pass 1 is handed out again in pass 2
    second = big.rounds[1]
    assert second.remaining is not None and second.remaining["cpu"] == 2.0
    assert second.total_weight == 3
    big_cpu = big.rounds[-1].deserved["cpu"]  # type: ignore[index]
    assert big_cpu == pytest.approx(2 * other.rounds[-1].deserved["cpu"], abs=1e-5)  # type: ignore[index]


def test_a_guarantee_raises_the_deserved_share_and_is_named_as_the_bound() -> None:
    objs = [
        node("n1", cpu="8"),
        queue("g", 1, guarantee={"cpu": "6"}),
        queue("h", 3),
        podgroup("a", 1, queue="g", phase="Inqueue"),
        *[pod(f"a{i}", group="a", cpu="2") for i in range(4)],
        podgroup("b", 1, queue="h", phase="Inqueue"),
        *[pod(f"b{i}", group="b", cpu="2") for i in range(4)],
    ]
    acct, _ = accounting(objs)
    derivation = queue_derivation(acct.session(), "g")
    assert derivation.bound_by["cpu"] == BOUND_GUARANTEE
    assert derivation.rounds[0].clamped["guarantee"] == ["cpu"]
    # h's real capability is the cluster less g's guarantee: 2 CPUs
    assert queue_derivation(acct.session(), "h").bound_by["cpu"] == BOUND_CAPABILITY


def test_capacity_records_spec_deserved_capped_and_raised() -> None:
    text = "actions: 'allocate'\ntiers:\n- plugins:\n  - name: gang\n  - name: capacity\n"
    objs = [
        node("n1", cpu="8"),
        queue("a", deserved={"cpu": "2"}, guarantee={"cpu": "3"}),
        podgroup("p", 1, queue="a", phase="Inqueue"),
        pod("p0", group="p", cpu="1"),
    ]
    acct, _ = accounting(objs, text)
    derivation = queue_derivation(acct.session(), "a")
    assert derivation.plugin == "capacity"
    assert derivation.rounds[0].label == "spec.deserved"
    assert derivation.rounds[0].deserved["cpu"] == 2.0  # type: ignore[index]
    assert derivation.bound_by["cpu"] == BOUND_GUARANTEE
    assert derivation.rounds[-1].deserved["cpu"] == 3.0  # type: ignore[index]


def test_queue_view_carries_the_derivation_and_assumed_pods() -> None:
    objs = cluster()
    acct, _ = accounting(objs)
    from scheduler_core.extender.filter_verb import filter_pod

    filter_pod(acct, objs[5], ["n1"])  # s0 is assumed
    view = queue_view(acct, "small")
    assert view is not None and view.derivation is not None
    assert view.assumed_pods == 1
    assert view.assumed is not None and view.assumed["cpu"] == 1.0
    assert view.allocated is not None and view.allocated["cpu"] == 1.0
