"""The reclaim action: a starving queue takes back, from other queues, what they hold beyond
their deserved share, and nothing else."""

from __future__ import annotations

import pytest

from scheduler_core.actions.reclaim import ReclaimAction
from scheduler_core.api.types import TaskStatus
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.framework.arguments import Arguments
from scheduler_core.logutil import v
from tests.builders import (
    CAPACITY_CONF,
    GANG_CONF,
    HELM_CONF,
    Obj,
    configuration,
    evicted_keys,
    evictions,
    node,
    pipelined,
    pod,
    podgroup,
    queue,
    run,
    session,
    task_of,
)


def reclaim_conf(template: str = GANG_CONF) -> SchedulerConfiguration:
    """Proportion in the victim-deciding tier (see ``GANG_CONF``)."""
    return configuration(template, "reclaim")


def borrowed(
    *,
    q2_reclaimable: bool | None = None,
    q2_phase: str | None = None,
    x_cpu: str = "1",
    x_policy: str = "",
    q1_min: int = 1,
    q1_tasks: int = 1,
) -> list[Obj]:
    """q2 runs four 1-cpu tasks on a 4-cpu cluster while q1 (equal weight) waits.

    Proportion gives q1 its request (1 cpu per pending task) and q2 the rest, so q2 holds
    more than it deserves.
    """
    objs = [
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        queue("q1"),
        queue("q2", reclaimable=q2_reclaimable),
        podgroup("job-x", q1_min, queue="q1"),
        podgroup("job-y", 1, queue="q2"),
    ]
    for i in range(q1_tasks):
        objs.append(pod(f"x-{i}", group="job-x", cpu=x_cpu, preemption_policy=x_policy))
    for i, host in enumerate(["n1", "n1", "n2", "n2"]):
        objs.append(pod(f"y-{i}", group="job-y", node_name=host, phase=q2_phase))
    return objs


def test_a_starving_queue_takes_back_one_borrowed_task() -> None:
    ssn = run(borrowed(), reclaim_conf())
    assert evictions(ssn) == [("ns/y-0", "n1", "reclaim", "ns/x-0")]
    assert pipelined(ssn) == {"ns/x-0": "n1"}
    assert task_of(ssn, "ns/y-1").status == TaskStatus.RUNNING


def test_victims_stop_once_the_task_fits() -> None:
    # x needs 2 cpu: two victims on one node, never a third
    ssn = run(borrowed(x_cpu="2"), reclaim_conf(HELM_CONF))
    assert sorted(evicted_keys(ssn)) == ["ns/y-0", "ns/y-1"]
    assert pipelined(ssn) == {"ns/x-0": "n1"}


def test_a_queue_that_lends_nothing_is_left_alone() -> None:
    ssn = run(borrowed(q2_reclaimable=False), reclaim_conf())
    assert evicted_keys(ssn) == []
    assert pipelined(ssn) == {}


def test_bound_tasks_are_not_reclaimed() -> None:
    # Bound (placed, not started yet) is preemptable for preempt but not for reclaim
    ssn = run(borrowed(q2_phase="Pending"), reclaim_conf())
    assert task_of(ssn, "ns/y-0").status == TaskStatus.BOUND
    assert evicted_keys(ssn) == []


def test_preemption_policy_never_keeps_the_task_from_reclaiming() -> None:
    ssn = run(borrowed(x_policy="Never"), reclaim_conf())
    assert evicted_keys(ssn) == []


def test_a_gang_that_cannot_be_pipelined_reclaims_nothing() -> None:
    # job-x needs both 2-cpu tasks; once the first is pipelined, q1 would exceed its
    # deserved share with the second (Preemptive says no), so the gang is not pipelined
    # and the evictions made for the first are undone
    ssn = run(borrowed(q1_min=2, q1_tasks=2, x_cpu="2"), reclaim_conf())
    assert evicted_keys(ssn) == []
    assert pipelined(ssn) == {}
    assert all(task_of(ssn, f"ns/y-{i}").status == TaskStatus.RUNNING for i in range(4))


def _overused_q1() -> list[Obj]:
    """q1 is capped at one task (capability), runs it, and has another job waiting."""
    return [
        node("n1", cpu="2"),
        queue("q1", capability={"cpu": "1", "memory": "1Gi", "pods": "1"}),
        queue("q2"),
        podgroup("job-r", 1, queue="q1"),
        podgroup("job-x", 1, queue="q1"),
        podgroup("job-y", 1, queue="q2"),
        pod("r-0", group="job-r", node_name="n1"),
        pod("x-0", group="job-x"),
        pod("y-0", group="job-y", node_name="n1"),
    ]


def test_an_overused_queue_does_not_reclaim(caplog: pytest.LogCaptureFixture) -> None:
    probe = session(_overused_q1(), reclaim_conf())
    assert probe.overused(probe.queues["q1"])
    caplog.set_level(v(3), logger="scheduler_core.actions")
    ssn = run(_overused_q1(), reclaim_conf())
    assert evicted_keys(ssn) == []
    assert any(
        r.levelno == v(3) and r.getMessage() == "Queue <q1> is overused, ignore it."
        for r in caplog.records
    )


