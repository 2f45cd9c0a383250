"""enqueue admits Pending PodGroups while their queue can hold their minResources."""

from __future__ import annotations

from typing import Any

from scheduler_core.api.types import PodGroupPhase
from scheduler_core.conf import load_configuration
from scheduler_core.engine import run_session
from tests.builders import (
    node,
    pod,
    podgroup,
    priority_class,
    queue,
    snapshot,
    with_min_resources,
)

CONF = load_configuration("""
actions: "enqueue"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: proportion}]
""")


def job(name: str, queue: str, cpu: str | None, created: str = "") -> list[dict[str, Any]]:
    pg = podgroup(name, 1, queue=queue, phase="Pending", created=created)
    if cpu is not None:
        with_min_resources(pg, {"cpu": cpu})
    return [pg, pod(f"{name}-0", group=name, cpu=cpu or "1")]


def phases(objs: list[dict[str, Any]]) -> dict[str, PodGroupPhase]:
    ssn = run_session(snapshot(objs), CONF)
    return {uid.split("/")[1]: job.phase for uid, job in ssn.jobs.items()}


def test_a_job_whose_min_resources_fit_is_admitted() -> None:
    objs = [node("n1", cpu="4"), queue("q"), *job("fits", "q", "2")]
    assert phases(objs)["fits"] == PodGroupPhase.INQUEUE


def test_a_job_larger_than_the_queue_capability_stays_pending() -> None:
    objs = [node("n1", cpu="8"), queue("q", capability={"cpu": "2"}), *job("big", "q", "3")]
    assert phases(objs)["big"] == PodGroupPhase.PENDING


def test_admitted_jobs_reserve_their_min_resources_for_the_next_ones() -> None:
    objs = [
        node("n1", cpu="4"),
        queue("q"),
        *job("first", "q", "3", created="2026-01-01T00:00:00Z"),
        *job("second", "q", "3", created="2026-01-02T00:00:00Z"),
    ]
    result = phases(objs)
    assert result["first"] == PodGroupPhase.INQUEUE
    assert result["second"] == PodGroupPhase.PENDING


def test_a_job_without_min_resources_is_always_admitted() -> None:
    objs = [node("n1", cpu="1"), queue("q", capability={"cpu": "1"}), *job("any", "q", None)]
    assert phases(objs)["any"] == PodGroupPhase.INQUEUE


def test_a_closed_queue_admits_nothing() -> None:
    objs = [node("n1", cpu="4"), queue("q", state="Closed"), *job("j", "q", "1")]
    assert phases(objs)["j"] == PodGroupPhase.PENDING


def test_job_order_decides_who_is_admitted_when_the_queue_is_short() -> None:
    """The queue can hold one of the two 3-CPU jobs: the higher-priority one goes first,
    although it is newer (priority plugin's job order before age)."""
    urgent = job("urgent", "q", "3", created="2026-01-02T00:00:00Z")
    urgent[0]["spec"]["priorityClassName"] = "high"
    objs = [
        node("n1", cpu="4"),
        queue("q"),
        priority_class("high", 1000),
        *job("routine", "q", "3", created="2026-01-01T00:00:00Z"),
        *urgent,
    ]
    result = phases(objs)
    assert result["urgent"] == PodGroupPhase.INQUEUE
    assert result["routine"] == PodGroupPhase.PENDING
