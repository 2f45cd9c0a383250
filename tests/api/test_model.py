"""Task status mapping, job gang counters and node accounting follow Volcano."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler_core.api.errors import NodeError
from scheduler_core.api.job import JobInfo
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.resource import ZERO, Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import (
    TaskStatus,
    ready_status,
    scheduled_status,
    task_status_from_pod,
    valid_status,
)


@pytest.mark.parametrize(
    ("phase", "node", "deleting", "expected"),
    [
        ("Running", "n1", False, TaskStatus.RUNNING),
        ("Running", "n1", True, TaskStatus.RELEASING),
        ("Pending", "", False, TaskStatus.PENDING),
        ("Pending", "n1", False, TaskStatus.BOUND),
        ("Pending", "n1", True, TaskStatus.RELEASING),
        ("Succeeded", "n1", False, TaskStatus.SUCCEEDED),
        ("Failed", "n1", False, TaskStatus.FAILED),
        ("Unknown", "n1", False, TaskStatus.UNKNOWN),
        ("Weird", "n1", False, TaskStatus.UNKNOWN),
    ],
)
def test_pod_phase_maps_to_task_status(
    phase: str, node: str, deleting: bool, expected: TaskStatus
) -> None:
    assert task_status_from_pod(phase, node, deleting) == expected


def task(uid: str, status: TaskStatus, cpu: float = 1000, role: str = "") -> TaskInfo:
    req = Resource(cpu, 0, {"pods": 1})
    return TaskInfo(
        uid=uid,
        name=uid,
        namespace="ns",
        job="ns/j",
        resreq=req,
        init_resreq=req,
        status=status,
        role=role,
        node_name="n" if status != TaskStatus.PENDING else "",
    )


def job_with(*statuses: TaskStatus, min_available: int = 3) -> JobInfo:
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", min_available=min_available)
    for i, s in enumerate(statuses):
        job.add_task_info(task(f"t{i}", s))
    return job


def test_gang_counters() -> None:
    job = job_with(
        TaskStatus.RUNNING,
        TaskStatus.BINDING,
        TaskStatus.PIPELINED,
        TaskStatus.PENDING,
        TaskStatus.SUCCEEDED,
        TaskStatus.RELEASING,
    )
    assert job.ready_task_num() == 3  # running, binding, succeeded
    assert job.waiting_task_num() == 1
    assert job.valid_task_num() == 5  # all but releasing
    assert job.is_ready() and job.is_pipelined() and not job.is_starving()


def test_starving_until_ready_plus_waiting_reach_min_available() -> None:
    job = job_with(TaskStatus.RUNNING, TaskStatus.PIPELINED, TaskStatus.PENDING)
    assert job.is_starving()
    assert not job.is_ready()
    job.update_task_status(job.tasks["t2"], TaskStatus.PIPELINED)
    assert not job.is_starving() and job.is_pipelined() and not job.is_ready()


def test_allocated_follows_status_changes() -> None:
    job = job_with(TaskStatus.RUNNING, TaskStatus.PENDING)
    assert job.allocated.milli_cpu == 1000
    job.update_task_status(job.tasks["t1"], TaskStatus.ALLOCATED)
    assert job.allocated.milli_cpu == 2000
    job.update_task_status(job.tasks["t0"], TaskStatus.RELEASING)
    assert job.allocated.milli_cpu == 1000
    assert job.total_request.milli_cpu == 2000


def test_min_task_member_checks_per_role() -> None:
    job = JobInfo(
        uid="ns/j",
        name="j",
        namespace="ns",
        queue="q",
        min_available=3,
        task_min_available={"ps": 1, "worker": 2},
    )
    job.add_task_info(task("ps0", TaskStatus.RUNNING, role="ps"))
    job.add_task_info(task("w0", TaskStatus.RUNNING, role="worker"))
    job.add_task_info(task("w1", TaskStatus.PENDING, role="worker"))
    assert job.check_task_valid()
    assert not job.check_task_ready()
    assert job.check_task_starving()
    job.update_task_status(job.tasks["w1"], TaskStatus.PIPELINED)
    assert job.check_task_pipelined() and not job.check_task_ready()
    assert not job.check_task_starving()


def test_role_checks_pass_when_min_member_is_below_the_role_total() -> None:
    job = JobInfo(
        uid="ns/j",
        name="j",
        namespace="ns",
        queue="q",
        min_available=1,
        task_min_available={"worker": 2},
    )
    job.add_task_info(task("w0", TaskStatus.PENDING, role="worker"))
    assert job.check_task_ready() and job.check_task_valid()


@given(st.lists(st.sampled_from(list(TaskStatus)), max_size=8))
def test_the_gang_counters_count_the_tasks_their_status_predicates_admit(
    statuses: list[TaskStatus],
) -> None:
    job = job_with(*statuses)
    assert job.ready_task_num() == sum(map(ready_status, statuses))
    assert job.valid_task_num() == sum(map(valid_status, statuses))
    assert job.scheduled_task_num() == sum(map(scheduled_status, statuses))


@given(st.lists(st.sampled_from(list(TaskStatus)), max_size=8))
def test_a_job_whose_roles_ask_no_minimum_meets_every_role_check(
    statuses: list[TaskStatus],
) -> None:
    job = job_with(*statuses, min_available=1)
    # The same job with a role minimum of zero walks its tasks: the same answers.
    walked = job_with(*statuses, min_available=1)
    walked.task_min_available = {"": 0}
    for check in ("check_task_valid", "check_task_ready", "check_task_pipelined"):
        assert getattr(job, check)() is True
        assert getattr(walked, check)() is True
    assert job.check_task_starving() == walked.check_task_starving()


def test_elastic_is_what_is_allocated_beyond_min_resources() -> None:
    job = job_with(TaskStatus.RUNNING, TaskStatus.RUNNING)
    job.min_resources = Resource(1500, 0)
    elastic = job.get_elastic_resources()
    assert elastic.milli_cpu == 500


def node() -> NodeInfo:
    return NodeInfo.new("n", Resource(4000, 0, {"pods": 10}))


@pytest.mark.parametrize(
    ("status", "idle", "used", "releasing", "pipelined"),
    [
        (TaskStatus.RUNNING, 3000, 1000, 0, 0),
        (TaskStatus.RELEASING, 3000, 1000, 1000, 0),
        (TaskStatus.PIPELINED, 4000, 0, 0, 1000),
        (TaskStatus.BINDING, 3000, 1000, 0, 0),
    ],
)
def test_node_accounting_by_task_status(
    status: TaskStatus, idle: float, used: float, releasing: float, pipelined: float
) -> None:
    n = node()
    t = task("t", status)
    n.add_task(t)
    assert (n.idle.milli_cpu, n.used.milli_cpu, n.releasing.milli_cpu, n.pipelined.milli_cpu) == (
        idle,
        used,
        releasing,
        pipelined,
    )
    assert n.future_idle().milli_cpu == idle + releasing - pipelined
    n.remove_task(t)
    assert (n.idle.milli_cpu, n.used.milli_cpu) == (4000, 0)


def test_update_undoes_the_status_recorded_at_add_time() -> None:
    n = node()
    t = task("t", TaskStatus.RUNNING)
    n.add_task(t)
    t.status = TaskStatus.RELEASING  # changed in place, as a statement does
    n.update_task(t)
    assert (n.idle.milli_cpu, n.releasing.milli_cpu, n.used.milli_cpu) == (3000, 1000, 1000)


def test_binding_beyond_idle_is_refused() -> None:
    n = node()
    with pytest.raises(NodeError, match="insufficient cpu"):
        n.add_task(task("big", TaskStatus.BINDING, cpu=5000))
    assert n.tasks == {}


def test_adding_the_same_task_twice_is_refused() -> None:
    n = node()
    t = task("t", TaskStatus.RUNNING)
    n.add_task(t)
    with pytest.raises(NodeError, match="already on node"):
        n.add_task(t)


def test_an_emptied_node_is_the_node_with_every_task_removed() -> None:
    node = NodeInfo.new("n", Resource(4000, 8e9, {"pods": 110}), labels={"a": "b"})
    for i, status in enumerate((TaskStatus.RUNNING, TaskStatus.RELEASING, TaskStatus.PIPELINED)):
        placed = task(f"t{i}", status)
        placed.node_name = "n"
        node.add_task(placed)
    by_hand = node.copy_sharing_tasks()
    for placed in list(by_hand.tasks.values()):
        by_hand.remove_task(placed)
    empty = node.emptied()
    for field in ("idle", "used", "releasing", "pipelined"):
        mine, theirs = getattr(empty, field), getattr(by_hand, field)
        assert mine.less_equal(theirs, ZERO) and theirs.less_equal(mine, ZERO), field
    assert empty.tasks == {} and empty.labels == node.labels and len(node.tasks) == 3
