"""The preempt verb judges victims with every predicate: a set of kube-scheduler's that
would leave the preemptor unplaceable (a host port still held, a pod its anti-affinity
shuns, a domain still too crowded) is replaced by one that lets it in, or the node is
dropped; a valid set is kept as it is."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.extender.preempt_verb import preempt_pod
from tests.builders import (
    accounting,
    host_port,
    node,
    pod,
    pod_affinity,
    pod_term,
    podgroup,
    priority_class,
    queue,
    selector,
    spread_constraint,
)

HOST = "kubernetes.io/hostname"
STARTED = "2024-01-01T00:00:00Z"


def cluster(
    preemptor: dict[str, Any], marked: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """n1 (2 cpu) holds two low-priority pods of queue a, one of them ``app=x``; n2 (1 cpu)
    is full with a pod that may not be evicted. A high-priority pod of queue a waits."""
    return [
        node("n1", cpu="2", labels={HOST: "n1"}),
        node("n2", cpu="1", labels={HOST: "n2"}),
        queue("a"),
        priority_class("low", 10),
        priority_class("high", 1000),
        pod("plain", queue="a", node_name="n1", priority=10, started=STARTED),
        pod(
            "x",
            queue="a",
            node_name="n1",
            priority=10,
            labels={"app": "x"},
            started=STARTED,
            **(marked or {}),
        ),
        pod("fixed", queue="a", node_name="n2", priority=10000, started=STARTED),
        pod("h", queue="a", priority=1000, labels={"app": "x"}, **preemptor),
    ]


VARIANTS = [
    pytest.param(
        {"affinity": pod_affinity(anti=[pod_term(selector({"app": "x"}), HOST)])}, {}, id="anti"
    ),
    pytest.param(
        {"host_ports": [host_port(8080)]}, {"host_ports": [host_port(8080)]}, id="host-port"
    ),
    pytest.param({"spread": [spread_constraint(1, HOST, selector({"app": "x"}))]}, {}, id="spread"),
]


@pytest.mark.parametrize(("preemptor", "marked"), VARIANTS)
def test_a_proposal_that_leaves_the_preemptor_out_is_replaced_by_the_pod_in_its_way(
    preemptor: dict[str, Any], marked: dict[str, Any]
) -> None:
    objs = cluster(preemptor, marked)
    acct, _ = accounting(objs)
    result = preempt_pod(acct, objs[-1], {"n1": ["ns-plain"]})
    assert list(result) == ["n1"]
    assert result["n1"].uids == ["ns-x"]


@pytest.mark.parametrize(("preemptor", "marked"), VARIANTS)
def test_a_proposal_that_lets_it_in_is_kept(
    preemptor: dict[str, Any], marked: dict[str, Any]
) -> None:
    objs = cluster(preemptor, marked)
    acct, _ = accounting(objs)
    assert preempt_pod(acct, objs[-1], {"n1": ["ns-x"]})["n1"].uids == ["ns-x"]


def test_without_constraints_the_smaller_proposal_stands() -> None:
    objs = cluster({})
    acct, _ = accounting(objs)
    assert preempt_pod(acct, objs[-1], {"n1": ["ns-plain"]})["n1"].uids == ["ns-plain"]


def test_a_node_where_no_victims_let_it_in_is_dropped() -> None:
    # The pod holding the port may not be evicted: no set on n1 helps.
    objs = cluster(
        {"host_ports": [host_port(8080)]}, {"host_ports": [host_port(8080)], "preemptable": False}
    )
    acct, _ = accounting(objs)
    assert preempt_pod(acct, objs[-1], {"n1": ["ns-plain"]}) == {}


def test_a_gang_member_is_not_placed_in_free_room_where_its_host_port_is_held() -> None:
    # m1 would fit n1's free cpu, but n1's keeper holds the port m0 and m1 both want, and
    # may not be evicted: the gang cannot complete, so nothing is evicted for m0 either.
    port = [host_port(80)]
    objs = [
        node("n0", cpu="1"),
        node("n1", cpu="2"),
        queue("q"),
        priority_class("low", 10),
        priority_class("high", 1000),
        podgroup("victims", 1, queue="q", priority_class="low"),
        pod("va", group="victims", cpu="1", node_name="n0", priority=10, priority_class="low"),
        pod(
            "keeper",
            group="victims",
            cpu="1",
            node_name="n1",
            priority=10,
            priority_class="low",
            preemptable=False,
            host_ports=port,
        ),
        podgroup("job", 2, queue="q", priority_class="high", phase="Inqueue"),
    ]
    members = [
        pod(f"m{i}", group="job", cpu="1", priority=1000, priority_class="high", host_ports=port)
        for i in range(2)
    ]
    acct, _ = accounting(objs + members)
    assert preempt_pod(acct, members[0], {"n0": ["ns-va"]}) == {}
