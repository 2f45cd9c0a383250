"""The fewest-victims search on one node: after removal and reprieve, a set with fewer
victims among every candidate, lowest value first, judged by the same ``fits``.

A set no victim can be dropped from (what removal and reprieve find) may still hold more
victims than needed: two cheap pods where one valuable pod alone would do, or cheap pods
plus the pod whose label blocks the preemptor where that pod and one bigger pod would do.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.actions.util.victims import (
    FEWEST_VICTIMS_CHECKS,
    NodeSimulation,
    SearchBudget,
    eviction_order,
    fits_without,
    select_victims_on_node,
)
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.framework.session import CycleState, Session
from scheduler_core.logutil import v
from tests.builders import (
    HELM_CONF,
    Obj,
    Occupant,
    configuration,
    crowded_node,
    pod_affinity,
    pod_term,
    selector,
    session,
    task_of,
)

CONF = configuration(HELM_CONF, "reclaim")
ANTI_X = pod_affinity(anti=[pod_term(selector({"app": "x"}))])
NEAR_Y = pod_affinity(required=[pod_term(selector({"app": "y"}))])
X = {"app": "x"}
MILLI = {"500m": 500, "1": 1000, "1500m": 1500, "2": 2000, "3": 3000}
Y = {"app": "y"}


class Search:
    """One ``select_victims_on_node`` call on a clone of ``n1`` for the waiting pod ``p``,
    every task on the node a candidate (the plugins' vote is not what is tested here)."""

    def __init__(
        self,
        objs: list[Obj],
        *,
        fewest: bool = True,
        checks: int = FEWEST_VICTIMS_CHECKS,
        check_allocatable: bool = False,
        budget: SearchBudget | None = None,
    ) -> None:
        self.ssn: Session = session(objs, CONF)
        self.preemptor: TaskInfo = task_of(self.ssn, "ns/p")
        self.node: NodeInfo = self.ssn.nodes["n1"]
        self.copy = self.node.clone()
        self.state: CycleState = self.ssn.new_cycle_state(self.preemptor)
        self.check_allocatable = check_allocatable
        victims, self.err = select_victims_on_node(
            self.ssn,
            self.state,
            self.preemptor,
            self.ssn.queues["q1"],
            self.copy,
            lambda t: True,
            victims_fn=lambda _, tasks: tasks,
            check_allocatable=check_allocatable,
            require_fit=True,
            fewest=fewest,
            fewest_checks=checks,
            fewest_budget=budget,
        )
        self.victims = [self.node.tasks[t.uid] for t in victims]
        self.names = sorted(t.name for t in self.victims)

    def order(self) -> list[TaskInfo]:
        """The candidates lowest value first, as the search sees them."""
        return eviction_order(self.ssn, list(self.node.tasks.values()), self.preemptor)

    def fits(self, victims: Sequence[TaskInfo]) -> bool:
        """``fits`` on a fresh clone and cycle state with exactly ``victims`` gone."""
        sim = NodeSimulation.open(
            self.ssn, self.preemptor, self.ssn.queues["q1"], self.node, self.check_allocatable
        )
        for victim in victims:
            sim.remove(sim.node.tasks[victim.uid])
        return sim.fits()


CASES: list[tuple[str, list[Occupant], str, str, Obj | None, list[str], list[str]]] = [
    # name, occupants (lowest value first), node cpu, preemptor cpu, preemptor affinity,
    # removal-and-reprieve set, fewest set
    (
        "one bigger pod frees what two cheap ones do",
        [Occupant("a", "1", 1), Occupant("b", "1", 2), Occupant("c", "2", 3)],
        "4",
        "2",
        None,
        ["a", "b"],
        ["c"],
    ),
    (
        "the labelled pod alone (the reprieve already sheds the cheap pods)",
        [Occupant("a", "1", 1), Occupant("b", "1", 2), Occupant("x", "2", 3, X)],
        "4",
        "2",
        ANTI_X,
        ["x"],
        ["x"],
    ),
    (
        "the labelled pod and one bigger pod instead of cheap pods around it",
        [
            Occupant("a", "1", 1),
            Occupant("x", "1", 2, X),
            Occupant("b", "1", 3),
            Occupant("c", "3", 4),
        ],
        "6",
        "3",
        ANTI_X,
        ["a", "b", "x"],
        ["c", "x"],
    ),
    (
        "a tie at one victim: the less valuable of the two that fit",
        [
            Occupant("a", "1", 1),
            Occupant("b", "1", 2),
            Occupant("c", "2", 3),
            Occupant("d", "2", 4),
        ],
        "6",
        "2",
        None,
        ["a", "b"],
        ["c"],
    ),
    (
        "a tie at two victims: the most valuable pod is spared, not the cheapest taken",
        [
            Occupant("a", "1", 1),
            Occupant("b", "1", 2),
            Occupant("c", "1", 3),
            Occupant("d", "2", 4),
            Occupant("e", "2", 5),
            Occupant("f", "3", 6),
        ],
        "10",
        "4",
        None,
        ["a", "b", "d"],
        ["d", "e"],  # {a, f} frees as much but takes f, the most valuable
    ),
    (
        "required affinity: the pod it needs frees enough but must stay",
        [
            Occupant("a", "1", 1),
            Occupant("b", "1", 2),
            Occupant("y", "2", 3, Y),
            Occupant("c", "3", 4),
        ],
        "7",
        "2",
        NEAR_Y,
        ["a", "b"],
        ["c"],  # {y} comes first and frees 2 cpu, but without it p has no pod to be near
    ),
]


@pytest.mark.parametrize(
    ("occupants", "node_cpu", "cpu", "affinity", "minimal", "fewest"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_fewest_victims(
    occupants: list[Occupant],
    node_cpu: str,
    cpu: str,
    affinity: Obj | None,
    minimal: list[str],
    fewest: list[str],
) -> None:
    objs = crowded_node(occupants, cpu, node_cpu=node_cpu, preemptor_affinity=affinity)
    plain = Search(objs, fewest=False)
    assert [t.name for t in plain.order()] == [o.name for o in occupants]
    assert plain.err is None and plain.names == minimal
    found = Search(objs)
    assert found.err is None and found.names == fewest
    assert fits_without(found.ssn, found.preemptor, found.node, found.victims)


def test_a_spent_budget_keeps_the_minimal_set_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The third case needs three simulations to find its two victims; with two allowed the
    removal-and-reprieve set stands, still valid."""
    occupants, node_cpu, cpu, affinity = CASES[2][1:5]
    assert isinstance(occupants, list) and isinstance(affinity, dict)
    objs = crowded_node(occupants, str(cpu), node_cpu=str(node_cpu), preemptor_affinity=affinity)
    caplog.set_level(v(4), logger="scheduler_core.actions.util.victims")
    spent = Search(objs, checks=2)
    assert spent.err is None and spent.names == ["a", "b", "x"]
    assert fits_without(spent.ssn, spent.preemptor, spent.node, spent.victims)
    assert "minimal but not proven fewest" in caplog.text
    caplog.clear()
    assert Search(objs, checks=3).names == ["c", "x"]
    assert "minimal but not proven fewest" not in caplog.text


def test_searches_sharing_a_budget_spend_it_between_them() -> None:
    """The preempt verb's searches over many nodes share one budget: what one search spent
    is not there for the next, and an empty budget leaves the minimal set."""
    occupants, node_cpu, cpu, affinity = CASES[2][1:5]
    assert isinstance(occupants, list) and isinstance(affinity, dict)
    objs = crowded_node(occupants, str(cpu), node_cpu=str(node_cpu), preemptor_affinity=affinity)
    budget = SearchBudget(5)
    assert Search(objs, budget=budget).names == ["c", "x"]
    assert budget.checks == 2  # three simulations found them
    assert Search(objs, budget=budget).names == ["a", "b", "x"]
    assert budget.checks == 0


def queue_sums(state: CycleState) -> dict[str, tuple[str, ...]]:
    """The plugins' what-if: each charging plugin's allocation of q1 and q2."""
    out: dict[str, tuple[str, ...]] = {}
    for plugin, attrs in state.items():
        if isinstance(attrs, dict):
            out[plugin] = tuple(repr(attrs[q].allocated) for q in ("q1", "q2") if q in attrs)
    return out


def node_state(node: NodeInfo) -> tuple[object, ...]:
    return (
        repr(node.idle),
        repr(node.used),
        repr(node.releasing),
        repr(node.pipelined),
        sorted(node.tasks),
        sorted(node.recorded_status.items()),
        sorted(node.anti_affinity_uids),
        sorted(node.affinity_uids),
    )


@pytest.mark.parametrize(("checks"), [2, FEWEST_VICTIMS_CHECKS])
def test_the_simulation_ends_with_exactly_the_victims_removed(checks: int) -> None:
    """However many sets were tried, the clone and the plugins' cycle state end as if the
    answered victims alone had been removed from a fresh one."""
    occupants, node_cpu, cpu, affinity = CASES[2][1:5]
    assert isinstance(occupants, list) and isinstance(affinity, dict)
    objs = crowded_node(occupants, str(cpu), node_cpu=str(node_cpu), preemptor_affinity=affinity)
    found = Search(objs, checks=checks, check_allocatable=True)
    assert found.err is None
    fresh = NodeSimulation.open(found.ssn, found.preemptor, found.ssn.queues["q1"], found.node)
    for victim in found.victims:
        fresh.remove(fresh.node.tasks[victim.uid])
    assert node_state(found.copy) == node_state(fresh.node)
    assert queue_sums(found.state) == queue_sums(fresh.state)
    assert any(queue_sums(found.state).values())  # a charging plugin took part


# --- property: fewest, then lowest value ----------------------------------------------------


@st.composite
def nodes(draw: st.DrawFn) -> list[Obj]:
    """One node with up to seven running pods of random cpu and priority, some labelled
    app=x, and a waiting pod that may refuse to share the node with app=x."""
    count = draw(st.integers(1, 7))
    occupants = [
        Occupant(
            f"o{i}",
            draw(st.sampled_from(("500m", "1", "1500m", "2", "3"))),
            draw(st.integers(0, 4)),
            draw(st.sampled_from((X, None, None))),
        )
        for i in range(count)
    ]
    used = sum(MILLI[o.cpu] for o in occupants)
    spare = draw(st.sampled_from((0, 500, 1000)))
    cpu = draw(st.sampled_from(("500m", "1", "2", "3", "4")))
    affinity = ANTI_X if draw(st.booleans()) else None
    return crowded_node(occupants, cpu, node_cpu=f"{used + spare}m", preemptor_affinity=affinity)


def colex_key(victims: Sequence[TaskInfo], rank: dict[str, int]) -> tuple[int, ...]:
    """Lower is lower value: the set's ranks, most valuable first, compared in turn."""
    return tuple(sorted((rank[t.uid] for t in victims), reverse=True))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes(), st.booleans())
def test_the_answer_fits_and_no_smaller_or_lower_set_does(
    objs: list[Obj], check_allocatable: bool
) -> None:
    found = Search(objs, check_allocatable=check_allocatable)
    order = found.order()
    rank = {t.uid: i for i, t in enumerate(order)}
    fitting = [
        list(subset)
        for size in range(1, len(order) + 1)
        for subset in combinations(order, size)
        if found.fits(subset)
    ]
    if found.fits([]):
        assert found.victims == []  # nothing to evict: any removal is reprieved
        return
    if found.err is not None:
        assert not fitting  # nothing frees enough
        return
    assert found.victims and found.fits(found.victims)
    assert fits_without(found.ssn, found.preemptor, found.node, found.victims)
    size = len(found.victims)
    assert all(len(s) >= size for s in fitting)
    same_size = [s for s in fitting if len(s) == size]
    assert colex_key(found.victims, rank) == min(colex_key(s, rank) for s in same_size)
    # The clone ends without exactly these victims.
    assert sorted(found.copy.tasks) == sorted(
        set(found.node.tasks) - {t.uid for t in found.victims}
    )


def test_volcano_paths_keep_the_removal_and_reprieve_set() -> None:
    """Without ``fewest`` (Volcano's reclaim and topology-aware preemption) the set is the
    removal-and-reprieve one, even where fewer victims would do."""
    occupants, node_cpu, cpu, _, minimal = CASES[0][1:6]
    assert isinstance(occupants, list) and isinstance(minimal, list)
    objs = crowded_node(occupants, str(cpu), node_cpu=str(node_cpu))
    assert Search(objs, fewest=False).names == minimal
