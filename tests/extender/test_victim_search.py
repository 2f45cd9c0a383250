"""``select_victims_for_node``: the engine's victim set on one node for the preempt verb, and
the PodDisruptionBudget count that comes with it."""

from __future__ import annotations

import pytest

from scheduler_core.api.pdb import PodDisruptionBudget
from scheduler_core.extender.decisions import NodeVictims
from scheduler_core.extender.victim_search import count_pdb_violations, select_victims_for_node
from scheduler_core.framework.session import Session
from tests.builders import (
    GANG_CONF,
    HELM_CONF,
    PRIORITY_CLASSES,
    Obj,
    configuration,
    node,
    pdb,
    pod,
    podgroup,
    queue,
    session,
    task,
    task_of,
)


def test_pdb_violations_spend_each_budget_victim_by_victim() -> None:
    budget = PodDisruptionBudget("b", "ns", match_labels={"app": "web"}, disruptions_allowed=1)
    web = [task(f"w{i}", labels={"app": "web"}) for i in range(3)]
    assert count_pdb_violations([budget], web[:1]) == 0
    assert count_pdb_violations([budget], web) == 2
    assert count_pdb_violations([budget], [task("x", labels={"app": "db"})]) == 0
    assert count_pdb_violations([budget], [task("nolabels")]) == 0
    everything = PodDisruptionBudget("all", "ns", disruptions_allowed=0)
    assert count_pdb_violations([everything], web) == 0  # empty selector: kube-scheduler skips it
    other_ns = PodDisruptionBudget("b", "other", match_labels={"app": "web"})
    assert count_pdb_violations([other_ns], web) == 0


def keys(ssn: Session, choice: NodeVictims, node_name: str = "n1") -> list[str]:
    """The chosen victims' task keys, in the answer's order."""
    return [ssn.nodes[node_name].tasks[uid].key for uid in choice.uids]


def same_queue_cluster(
    *,
    p_cpu: str = "1",
    node_cpu: str = "2",
    l1_preemptable: bool | None = None,
    l2_preemptable: bool | None = None,
    extra: tuple[Obj, ...] = (),
) -> list[Obj]:
    """n1 (2 cpu) runs L1 (prio 1) and L2 (prio 10) of q1; P (prio 100, q1) needs 1 cpu."""
    return [
        node("n1", cpu=node_cpu),
        queue("q1"),
        queue("q2"),
        *PRIORITY_CLASSES,
        podgroup("job-p", 1, queue="q1", priority_class="high"),
        podgroup("job-l1", 1, queue="q1", priority_class="low"),
        podgroup("job-l2", 1, queue="q1", priority_class="mid"),
        pod("p", group="job-p", cpu=p_cpu, priority=100),
        pod(
            "l1",
            group="job-l1",
            node_name="n1",
            priority=1,
            preemptable=l1_preemptable,
            labels={"app": "l1"},
        ),
        pod(
            "l2",
            group="job-l2",
            node_name="n1",
            priority=10,
            preemptable=l2_preemptable,
            labels={"app": "l2"},
        ),
        *extra,
    ]


PREEMPT = configuration(HELM_CONF, "preempt")
RECLAIM = configuration(GANG_CONF, "reclaim")


def choose(
    ssn: Session, proposed: list[str] | None = None, node_name: str = "n1"
) -> NodeVictims | None:
    return select_victims_for_node(ssn, task_of(ssn, "ns/p"), ssn.nodes[node_name], proposed)


def _state(ssn: Session) -> tuple[object, ...]:
    """Everything a what-if must leave as it found it."""
    n = ssn.nodes["n1"]
    attrs = ssn.plugins["proportion"].queue_opts  # type: ignore[attr-defined]
    return (
        repr(n.idle),
        repr(n.releasing),
        repr(n.pipelined),
        tuple(sorted(n.tasks)),
        tuple(sorted((t.uid, t.status) for j in ssn.jobs.values() for t in j.tasks.values())),
        tuple(sorted((q, repr(a.allocated)) for q, a in attrs.items())),
    )


def test_preempt_rules_give_the_smallest_lowest_value_set() -> None:
    ssn = session(same_queue_cluster(), PREEMPT)
    before = _state(ssn)
    choice = choose(ssn)
    assert choice is not None
    assert choice.mode == "preempt"
    assert keys(ssn, choice) == ["ns/l1"]
    assert ssn.nodes["n1"].tasks[choice.uids[0]] is task_of(ssn, "ns/l1")  # the session's own task
    assert choice.num_pdb_violations == 0
    assert _state(ssn) == before


def test_victims_come_most_important_first_with_their_pdb_violations() -> None:
    cluster = same_queue_cluster(p_cpu="2", extra=(pdb("guard", {"app": "l2"}, allowed=0),))
    ssn = session(cluster, PREEMPT)
    choice = choose(ssn)
    assert choice is not None
    assert keys(ssn, choice) == ["ns/l2", "ns/l1"]
    assert choice.num_pdb_violations == 1


def test_a_valid_minimal_proposal_is_kept() -> None:
    ssn = session(same_queue_cluster(), PREEMPT)
    before = _state(ssn)
    choice = choose(ssn, ["ns-l2"])
    assert choice is not None and keys(ssn, choice) == ["ns/l2"]
    assert _state(ssn) == before  # checked on a copy of the node sharing its tasks


