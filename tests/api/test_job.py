"""The gang counters count by status masks, and a job whose roles ask no minimum skips the
walk over its tasks: both answer as the status predicates and the role walk do."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from scheduler_core.api.job import JobInfo
from scheduler_core.api.types import TaskStatus, ready_status, scheduled_status, valid_status
from tests import builders as b


def job_of(statuses: list[TaskStatus], minimums: dict[str, int] | None = None) -> JobInfo:
    job = JobInfo(
        uid="ns/j",
        name="j",
        namespace="ns",
        queue="q",
        min_available=1,
        task_min_available=minimums or {},
    )
    for i, status in enumerate(statuses):
        job.add_task_info(replace(b.task(f"t{i}", role="worker"), status=status))
    return job


@given(st.lists(st.sampled_from(list(TaskStatus)), max_size=8))
def test_the_gang_counters_count_the_tasks_their_status_predicates_admit(
    statuses: list[TaskStatus],
) -> None:
    job = job_of(statuses)
    assert job.ready_task_num() == sum(map(ready_status, statuses))
    assert job.valid_task_num() == sum(map(valid_status, statuses))
    assert job.scheduled_task_num() == sum(map(scheduled_status, statuses))


@given(st.lists(st.sampled_from(list(TaskStatus)), max_size=8))
def test_a_job_whose_roles_ask_no_minimum_meets_every_role_check(
    statuses: list[TaskStatus],
) -> None:
    job = job_of(statuses)
    # The same job with a role minimum of zero walks its tasks: the same answers.
    walked = job_of(statuses, {"worker": 0})
    for check in ("check_task_valid", "check_task_ready", "check_task_pipelined"):
        assert getattr(job, check)() is True
        assert getattr(walked, check)() is True
    assert job.check_task_starving() == walked.check_task_starving()
