"""The preempt verb's shortcuts answer exactly as the plain simulation does.

``VictimSearch`` shares the queue plugins' what-if between candidate nodes (when every
simulating plugin is a queue charger) and skips simulating a victim back onto a node whose
resources alone refuse the preemptor. Both must be invisible: over random nodes, victims,
queue loads and proposals, every node's answer equals the one a per-node simulation gives
that puts every victim back for real.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.actions.util.victims import (
    NodeSimulation,
    TaskFilter,
    VictimsHook,
    sort_by_importance,
)
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.task import TaskInfo
from scheduler_core.extender.decisions import NodeVictims
from scheduler_core.extender.victim_search import VictimSearch, queue_sums_only
from scheduler_core.framework.hooks import SIMULATE_REMOVE_TASK
from scheduler_core.framework.session import Session
from tests.builders import (
    HELM_CONF,
    PRIORITY_CLASSES,
    Obj,
    configuration,
    node,
    pod,
    podgroup,
    queue,
    session,
    task_of,
)

PREEMPT = configuration(HELM_CONF, "preempt")
CAPACITY = configuration(HELM_CONF.replace("proportion", "capacity"), "preempt")
NODES = ("n1", "n2", "n3")
CPUS = ("500m", "1", "2")
CAPS = (None, {"cpu": "3"}, {"cpu": "5"}, {"cpu": "8"})
MILLI = {"500m": 500, "1": 1000, "2": 2000, "3": 3000, "4": 4000}


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Obj], dict[str, list[str]]]:
    """Up to three nodes holding low- and mid-priority pods of queues q1 and q2 (weights and
    q1's capability drawn, so q1's deserved share and with it the queue check vary), a
    high-priority pod of q1 waiting, and kube-scheduler's proposals: any order, any subset,
    duplicates allowed."""
    objs: list[Obj] = [
        queue("q1", draw(st.integers(1, 4)), capability=draw(st.sampled_from(CAPS))),
        queue("q2", draw(st.integers(1, 4))),
        *PRIORITY_CLASSES,
        podgroup("hi", 1, queue="q1", priority_class="high", phase="Inqueue"),
        pod("p", group="hi", cpu=draw(st.sampled_from(("1", "2", "3"))), priority=100),
    ]
    proposals: dict[str, list[str]] = {}
    for name in NODES[: draw(st.integers(1, len(NODES)))]:
        free = MILLI[draw(st.sampled_from(("2", "3", "4")))]
        objs.append(node(name, cpu=f"{free}m"))
        uids: list[str] = []
        for i in range(draw(st.integers(1, 6))):
            cpu = draw(st.sampled_from(CPUS))
            if MILLI[cpu] > free:
                break
            free -= MILLI[cpu]
            group = f"{name}-g{i}"
            objs.append(podgroup(group, 1, queue=draw(st.sampled_from(("q1", "q1", "q2")))))
            objs.append(
                pod(
                    group,
                    group=group,
                    cpu=cpu,
                    memory="1Gi",
                    node_name=name,
                    priority=draw(st.sampled_from((1, 10))),
                    priority_class="low",
                    started=f"2026-01-01T00:00:0{draw(st.integers(0, 3))}Z",
                )
            )
            uids.append(f"ns-{group}")
        proposals[name] = draw(st.lists(st.sampled_from(uids), max_size=len(uids) + 1))
    return objs, proposals


def plain_minimal_valid_set(
    search: VictimSearch,
    sim: NodeSimulation,
    uids: Sequence[str],
    accept: TaskFilter,
    hook: VictimsHook,
) -> list[TaskInfo] | None:
    """The minimality check spelled out: every victim is put back for real."""
    del search
    tasks = [sim.node.tasks.get(uid) for uid in dict.fromkeys(uids)]
    if not tasks or any(t is None or not accept(t) for t in tasks):
        return None
    victims = [t for t in tasks if t is not None]
    if {t.uid for t in hook(sim.preemptor, victims)} != {t.uid for t in victims}:
        return None
    for task in victims:
        sim.remove(task)
    if not sim.fits():
        return None
    for task in victims:
        sim.add(task)
        spared = sim.fits()
        sim.remove(task)
        if spared:
            return None
    return sort_by_importance(victims)


@contextmanager
def plain_simulation() -> Iterator[None]:
    """No shortcut: each node simulates its own plugin state and puts each victim back."""
    with patch.object(VictimSearch, "minimal_valid_set", plain_minimal_valid_set):
        yield


def answers(
    ssn: Session, proposals: dict[str, list[str]], *, share_queue_sums: bool
) -> dict[str, NodeVictims | None]:
    """One search over every node in turn, as the verb walks its candidates."""
    search = VictimSearch(ssn, task_of(ssn, "ns/p"), share_queue_sums=share_queue_sums)
    return {
        name: search.on_node(ssn.nodes[name], proposal or None)
        for name, proposal in proposals.items()
    }


def session_state(ssn: Session) -> tuple[Any, ...]:
    return tuple(
        (n.name, repr(n.idle), repr(n.used), tuple(sorted(n.tasks))) for n in ssn.nodes.values()
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.sampled_from((PREEMPT, CAPACITY)))
def test_shortcuts_answer_as_the_plain_simulation_on_every_node(
    cluster: tuple[list[Obj], dict[str, list[str]]], conf: Any
) -> None:
    objs, proposals = cluster
    ssn = session(objs, conf)
    assert queue_sums_only(ssn)
    before = session_state(ssn)
    fast = answers(ssn, proposals, share_queue_sums=True)
    with plain_simulation():
        plain = answers(ssn, proposals, share_queue_sums=False)
    assert fast == plain
    assert session_state(ssn) == before


def heavy_cluster() -> tuple[list[Obj], dict[str, list[str]]]:
    """Two 4-CPU nodes full of q1's 1-CPU pods; the 3-CPU preemptor needs three gone."""
    objs: list[Obj] = [
        queue("q1"),
        queue("q2"),
        *PRIORITY_CLASSES,
        podgroup("hi", 1, queue="q1", priority_class="high", phase="Inqueue"),
        pod("p", group="hi", cpu="3", priority=100),
    ]
    proposals: dict[str, list[str]] = {}
    for name in ("n1", "n2"):
        objs.append(node(name))
        for i in range(4):
            group = f"{name}-g{i}"
            objs.append(podgroup(group, 1, queue="q1", priority_class="low"))
            objs.append(pod(group, group=group, node_name=name, priority=1))
        proposals[name] = [f"ns-{name}-g{i}" for i in range(3)]
    return objs, proposals