@pytest.mark.parametrize(
    "proposal",
    [
        ["ns-l1", "ns-l2"],  # one of them would do: not minimal
        ["ns-gone"],  # not on the node
        [],  # nothing proposed
    ],
)
def test_other_proposals_are_replaced_by_the_engines_set(proposal: list[str]) -> None:
    ssn = session(same_queue_cluster(), PREEMPT)
    before = _state(ssn)
    choice = choose(ssn, proposal)
    assert choice is not None and keys(ssn, choice) == ["ns/l1"]
    assert _state(ssn) == before


def test_a_proposal_the_rules_forbid_is_replaced() -> None:
    ssn = session(same_queue_cluster(l2_preemptable=False), PREEMPT)
    choice = choose(ssn, ["ns-l2"])
    assert choice is not None and keys(ssn, choice) == ["ns/l1"]


def test_no_set_when_nothing_may_go() -> None:
    ssn = session(same_queue_cluster(l1_preemptable=False, l2_preemptable=False), PREEMPT)
    assert choose(ssn) is None


def test_no_set_where_the_preemptor_already_fits() -> None:
    ssn = session(same_queue_cluster(node_cpu="3"), PREEMPT)
    assert choose(ssn) is None


def cross_queue_cluster(*, q2_reclaimable: bool | None = None) -> list[Obj]:
    """n1 (2 cpu) runs two tasks of q2; P of q1 (equal weight, same priority) needs 1 cpu."""
    return [
        node("n1", cpu="2"),
        queue("q1"),
        queue("q2", reclaimable=q2_reclaimable),
        podgroup("job-p", 1, queue="q1"),
        podgroup("job-y", 1, queue="q2"),
        pod("p", group="job-p"),
        pod("y0", group="job-y", node_name="n1"),
        pod("y1", group="job-y", node_name="n1"),
    ]


def test_reclaim_rules_apply_when_the_queue_has_nothing_to_preempt() -> None:
    ssn = session(cross_queue_cluster(), RECLAIM)
    before = _state(ssn)
    choice = choose(ssn)
    assert choice is not None
    assert choice.mode == "reclaim"
    assert len(choice.uids) == 1 and keys(ssn, choice)[0] in {"ns/y0", "ns/y1"}
    assert _state(ssn) == before


def test_reclaim_rules_respect_a_queue_that_lends_nothing() -> None:
    ssn = session(cross_queue_cluster(q2_reclaimable=False), RECLAIM)
    assert choose(ssn) is None


def test_an_overused_queue_gets_no_reclaim_set() -> None:
    objs = [
        node("n1", cpu="3"),
        queue("q1", capability={"cpu": "1", "memory": "1Gi", "pods": "1"}),
        queue("q2"),
        podgroup("job-p", 1, queue="q1"),
        podgroup("job-r", 1, queue="q1"),
        podgroup("job-y", 1, queue="q2"),
        pod("p", group="job-p"),
        pod("r", group="job-r", node_name="n1"),
        pod("y0", group="job-y", node_name="n1"),
        pod("y1", group="job-y", node_name="n1"),
    ]
    ssn = session(objs, RECLAIM)
    assert ssn.overused(ssn.queues["q1"])
    assert choose(ssn) is None


def test_a_preemptor_outside_the_session_gets_no_set() -> None:
    ssn = session(same_queue_cluster(), PREEMPT)
    stranger = task("stranger", job="ns/none")
    assert select_victims_for_node(ssn, stranger, ssn.nodes["n1"], None) is None


def cheap_pods_first() -> list[Obj]:
    """n1 (4 cpu) runs q1's a (1 cpu) and b (1 cpu) of a low-priority job and c (2 cpu) of a
    mid-priority one; P (high, q1) needs 2 cpu. Lowest value first: a, b, c."""
    return [
        node("n1", cpu="4"),
        queue("q1"),
        *PRIORITY_CLASSES,
        podgroup("job-p", 1, queue="q1", priority_class="high"),
        podgroup("job-l", 1, queue="q1", priority_class="low"),
        podgroup("job-m", 1, queue="q1", priority_class="mid"),
        pod("p", group="job-p", cpu="2", priority=100),
        pod("a", group="job-l", node_name="n1", priority=1),
        pod("b", group="job-l", node_name="n1", priority=2),
        pod("c", group="job-m", cpu="2", node_name="n1", priority=10),
    ]


@pytest.mark.parametrize(
    ("proposal", "expected"),
    [
        (None, ["ns/c"]),  # the engine's own set: one victim, not a and b
        (["ns-a", "ns-b", "ns-c"], ["ns/c"]),  # not minimal: replaced
        (["ns-b", "ns-a"], ["ns/b", "ns/a"]),  # valid and no victim can be spared: kept
    ],
)
def test_the_engines_set_has_the_fewest_victims(
    proposal: list[str] | None, expected: list[str]
) -> None:
    ssn = session(cheap_pods_first(), PREEMPT)
    before = _state(ssn)
    choice = choose(ssn, proposal)
    assert choice is not None and choice.mode == "preempt"
    assert keys(ssn, choice) == expected
    assert _state(ssn) == before
