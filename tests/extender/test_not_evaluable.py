"""The verbs and a pod the engine cannot judge (a claim not bound, a device claim not
allocated): filter never refuses a node on that account (kube-scheduler's own volume and
device filters judged it before asking), and preempt keeps kube-scheduler's own victims
whenever the queue rules allow every one of them, dropping a node only for a queue rule."""

from __future__ import annotations

from typing import Any

from scheduler_core.extender.filter_verb import filter_pod
from scheduler_core.extender.preempt_verb import preempt_pod
from tests.builders import (
    accounting,
    claim_volume,
    node,
    pod,
    podgroup,
    pvc,
    queue,
    resource_claim,
    storage_class,
    with_resource_claims,
    with_volumes,
)
from tests.extender.test_preempt_verb import PCS, member, same_queue_cluster, uids

UNBOUND = [storage_class("fast"), pvc("data", storage_class="fast")]


def unjudged(p: dict[str, Any]) -> dict[str, Any]:
    return with_volumes(p, claim_volume("v", "data"))


def test_filter_lets_a_pod_it_cannot_judge_through_on_every_node() -> None:
    objs = [node("n1"), node("n2"), queue("a"), *UNBOUND, resource_claim("gpu")]
    p = with_resource_claims(unjudged(pod("p", queue="a")), "gpu")
    acct, _ = accounting([*objs, p])
    result = filter_pod(acct, p, ["n1", "n2"])
    assert sorted(result.passed) == ["n1", "n2"] and result.failed == {}


def test_preempt_keeps_kube_schedulers_victims_unchanged_for_a_pod_it_cannot_judge() -> None:
    objs = [*same_queue_cluster()[:-1], *UNBOUND, unjudged(member("h", "hi", "2", prio=1000))]
    acct, _ = accounting(objs)
    proposed = uids("l2", "l3", "l1")  # not minimal: l1 alone would do, were the fit judged
    result = preempt_pod(acct, objs[-1], {"n1": proposed})
    assert list(result) == ["n1"]
    assert sorted(result["n1"].uids) == sorted(proposed)
    assert result["n1"].mode == "preempt"


def test_the_same_pod_judged_gets_the_minimal_set() -> None:
    """The control: judged, kube-scheduler's three victims shrink."""
    objs = same_queue_cluster()
    acct, _ = accounting(objs)
    result = preempt_pod(acct, objs[-1], {"n1": uids("l2", "l3", "l1")})
    assert len(result["n1"].uids) < 3


def test_preempt_drops_a_node_only_for_a_queue_rule_it_can_judge() -> None:
    """A victim no rule lets go (a pod of another queue at its share, not overused)."""
    objs = [
        node("n1"),
        queue("a"),
        queue("b"),
        *PCS,
        *UNBOUND,
        podgroup("other", 1, queue="b", priority_class="low"),
        member("o1", "other", "2", "n1"),
        podgroup("hi", 1, queue="a", priority_class="high", phase="Inqueue"),
        unjudged(member("h", "hi", "2", prio=1000)),
    ]
    acct, _ = accounting(objs)
    assert preempt_pod(acct, objs[-1], {"n1": uids("o1")}) == {}


def test_preempt_keeps_nothing_when_kube_scheduler_proposed_nothing() -> None:
    objs = [*same_queue_cluster()[:-1], *UNBOUND, unjudged(member("h", "hi", "2", prio=1000))]
    acct, _ = accounting(objs)
    assert preempt_pod(acct, objs[-1], {"n1": []}) == {}
