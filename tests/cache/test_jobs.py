"""How the cache makes jobs and judges a pod update: a plain pod's group of one, and which
task changes leave every sum a session derives as it was."""

from __future__ import annotations

from dataclasses import replace

import pytest

from scheduler_core.api.resource import Resource
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import PodGroupPhase, TaskStatus
from scheduler_core.cache.jobs import (
    native_job,
    respec_synthesized,
    same_sums,
    synthesized_job,
)
from tests.builders import task

BASE = task("p", job="ns/podgroup-p")


@pytest.mark.parametrize(
    ("changed", "same"),
    [
        (replace(BASE, labels={"a": "b"}), True),
        (replace(BASE, pod_priority=7), True),
        (replace(BASE, status=TaskStatus.PENDING), False),
        (replace(BASE, node_name="n2"), False),
        (replace(BASE, job="ns/other"), False),
        (replace(BASE, gated=True), False),
        (replace(BASE, resreq=Resource(2000, 0, {"pods": 1})), False),
        (replace(BASE, init_resreq=Resource(2000, 0, {"pods": 1})), False),
    ],
    ids=["labels", "priority", "status", "node", "job", "gated", "request", "init-request"],
)
def test_only_what_a_sum_reads_makes_a_pod_update_count(changed: TaskInfo, same: bool) -> None:
    assert same_sums(BASE, changed) is same


@pytest.mark.parametrize(
    ("status", "phase"),
    [(TaskStatus.RUNNING, PodGroupPhase.RUNNING), (TaskStatus.PENDING, PodGroupPhase.PENDING)],
)
def test_a_plain_pods_group_of_one_runs_when_its_pod_does(
    status: TaskStatus, phase: PodGroupPhase
) -> None:
    job = synthesized_job(replace(BASE, status=status), "")
    assert (job.phase, job.min_available, job.queue, job.synthesized) == (
        phase,
        1,
        "default",
        True,
    )


def test_a_plain_pods_group_asks_for_its_requests_but_not_the_pod_slot() -> None:
    job = synthesized_job(BASE, "q1")
    assert job.queue == "q1"
    assert job.min_resources.milli_cpu == BASE.resreq.milli_cpu
    assert "pods" not in (job.min_resources.scalars or {})
    assert "pods" in (BASE.resreq.scalars or {})  # the task's own request is left alone


SPEC = ("priority", "min_available", "phase", "creation_timestamp")


def amounts(resource: Resource | None) -> tuple[object, ...]:
    assert resource is not None
    return (resource.milli_cpu, resource.memory, resource.scalars, resource.max_task_num)


@pytest.mark.parametrize(
    "now",
    [
        replace(BASE, status=TaskStatus.BOUND, node_name="n2"),
        replace(BASE, status=TaskStatus.PENDING, node_name=""),
        replace(BASE, status=TaskStatus.RELEASING, pod_priority=9),
        replace(BASE, resreq=Resource(2000, 1024, {"pods": 1, "nvidia.com/gpu": 1000})),
        replace(BASE, creation_timestamp="2026-12-06T00:00:00Z"),
    ],
    ids=["bound", "pending", "releasing", "request", "created"],
)
def test_an_updated_pods_kept_group_gets_the_spec_a_fresh_group_would_have(now: TaskInfo) -> None:
    kept = synthesized_job(BASE, "q1")
    respec_synthesized(kept, now)
    fresh = synthesized_job(now, "q1")
    assert [getattr(kept, name) for name in SPEC] == [getattr(fresh, name) for name in SPEC]
    assert amounts(kept.min_resources) == amounts(fresh.min_resources)
    assert kept.min_resources is not now.resreq  # its own copy, without the pod slot


@pytest.mark.parametrize(
    ("job_id", "native"),
    [("ns/native:x", True), ("ns/podgroup-x", False), ("ns/x", False)],
)
def test_only_a_native_groups_job_id_is_taken_for_one(job_id: str, native: bool) -> None:
    assert native_job(job_id) is native
