"""priority: task and job order, preemption by job priority across jobs and by task priority
within a job, and starving as "some task is not placed"."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework.statement import Statement
from tests.builders import (
    keys,
    node,
    pod,
    podgroup,
    priority_class,
    session,
    task_of,
    tiers,
)

PRIORITY = tiers("priority")
CLASSES = [priority_class("high", 1000), priority_class("mid", 500), priority_class("low", 10)]


def job(name: str, pc: str, tasks: list[tuple[int, bool]], min_member: int = 1) -> list[Any]:
    """``tasks``: (pod priority, running?) per pod."""
    objs: list[Any] = [podgroup(name, min_member, priority_class=pc)]
    for i, (prio, running) in enumerate(tasks):
        objs.append(
            pod(
                f"{name}-{i}",
                group=name,
                priority=prio,
                node_name="n1" if running else "",
                cpu="100m",
                memory="100Mi",
            )
        )
    return objs


def cluster(*jobs: list[Any]) -> list[Any]:
    objs: list[Any] = [node("n1", "64", "256Gi"), *CLASSES]
    for j in jobs:
        objs.extend(j)
    return objs


@pytest.mark.parametrize(
    ("preemptor_pc", "victim_pc", "victim"),
    [("high", "low", True), ("mid", "mid", False), ("low", "high", False)],
)
def test_across_jobs_job_priority_decides(preemptor_pc: str, victim_pc: str, victim: bool) -> None:
    # Task priorities point the other way on purpose: they must not matter across jobs.
    objs = cluster(job("p", preemptor_pc, [(1, False)]), job("v", victim_pc, [(9999, True)]))
    ssn = session(objs, PRIORITY)
    result = ssn.preemptable(task_of(ssn, "ns/p-0"), [task_of(ssn, "ns/v-0")])
    assert keys(result) == (["ns/v-0"] if victim else [])


@pytest.mark.parametrize(
    ("preemptor_prio", "victim_prio", "victim"),
    [(100, 50, True), (100, 100, False), (50, 100, False)],
)
def test_within_a_job_task_priority_decides(
    preemptor_prio: int, victim_prio: int, victim: bool
) -> None:
    objs = cluster(job("j", "mid", [(victim_prio, True), (preemptor_prio, False)]))
    ssn = session(objs, PRIORITY)
    result = ssn.preemptable(task_of(ssn, "ns/j-1"), [task_of(ssn, "ns/j-0")])
    assert keys(result) == (["ns/j-0"] if victim else [])


def test_mixed_preemptees_in_one_call() -> None:
    objs = cluster(
        job("p", "mid", [(100, True), (200, False), (50, True)]),
        job("lo", "low", [(1000, True)]),
        job("hi", "high", [(1, True)]),
    )
    ssn = session(objs, PRIORITY)
    preemptees = [task_of(ssn, k) for k in ("ns/hi-0", "ns/p-0", "ns/lo-0", "ns/p-2")]
    assert keys(ssn.preemptable(task_of(ssn, "ns/p-1"), preemptees)) == [
        "ns/p-0",
        "ns/lo-0",
        "ns/p-2",
    ]


def test_task_order_puts_higher_task_priority_first() -> None:
    ssn = session(cluster(job("j", "mid", [(5, False), (7, False), (7, False)])), PRIORITY)
    t5, t7a, t7b = (task_of(ssn, f"ns/j-{i}") for i in range(3))
    assert ssn.task_order_fn(t7a, t5) is True
    assert ssn.task_order_fn(t5, t7a) is False
    assert ssn.task_compare(t7a, t7b) == 0


def test_job_order_puts_higher_job_priority_first() -> None:
    ssn = session(cluster(job("a", "low", [(1, False)]), job("b", "high", [(1, False)])), PRIORITY)
    a, b = ssn.jobs["ns/a"], ssn.jobs["ns/b"]
    assert ssn.job_order_fn(b, a) is True
    assert ssn.job_order_fn(a, b) is False


def test_job_starving_while_any_task_is_not_placed() -> None:
    ssn = session(cluster(job("j", "mid", [(1, True), (1, True), (1, False)])), PRIORITY)
    j = ssn.jobs["ns/j"]
    assert ssn.job_starving(j) is True
    Statement(ssn).pipeline(task_of(ssn, "ns/j-2"), "n1")
    assert ssn.job_starving(j) is False  # pipelined counts as placed


@pytest.mark.parametrize(
    ("conf", "starving"),
    [
        # one tier: gang says no (min 2 reached), priority says yes (a task is pending): no
        (tiers("priority, gang"), False),
        # priority alone in the first tier: its answer stands, gang's tier is never asked
        (tiers("priority", "gang"), True),
        (tiers("gang", "priority"), False),
    ],
)
def test_job_starving_is_answered_by_the_first_tier(conf: str, starving: bool) -> None:
    objs = cluster(job("j", "mid", [(1, True), (1, True), (1, False)], min_member=2))
    ssn = session(objs, conf)
    assert ssn.job_starving(ssn.jobs["ns/j"]) is starving