def test_a_queue_that_may_not_grow_by_the_task_does_not_reclaim(
    caplog: pytest.LogCaptureFixture,
) -> None:
    objs = [
        node("n1", cpu="2"),
        queue("q1", capability={"cpu": "1"}),
        queue("q2"),
        podgroup("job-r", 1, queue="q1"),
        podgroup("job-x", 1, queue="q1"),
        podgroup("job-y", 1, queue="q2"),
        pod("r-0", group="job-r", node_name="n1", cpu="500m"),
        pod("x-0", group="job-x", cpu="1"),
        pod("y-0", group="job-y", node_name="n1", cpu="1500m"),
    ]
    probe = session(objs, reclaim_conf())
    assert not probe.overused(probe.queues["q1"])
    caplog.set_level(v(3), logger="scheduler_core.actions")
    ssn = run(objs, reclaim_conf())
    assert evicted_keys(ssn) == []
    assert any(
        r.getMessage() == "Queue <q1> cannot reclaim for task <x-0>, skip" for r in caplog.records
    )


def test_a_task_that_already_fits_is_pipelined_without_eviction_but_only_beside_reclaimees() -> (
    None
):
    # Volcano's reclaim only looks at nodes holding reclaimees: n0 is empty and would fit,
    # yet x goes to n1, where it fits in the idle room next to q2's task, evicting nothing.
    objs = [
        node("n0", cpu="2"),
        node("n1", cpu="2"),
        queue("q1"),
        queue("q2"),
        podgroup("job-x", 1, queue="q1"),
        podgroup("job-y", 1, queue="q2"),
        pod("x-0", group="job-x"),
        pod("y-0", group="job-y", node_name="n1"),
    ]
    ssn = run(objs, reclaim_conf(HELM_CONF))
    assert evicted_keys(ssn) == []
    assert pipelined(ssn) == {"ns/x-0": "n1"}


def _within_deserved() -> list[Obj]:
    """q2 holds exactly its deserved share; q3 (not reclaimable) fills the rest."""
    return [
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        queue("q1"),
        queue("q2", weight=2),
        queue("q3", reclaimable=False),
        podgroup("job-x", 1, queue="q1"),
        podgroup("job-y", 1, queue="q2"),
        podgroup("job-z", 1, queue="q3"),
        pod("x-0", group="job-x"),
        pod("y-0", group="job-y", node_name="n1"),
        pod("y-1", group="job-y", node_name="n1"),
        pod("z-0", group="job-z", node_name="n2"),
        pod("z-1", group="job-z", node_name="n2"),
    ]


def test_proportion_in_the_deciding_tier_protects_a_queue_within_its_share() -> None:
    ssn = run(_within_deserved(), reclaim_conf(GANG_CONF))
    assert evicted_keys(ssn) == []


def test_with_helm_tiers_gang_and_conformance_decide_alone() -> None:
    # Volcano's tier rule: tier 1 (gang + conformance) reaches a verdict, so proportion in
    # tier 2 is never asked and q2 loses a task although it is within its deserved share.
    ssn = run(_within_deserved(), reclaim_conf(HELM_CONF))
    assert evicted_keys(ssn) == ["ns/y-0"]


def test_key_log_lines_are_volcanos(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(v(5), logger="scheduler_core.actions")
    run(borrowed(), reclaim_conf())
    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert (v(5), "Enter Reclaim ...") in lines
    assert (v(5), "Leaving Reclaim ...") in lines
    assert (v(3), "Considering Task <ns/x-0> on Node <n1>.") in lines
    assert (v(3), "Try to reclaim Task <ns/y-0> for Tasks <ns/x-0>") in lines
    assert (v(4), "No preemptors in Queue <q2>, break.") in lines


def test_arguments() -> None:
    action = ReclaimAction()
    action.initialize(Arguments({}))
    assert action.enable_predicate_error_cache is True
    action.initialize(Arguments({"predicateErrorCacheEnable": False}))
    assert action.enable_predicate_error_cache is False


def _cheap_pods_first() -> list[Obj]:
    """n1 (4 cpu) runs q2's a (1 cpu), b (1 cpu) and c (2 cpu), lowest value first; q2
    deserves no cpu (capacity), so all three may go. q1's p needs 2 cpu; n2 has no room."""
    objs = [
        node("n1", cpu="4", memory="64Gi"),
        node("n2", cpu="1", memory="64Gi"),
        queue("q1", deserved={"cpu": "5", "memory": "8Gi"}),
        queue("q2", deserved={"cpu": "0", "memory": "8Gi"}),
        podgroup("victims", 1, queue="q2"),
        podgroup("waiting", 1, queue="q1", phase="Inqueue"),
        pod("p", group="waiting", cpu="2"),
    ]
    for name, cpu, priority, host in (
        ("a", "1", 1, "n1"),
        ("b", "1", 2, "n1"),
        ("c", "2", 3, "n1"),
    ):
        objs.append(pod(name, group="victims", cpu=cpu, priority=priority, node_name=host))
    # A fourth member elsewhere keeps the gang above minMember whatever goes from n1.
    objs.append(pod("d", group="victims", cpu="1", priority=4, node_name="n2"))
    return objs


def test_minimal_victims_are_the_fewest_not_the_first_that_fit() -> None:
    """Volcano's reclaim evicts lowest value first until p fits (a and b); with
    ``reclaim.minimalVictims`` one eviction does it: c alone frees the same 2 cpu."""
    volcano = run(_cheap_pods_first(), configuration(CAPACITY_CONF, "reclaim"))
    assert sorted(evicted_keys(volcano)) == ["ns/a", "ns/b"]
    minimal = configuration(CAPACITY_CONF, "reclaim", {"reclaim": {"reclaim.minimalVictims": True}})
    ssn = run(_cheap_pods_first(), minimal)
    assert evicted_keys(ssn) == ["ns/c"] and pipelined(ssn) == {"ns/p": "n1"}