def test_a_plugin_other_than_a_queue_charger_gets_every_node_simulated() -> None:
    objs, proposals = heavy_cluster()
    shared = answers(session(objs, PREEMPT), proposals, share_queue_sums=True)
    ssn = session(objs, PREEMPT)
    charge = ssn.hook_fns(SIMULATE_REMOVE_TASK)["proportion"]
    seen: list[str] = []

    def watched(state: Any, preemptor: TaskInfo, victim: TaskInfo, on: NodeInfo) -> None:
        seen.append(on.name)
        charge(state, preemptor, victim, on)

    ssn.add_hook(SIMULATE_REMOVE_TASK, "proportion", watched)
    assert not queue_sums_only(ssn)
    assert answers(ssn, proposals, share_queue_sums=True) == shared
    assert sorted(set(seen)) == ["n1", "n2"]  # each node's removals reached the plugin
    assert all(v is not None and len(v.uids) == 3 for v in shared.values())


def test_queue_chargers_are_asked_once_for_alike_victims_on_many_nodes() -> None:
    objs, proposals = heavy_cluster()
    ssn = session(objs, PREEMPT)
    assert queue_sums_only(ssn)
    calls: list[str] = []
    simulate_remove = Session.simulate_remove_task

    def counted(
        self: Session, state: Any, preemptor: TaskInfo, victim: TaskInfo, on: NodeInfo
    ) -> None:
        calls.append(victim.key)
        simulate_remove(self, state, preemptor, victim, on)

    with patch.object(Session, "simulate_remove_task", counted):
        result = answers(ssn, proposals, share_queue_sums=True)
    assert all(v is not None and len(v.uids) == 3 for v in result.values())
    assert len(calls) == 3  # three victims of one shape: charged once for both nodes
