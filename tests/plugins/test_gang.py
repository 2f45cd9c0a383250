"""gang: every hook through a real session, with cases on both sides of each threshold."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework.statement import Statement
from scheduler_core.plugins.gang import (
    NOT_ENOUGH_PODS_OF_TASK,
    NOT_ENOUGH_TASKS,
)
from tests.builders import keys, node, pod, podgroup, session, task_of, tiers

GANG = tiers("gang")
ROLE = "volcano.sh/task-spec"


def gang_job(
    name: str,
    min_member: int,
    running: int = 0,
    pending: int = 0,
    *,
    roles: list[str] | None = None,
    min_task_member: dict[str, int] | None = None,
    releasing: int = 0,
    created: str = "",
) -> list[dict[str, Any]]:
    """A PodGroup with ``running`` pods on n1, then ``releasing``, then ``pending`` pods;
    ``roles`` gives each pod's task role in that order."""
    objs: list[dict[str, Any]] = [
        podgroup(name, min_member, min_task_member=min_task_member, created=created)
    ]
    kinds = ["run"] * running + ["rel"] * releasing + ["pend"] * pending
    for i, kind in enumerate(kinds):
        notes = {ROLE: roles[i]} if roles else {}
        objs.append(
            pod(
                f"{name}-{i}",
                group=name,
                node_name="" if kind == "pend" else "n1",
                deleting=kind == "rel",
                cpu="100m",
                memory="100Mi",
                annotations=notes,
            )
        )
    return objs


def cluster(*jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [node("n1", "64", "256Gi")]
    for job in jobs:
        objs.extend(job)
    return objs


# --- JobValid -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "reason", "message"),
    [
        (
            gang_job("j", 3, pending=2),
            NOT_ENOUGH_TASKS,
            "Not enough valid tasks for gang-scheduling, valid: 2, min: 3",
        ),
        (gang_job("j", 3, running=1, pending=2), None, None),
        (
            gang_job("j", 2, pending=2, roles=["worker", "worker"], min_task_member={"ps": 1}),
            NOT_ENOUGH_PODS_OF_TASK,
            "Not enough valid pods of each task for gang-scheduling",
        ),
        (
            gang_job("j", 2, pending=2, roles=["worker", "ps"], min_task_member={"ps": 1}),
            None,
            None,
        ),
        # minMember below the sum of minTaskMember: the role check is skipped (Volcano).
        (
            gang_job("j", 1, pending=1, roles=["worker"], min_task_member={"ps": 1, "w": 1}),
            None,
            None,
        ),
    ],
)
def test_job_valid(job: list[dict[str, Any]], reason: str | None, message: str | None) -> None:
    ssn = session(cluster(job), GANG)
    result = ssn.job_valid(ssn.jobs["ns/j"])
    if reason is None:
        assert result is None
    else:
        assert result is not None and not result.is_success
        assert (result.reason_code, result.message) == (reason, message)


# --- Preemptable / Reclaimable --------------------------------------------------------------


def test_victims_protect_min_available_across_two_jobs_in_one_call() -> None:
    objs = cluster(
        gang_job("a", 2, running=3),  # one task above its gang: one victim
        gang_job("b", 1, running=1),  # exactly its gang: none
        gang_job("c", 1, running=3),  # two above: two victims
        gang_job("p", 1, pending=1),
    )
    ssn = session(objs, GANG)
    preemptor = task_of(ssn, "ns/p-0")
    preemptees = [
        task_of(ssn, k)
        for k in ("ns/a-0", "ns/b-0", "ns/c-0", "ns/a-1", "ns/c-1", "ns/a-2", "ns/c-2")
    ]
    expected = ["ns/a-0", "ns/c-0", "ns/c-1"]
    assert keys(ssn.preemptable(preemptor, preemptees)) == expected
    assert keys(ssn.reclaimable(preemptor, preemptees)) == expected


def test_no_victim_when_every_job_is_at_its_gang() -> None:
    objs = cluster(gang_job("a", 2, running=2), gang_job("p", 1, pending=1))
    ssn = session(objs, GANG)
    preemptees = [task_of(ssn, "ns/a-0"), task_of(ssn, "ns/a-1")]
    assert ssn.preemptable(task_of(ssn, "ns/p-0"), preemptees) == []


def test_victims_are_counted_from_ready_tasks_not_from_all_tasks() -> None:
    # 3 tasks but only 2 ready (1 pending): min 2 leaves nothing to take.
    objs = cluster(gang_job("a", 2, running=2, pending=1), gang_job("p", 1, pending=1))
    ssn = session(objs, GANG)
    preemptees = [task_of(ssn, "ns/a-0"), task_of(ssn, "ns/a-1")]
    assert ssn.preemptable(task_of(ssn, "ns/p-0"), preemptees) == []


# --- JobOrder, JobReady, JobPipelined, JobStarving ------------------------------------------


def test_job_order_puts_jobs_short_of_their_gang_first() -> None:
    objs = cluster(
        gang_job("ready", 1, running=1, created="2024-01-01T00:00:00Z"),
        gang_job("short", 2, running=1, pending=1, created="2024-01-02T00:00:00Z"),
        gang_job("ready2", 1, running=1, created="2024-01-03T00:00:00Z"),
    )
    ssn = session(objs, GANG)
    ready, short, ready2 = ssn.jobs["ns/ready"], ssn.jobs["ns/short"], ssn.jobs["ns/ready2"]
    assert ssn.job_order_fn(short, ready) is True
    assert ssn.job_order_fn(ready, short) is False
    # Both ready: gang has no opinion, creation time decides.
    assert ssn.job_order_compare(ready, ready2) == 0
    assert ssn.job_order_fn(ready, ready2) is True


@pytest.mark.parametrize(
    ("job", "ready"),
    [
        (gang_job("j", 2, running=2), True),
        (gang_job("j", 2, running=1, pending=1), False),
        # enough tasks overall, but the ps role has none placed
        (
            gang_job(
                "j",
                2,
                running=2,
                pending=1,
                roles=["w", "w", "ps"],
                min_task_member={"ps": 1, "w": 1},
            ),
            False,
        ),
        (gang_job("j", 2, running=2, roles=["w", "ps"], min_task_member={"ps": 1, "w": 1}), True),
    ],
)
def test_job_ready(job: list[dict[str, Any]], ready: bool) -> None:
    ssn = session(cluster(job), GANG)
    assert ssn.job_ready(ssn.jobs["ns/j"]) is ready


def test_job_pipelined_counts_pipelined_tasks_and_rejects_otherwise() -> None:
    ssn = session(cluster(gang_job("j", 2, running=1, pending=1)), GANG)
    job = ssn.jobs["ns/j"]
    assert ssn.job_pipelined(job) is False  # Reject, not abstain
    Statement(ssn).pipeline(task_of(ssn, "ns/j-1"), "n1")
    assert ssn.job_pipelined(job) is True
    assert ssn.job_ready(job) is False  # pipelined is not ready


@pytest.mark.parametrize(
    ("job", "starving"),
    [
        (gang_job("j", 3, running=2, pending=1), True),
        (gang_job("j", 3, running=3), False),
        # roles are ignored: the job-level gang is met although ps has nothing placed
        (
            gang_job(
                "j",
                2,
                running=2,
                pending=1,
                roles=["w", "w", "ps"],
                min_task_member={"ps": 1, "w": 1},
            ),
            False,
        ),
    ],
)
def test_job_starving(job: list[dict[str, Any]], starving: bool) -> None:
    ssn = session(cluster(job), GANG)
    assert ssn.job_starving(ssn.jobs["ns/j"]) is starving
