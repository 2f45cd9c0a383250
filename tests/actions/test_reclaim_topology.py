"""Reclaim for a gang with a network topology request: victims inside ONE domain, the one
that then holds every member not placed yet; none at all when no domain could."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.topology import NetworkTopologyRequest, TopologyMode
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.controller.decision import CycleDecision, decide, live_configuration
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.topology_fit import (
    choose_domain,
    count_fitting,
    domain_nodes,
    pending_members,
)
from tests.builders import (
    HELM_CONF,
    Obj,
    configuration,
    node,
    pod,
    podgroup,
    priority_class,
    queue,
    snapshot,
    snapshot_with_label_topology,
)
from tests.controller.reclaim_world import reclaim_conf

LIVE = live_configuration(reclaim_conf())
VOLCANO = reclaim_conf()
LEVELS = ["spine", "leaf"]
HARD_LEAF = NetworkTopologyRequest(TopologyMode.HARD, highest_tier_allowed=1)
SOFT_LEAF = NetworkTopologyRequest(TopologyMode.SOFT, highest_tier_allowed=1)
LEAF_A = {f"n{i}" for i in range(4)}
LEAF_B = {f"n{i}" for i in range(4, 8)}
STARTED = "2024-01-01T00:00:00Z"


def two_leaves(q2_on: list[str], gang: int = 4, gang_cpu: str = "4") -> list[Obj]:
    """8 nodes of 4 cpu, n0-n3 in leaf a and n4-n7 in leaf b (one spine); queue q2 runs a
    4-cpu pod on each node of ``q2_on``; queue q1 (same weight) waits with a gang of
    ``gang`` pods of ``gang_cpu`` each."""
    objs: list[Obj] = [
        node(f"n{i}", cpu="4", labels={"spine": "s", "leaf": "a" if i < 4 else "b"})
        for i in range(8)
    ]
    objs += [queue("q1"), queue("q2")]
    objs += [
        pod(f"b-{name}", queue="q2", cpu="4", node_name=name, started=STARTED) for name in q2_on
    ]
    objs.append(podgroup("g", gang, queue="q1", phase="Inqueue"))
    objs += [pod(f"g-{i}", cpu=gang_cpu, group="g", queue="q1") for i in range(gang)]
    return objs


def topology_snapshot(
    objs: list[Obj], request: NetworkTopologyRequest | None = HARD_LEAF
) -> ClusterSnapshot:
    return snapshot_with_label_topology(
        snapshot(objs), LEVELS, {"g": request} if request is not None else {}
    )


def victim_nodes(decision: CycleDecision) -> set[str]:
    return {e.node for e in decision.evictions}


def preemptor_nodes(decision: CycleDecision) -> set[str]:
    return {e.preemptor_node for e in decision.evictions}


def without_victims(objs: list[Obj], decision: CycleDecision) -> list[Obj]:
    gone = {e.victim.name for e in decision.evictions}
    return [o for o in objs if o["metadata"]["name"] not in gone]


@dataclass(frozen=True)
class Case:
    name: str
    q2_on: list[str]
    conf: SchedulerConfiguration
    victims_in: set[str]
    evicted: int


CASES = [
    # q2 (24 cpu, deserving 16) has 2 pods in leaf a and 4 in leaf b: the live rules let it
    # lose 2, which frees leaf a whole; leaf b would cost 4 and take q2 below its share.
    Case(
        "fewest victims: the leaf with fewer pods to evict", ["n0", "n1", *LEAF_B], LIVE, LEAF_A, 2
    ),
    Case("the other way round", [*LEAF_A, "n4", "n5"], LIVE, LEAF_B, 2),
    # Volcano's reclaim: a queue gives back down to its deserved share (24 -> 16 cpu).
    Case("Volcano's rules, fewest victims", [*LEAF_A, "n4", "n5"], VOLCANO, LEAF_B, 2),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_reclaim_evicts_in_one_leaf_only_and_the_gang_then_fits_there(case: Case) -> None:
    objs = two_leaves(case.q2_on)
    decision = decide(topology_snapshot(objs), case.conf)
    assert len(decision.evictions) == case.evicted
    assert victim_nodes(decision) <= case.victims_in
    assert preemptor_nodes(decision) <= case.victims_in
    assert decision.no_domain == {}
    # Once the victims are gone, placement chooses that very leaf for the whole gang.
    after = open_session(topology_snapshot(without_victims(objs, decision)), case.conf)
    gang = next(j for j in after.jobs.values() if j.name == "g")
    choice = choose_domain(after, gang)
    assert choice is not None and choice.domain is not None
    assert choice.domain.nodes == frozenset(case.victims_in)


def test_no_leaf_can_hold_the_gang_after_reclaim_so_nothing_is_evicted_and_it_is_said() -> None:
    # q2 has 3 pods in each leaf: a leaf freed whole would cost 3 pods and take q2 (24
    # cpu, deserving 16) below its share; across leaves 2 would do, but in vain.
    objs = two_leaves(["n0", "n1", "n2", "n4", "n5", "n6"])
    decision = decide(topology_snapshot(objs), LIVE)
    assert decision.evictions == []
    [(members, sentence)] = decision.no_domain.values()
    assert sorted(t.name for t in members) == ["g-0", "g-1", "g-2", "g-3"]
    assert sentence.startswith("no single domain can hold the gang even after reclaim")
    assert "hard, tier ≤ 1" in sentence
    assert "needs 4 pods (cpu 16, memory 4Gi) within one tier-1 domain" in sentence
    assert "the most any tier-1 domain holds is 3 (s/a)" in sentence


def test_a_soft_request_no_leaf_can_satisfy_is_reclaimed_for_as_a_gang_without_one() -> None:
    objs = two_leaves(["n0", "n1", "n2", "n4", "n5", "n6"])
    for conf in (LIVE, VOLCANO):
        soft = decide(topology_snapshot(objs, SOFT_LEAF), conf)
        plain = decide(topology_snapshot(objs, request=None), conf)
        assert [e.victim.key for e in soft.evictions] == [e.victim.key for e in plain.evictions]
        assert soft.no_domain == {}


def test_a_gang_that_fits_one_leaf_as_it_is_gets_no_victims() -> None:
    decision = decide(topology_snapshot(two_leaves(["n0", "n1", "n2"])), LIVE)
    assert decision.evictions == []
    assert decision.no_domain == {}


def test_a_member_already_running_pins_the_leaf_reclaim_frees() -> None:
    # g-run runs on n6 (leaf b): only leaf b may be freed, though leaf a is cheaper.
    objs = two_leaves(["n0", "n4", "n5"], gang=4)
    objs.append(pod("g-run", cpu="4", group="g", queue="q1", node_name="n6", started=STARTED))
    decision = decide(topology_snapshot(objs), VOLCANO)
    assert victim_nodes(decision) <= LEAF_B
    assert preemptor_nodes(decision) <= LEAF_B


def test_the_cycle_preempt_action_leaves_a_topology_gang_to_reclaim_and_the_preempt_verb() -> None:
    # One queue: a low PodGroup fills n0 (leaf a) and n1 (leaf b); a gang of a higher
    # priority class waits. The cycle's preempt action picks victims node by node, across
    # leaves: it preempts for the gang without a request, and not for one with a request.
    objs: list[Obj] = [
        node("n0", cpu="2", labels={"spine": "s", "leaf": "a"}),
        node("n1", cpu="2", labels={"spine": "s", "leaf": "b"}),
        queue("q1"),
        priority_class("high", 1000),
        podgroup("low", 1, queue="q1"),
        podgroup("g", 2, queue="q1", priority_class="high", phase="Inqueue"),
    ]
    objs += [
        pod(f"a{i}", queue="q1", group="low", node_name=f"n{i // 2}", started=STARTED)
        for i in range(4)
    ]
    objs += [pod(f"g-{i}", queue="q1", group="g") for i in range(2)]
    conf = live_configuration(configuration(HELM_CONF, "enqueue, preempt"))
    assert len(decide(topology_snapshot(objs, request=None), conf).evictions) == 2
    assert decide(topology_snapshot(objs), conf).evictions == []


# --- the invariant --------------------------------------------------------------------------


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Obj], NetworkTopologyRequest, bool]:
    """3 leaves of 3 nodes (4 cpu), a and b under spine s0, c under s1, interleaved by name
    (n0 in a, n1 in b, n2 in c, ...: a walk by name crosses leaves); q2 fills most nodes
    with pods of 1-4 cpu (so it is over its share); q1's gang of 2-4 pods of 1-4 cpu asks
    for one leaf or one spine (hard)."""
    objs: list[Obj] = [
        node(f"n{i}", cpu="4", labels={"spine": "s1" if i % 3 == 2 else "s0", "leaf": "abc"[i % 3]})
        for i in range(9)
    ]
    objs += [queue("q1"), queue("q2")]
    for i in range(9):
        sizes = draw(st.sampled_from([[4], [4], [2, 2], [1, 3], [2], [1], []]))
        objs += [
            pod(f"b-{i}-{j}", queue="q2", cpu=str(cpu), node_name=f"n{i}", started=STARTED)
            for j, cpu in enumerate(sizes)
        ]
    size = draw(st.integers(2, 3))
    objs.append(podgroup("g", size, queue="q1", phase="Inqueue"))
    objs += [
        pod(f"g-{i}", cpu=str(draw(st.integers(2, 4))), group="g", queue="q1") for i in range(size)
    ]
    request = draw(
        st.sampled_from(
            [HARD_LEAF, NetworkTopologyRequest(TopologyMode.HARD, highest_tier_allowed=2)]
        )
    )
    return objs, request, draw(st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_reclaim_never_evicts_in_more_than_one_domain_for_one_gang(
    drawn: tuple[list[Obj], NetworkTopologyRequest, bool],
) -> None:
    objs, request, live = drawn
    conf = LIVE if live else VOLCANO
    snap = topology_snapshot(objs, request)
    tier = request.highest_tier_allowed or 1
    decision = decide(snap, conf)
    gang_evictions = [
        e for e in decision.evictions if e.preemptor_job and e.preemptor_job.name == "g"
    ]
    if not gang_evictions:
        return
    assert not decision.no_domain
    # One domain of an allowed tier holds every victim and every member placed for them.
    touched = {e.node for e in gang_evictions} | {e.preemptor_node for e in gang_evictions}
    allowed = [d for t in snap.topology.tiers if t <= tier for d in snap.topology.domains_at(t)]
    assert any(touched <= d.nodes for d in allowed)
    # ... and once they are gone, the whole gang fits inside one such domain, which is
    # the domain placement then chooses (never a node outside it for a hard request).
    after = open_session(topology_snapshot(without_victims(objs, decision), request), conf)
    gang = next(j for j in after.jobs.values() if j.name == "g")
    choice = choose_domain(after, gang)
    assert choice is not None and choice.domain is not None
    members = pending_members(gang)
    assert len(members) == len(gang.tasks)
    assert count_fitting(after, members, domain_nodes(after, choice.domain)) == len(members)


def test_a_malformed_request_gets_no_victims_and_is_told_its_problem() -> None:
    objs = two_leaves(["n0", "n1", *LEAF_B])
    request = NetworkTopologyRequest(problem="mode 'firm' is neither hard nor soft")
    decision = decide(topology_snapshot(objs, request), LIVE)
    assert decision.evictions == []
    [(_, sentence)] = decision.no_domain.values()
    assert sentence.endswith(": mode 'firm' is neither hard nor soft")


def test_a_gang_whose_queue_may_not_reclaim_gets_no_domain_sentence() -> None:
    # q1 at its capability: reclaim cannot help it anywhere, so the domains are not why.
    objs = two_leaves(["n0", "n1", "n2", "n4", "n5", "n6"])
    objs[8] = queue("q1", capability={"cpu": "2"})
    decision = decide(topology_snapshot(objs), VOLCANO)
    assert decision.evictions == []
    assert decision.no_domain == {}
