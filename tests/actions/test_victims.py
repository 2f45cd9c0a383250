"""Shared victim helpers, and ``select_victims_for_node`` (the engine's answer to the
extender's preempt verb)."""

from __future__ import annotations

import pytest

from scheduler_core.actions.victims import (
    PredicateHelper,
    VictimChoice,
    calculate_num_feasible_nodes_to_find,
    count_pdb_violations,
    select_victims_for_node,
    sort_by_importance,
    validate_victims,
)
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.pdb import PodDisruptionBudget
from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.framework.fit import FitCode, FitError
from scheduler_core.framework.session import Session
from tests.actions.builders import (
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
    task_of,
)


def task(
    name: str,
    cpu: float = 1000,
    *,
    priority: int = 0,
    labels: dict[str, str] | None = None,
    started: str = "",
    job: str = "ns/j",
    role: str = "",
) -> TaskInfo:
    req = Resource(cpu, 0, {"pods": 1})
    return TaskInfo(
        uid=name,
        name=name,
        namespace="ns",
        job=job,
        resreq=req,
        init_resreq=req,
        status=TaskStatus.RUNNING,
        pod_priority=priority,
        labels=labels or {},
        start_time=started,
        role=role,
    )


# --- small helpers ------------------------------------------------------------------------


def test_validate_victims_counts_future_idle_and_every_victim() -> None:
    n = NodeInfo.new("n1", Resource(2000, 0, {"pods": 110}))
    running = task("r", 2000)
    n.add_task(running)
    assert validate_victims(task("p", 1000), n, []) is not None
    assert validate_victims(task("p", 1000), n, [running]) is None
    assert validate_victims(task("p", 3000), n, [running]) is not None
    empty = NodeInfo.new("n2", Resource(2000, 0, {"pods": 110}))
    assert validate_victims(task("p", 1000), empty, []) is None  # no victim needed


def test_sort_by_importance_is_priority_then_earliest_start() -> None:
    tasks = [
        task("late", priority=5, started="2024-01-01T12:00:00Z"),
        task("low", priority=1, started="2024-01-01T01:00:00Z"),
        task("early", priority=5, started="2024-01-01T08:00:00Z"),
    ]
    assert [t.name for t in sort_by_importance(tasks)] == ["early", "late", "low"]


@pytest.mark.parametrize(
    ("nodes", "percentage", "expected"),
    [
        (50, 0, 50),  # small clusters are searched whole
        (100, 0, 100),
        (1000, 0, 420),  # adaptive: 50 - 1000/125 = 42%
        (5000, 0, 500),  # 50 - 40 = 10%
        (10000, 0, 500),  # floor of 5%
        (1000, 100, 1000),
        (1000, 20, 200),
        (300, 10, 100),  # never below 100
    ],
)
def test_feasible_nodes_to_find(nodes: int, percentage: int, expected: int) -> None:
    assert calculate_num_feasible_nodes_to_find(nodes, percentage) == expected


def test_predicate_helper_caches_errors_per_job_role_and_rotates() -> None:
    nodes = [NodeInfo.new(f"n{i}", Resource(1000, 0, {"pods": 110})) for i in range(3)]
    calls: list[str] = []

    def predicate(t: TaskInfo, n: NodeInfo) -> FitError | None:
        calls.append(n.name)
        if n.name == "n1":
            return FitError(t.key, n.name, FitCode.UNSCHEDULABLE_AND_UNRESOLVABLE, ["no"])
        return None

    helper = PredicateHelper()
    found, errors = helper.predicate_nodes(task("a", role="worker"), nodes, predicate)
    assert [n.name for n in found] == ["n0", "n2"] and set(errors) == {"n1"}
    calls.clear()
    found, errors = helper.predicate_nodes(task("b", role="worker"), nodes, predicate)
    assert "n1" not in calls and set(errors) == {"n1"}  # same job and role: cached
    calls.clear()
    helper.predicate_nodes(task("c", role=""), nodes, predicate)
    helper.predicate_nodes(task("c", role=""), nodes, predicate)
    assert calls.count("n1") == 2  # no role: never cached

    # past the cut-off, the next call starts where the previous one stopped
    many = [NodeInfo.new(f"m{i:03d}", Resource(1000, 0, {"pods": 110})) for i in range(200)]
    helper = PredicateHelper()
    first, _ = helper.predicate_nodes(task("d"), many, lambda t, n: None)
    second, _ = helper.predicate_nodes(task("e"), many, lambda t, n: None)
    assert len(first) == 100 and first[0].name == "m000"
    assert second[0].name == "m100"


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


# --- select_victims_for_node --------------------------------------------------------------


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
) -> VictimChoice | None:
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
    assert [t.key for t in choice.victims] == ["ns/l1"]
    assert choice.victims[0] is task_of(ssn, "ns/l1")  # the session's own task
    assert choice.num_pdb_violations == 0
    assert _state(ssn) == before


def test_victims_come_most_important_first_with_their_pdb_violations() -> None:
    cluster = same_queue_cluster(p_cpu="2", extra=(pdb("guard", {"app": "l2"}, allowed=0),))
    ssn = session(cluster, PREEMPT)
    choice = choose(ssn)
    assert choice is not None
    assert [t.key for t in choice.victims] == ["ns/l2", "ns/l1"]
    assert choice.num_pdb_violations == 1


def test_a_valid_minimal_proposal_is_kept() -> None:
    ssn = session(same_queue_cluster(), PREEMPT)
    choice = choose(ssn, ["ns-l2"])
    assert choice is not None and [t.key for t in choice.victims] == ["ns/l2"]


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
    choice = choose(ssn, proposal)
    assert choice is not None and [t.key for t in choice.victims] == ["ns/l1"]


def test_a_proposal_the_rules_forbid_is_replaced() -> None:
    ssn = session(same_queue_cluster(l2_preemptable=False), PREEMPT)
    choice = choose(ssn, ["ns-l2"])
    assert choice is not None and [t.key for t in choice.victims] == ["ns/l1"]


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
    assert len(choice.victims) == 1 and choice.victims[0].key in {"ns/y0", "ns/y1"}
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
