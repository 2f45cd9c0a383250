"""Each queue's usage kept as its jobs change, and the history it feeds: one job's
contribution replaced per event, and a fork that reads the history without feeding it."""

from __future__ import annotations

from scheduler_core.api.job import JobInfo
from scheduler_core.api.usage_history import UsageHistory
from scheduler_core.cache.queue_sums import QueueSums
from tests.builders import task


def running_job(queue: str, *cpus: float) -> JobInfo:
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue=queue)
    for i, cpu in enumerate(cpus):
        job.add_task_info(task(f"p{i}", cpu, job="ns/j"))
    return job


def allocated_cpu(sums: QueueSums, queue: str) -> float:
    usage = sums.queue_usage.get(queue)
    return usage.allocated.milli_cpu if usage is not None else 0.0


def test_a_jobs_contribution_is_replaced_not_added_again() -> None:
    sums = QueueSums()
    sums.touch("ns/j", running_job("q1", 1000))
    sums.touch("ns/j", running_job("q1", 1000, 500))
    assert allocated_cpu(sums, "q1") == 1500
    assert sums.queue_jobs["q1"] == 1


def test_a_job_that_changes_queue_leaves_nothing_behind() -> None:
    sums = QueueSums()
    sums.touch("ns/j", running_job("q1", 1000))
    sums.touch("ns/j", running_job("q2", 1000))
    assert "q1" not in sums.queue_usage and "q1" not in sums.queue_jobs
    assert allocated_cpu(sums, "q2") == 1000


def test_a_gone_job_takes_its_queues_sum_with_it() -> None:
    sums = QueueSums()
    sums.touch("ns/j", running_job("q1", 1000))
    sums.touch("ns/j", None)
    assert sums.queue_usage == {} and sums.job_usage == {} and not sums.queue_jobs


def test_a_fork_reads_the_history_and_never_feeds_it() -> None:
    clock = [0.0]
    history = UsageHistory(100.0, monotonic=lambda: clock[0], server_now=lambda: 1.8e9)
    untouched = UsageHistory(100.0, monotonic=lambda: clock[0], server_now=lambda: 1.8e9)
    live = QueueSums()
    live.usage_history = history
    live.touch("ns/j", running_job("q1", 1000))
    untouched.held("q1", running_job("q1", 1000).allocated)
    fork = live.fork()
    clock[0] = 50.0
    fork.touch("ns/j", running_job("q1", 8000))
    clock[0] = 100.0
    assert fork.usage_history is history
    assert allocated_cpu(live, "q1") == 1000  # the fork's sums are its own
    fed, expected = history.export("q1"), untouched.export("q1")
    assert fed is not None and expected is not None
    assert fed.usage == expected.usage
