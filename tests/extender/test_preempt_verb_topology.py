"""preempt for a gang with a network topology request: victims only on the nodes of the one
domain that then holds every member not placed yet; none anywhere when no domain could."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.topology import NetworkTopologyRequest, TopologyMode, build_from_labels
from scheduler_core.extender.preempt_verb import preempt_pod
from tests.builders import accounting, node, pod, podgroup, priority_class, queue

HARD_LEAF = NetworkTopologyRequest(TopologyMode.HARD, highest_tier_allowed=1)
SOFT_LEAF = NetworkTopologyRequest(TopologyMode.SOFT, highest_tier_allowed=1)
LEAF_A = {f"n{i}" for i in range(4)}
LEAF_B = {f"n{i}" for i in range(4, 8)}


def low(name: str, node_name: str, **extra: Any) -> dict[str, Any]:
    return pod(
        name,
        group="victims",
        cpu="1",
        node_name=node_name,
        priority=10,
        priority_class="low",
        **extra,
    )


def high(name: str) -> dict[str, Any]:
    return pod(name, group="job", cpu="1", priority=1000, priority_class="high")


def two_leaves(
    victims: list[str], keepers: tuple[str, ...] = (), members: int = 4, running: str = ""
) -> list[dict[str, Any]]:
    """8 nodes of 1 cpu, n0-n3 in leaf a and n4-n7 in leaf b; a low-priority pod on each
    node of ``victims`` (one that may not be preempted on each of ``keepers``); a gang of
    ``members`` high-priority pods waits (one of them running on ``running``)."""
    objs: list[dict[str, Any]] = [
        node(f"n{i}", cpu="1", labels={"spine": "s", "leaf": "a" if i < 4 else "b"})
        for i in range(8)
    ]
    objs += [queue("q"), priority_class("low", 10), priority_class("high", 1000)]
    objs.append(podgroup("victims", 1, queue="q", priority_class="low"))
    objs += [low(f"v-{n}", n) for n in victims]
    objs += [low(f"k-{n}", n, preemptable=False) for n in keepers]
    objs.append(podgroup("job", members, queue="q", priority_class="high", phase="Inqueue"))
    pending = members - (1 if running else 0)
    objs += [high(f"m{i}") for i in range(pending)]
    if running:
        objs.append(
            pod(
                "m-run",
                group="job",
                cpu="1",
                priority=1000,
                priority_class="high",
                node_name=running,
            )
        )
    return objs


def with_request(
    objs: list[dict[str, Any]], request: NetworkTopologyRequest | None
) -> QueueAccounting:
    """The keeper's session with the tree from the nodes' labels and the gang's request."""
    acct, _ = accounting(objs)
    ssn = acct.session()
    ssn.snapshot.topology = build_from_labels(
        ["spine", "leaf"], {n.name: n.labels for n in ssn.nodes.values()}
    )
    if request is not None:
        ssn.jobs["ns/job"].network_topology = request
    return acct


def proposed(nodes: list[str]) -> dict[str, list[str]]:
    """kube-scheduler's candidates: each node with its low-priority pod."""
    return {n: [f"ns-v-{n}"] for n in nodes}


def test_victims_are_offered_only_in_the_leaf_that_then_holds_the_whole_gang() -> None:
    # leaf a: 2 victims (n0, n1) and 2 free nodes; leaf b: 3 victims and 1 free node.
    victims = ["n0", "n1", "n4", "n5", "n6"]
    acct = with_request(two_leaves(victims), HARD_LEAF)
    result = preempt_pod(acct, high("m0"), proposed(victims))
    assert set(result) == {"n0", "n1"}
    assert {g.node for g in acct.grants.grants()} == {"n0", "n1"}


def test_without_a_request_victims_are_offered_on_every_candidate() -> None:
    victims = ["n0", "n1", "n4", "n5", "n6"]
    acct = with_request(two_leaves(victims), None)
    assert set(preempt_pod(acct, high("m0"), proposed(victims))) == set(victims)


def test_no_leaf_can_hold_the_gang_even_with_victims_so_none_are_offered() -> None:
    # A pod that may not be preempted in each leaf: 3 nodes a leaf for a gang of 4.
    victims = ["n0", "n1", "n4", "n5"]
    acct = with_request(two_leaves(victims, keepers=("n2", "n6")), HARD_LEAF)
    assert preempt_pod(acct, high("m0"), proposed(victims)) == {}
    assert list(acct.grants.grants()) == []


def test_a_soft_request_no_leaf_satisfies_is_answered_as_without_one() -> None:
    victims = ["n0", "n1", "n4", "n5"]
    objs = two_leaves(victims, keepers=("n2", "n6"))
    soft = preempt_pod(with_request(objs, SOFT_LEAF), high("m0"), proposed(victims))
    plain = preempt_pod(with_request(objs, None), high("m0"), proposed(victims))
    assert set(soft) == set(plain) != set()


def test_a_member_running_in_leaf_b_keeps_the_victims_there_though_leaf_a_is_cheaper() -> None:
    victims = ["n0", "n4", "n5"]
    acct = with_request(two_leaves(victims, running="n6"), HARD_LEAF)
    result = preempt_pod(acct, high("m0"), proposed(victims))
    assert set(result) <= LEAF_B and result


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from(["victim", "keeper", "free"]), min_size=8, max_size=8),
    st.integers(2, 4),
    st.sets(st.integers(0, 7)),
)
def test_a_hard_gang_is_never_offered_victims_outside_one_leaf(
    shape: list[str], members: int, asked: set[int]
) -> None:
    victims = [f"n{i}" for i, what in enumerate(shape) if what == "victim"]
    keepers = tuple(f"n{i}" for i, what in enumerate(shape) if what == "keeper")
    acct = with_request(two_leaves(victims, keepers, members), HARD_LEAF)
    candidates = proposed([n for n in victims if int(n[1:]) in asked])
    result = preempt_pod(acct, high("m0"), candidates)
    assert set(result) <= LEAF_A or set(result) <= LEAF_B
