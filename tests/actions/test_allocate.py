"""allocate places pending tasks queue by queue, and a gang all or nothing."""

from __future__ import annotations

from typing import Any

from scheduler_core.api.types import TaskStatus
from scheduler_core.conf import load_configuration
from scheduler_core.engine import run_session
from scheduler_core.framework.session import Session
from tests.builders import node, pod, podgroup, queue, snapshot, task_of

CONF = """
actions: "{actions}"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]
- plugins: [{{name: drf}}, {{name: predicates}}, {{name: proportion}}, {{name: binpack}}]
"""


def run(objs: list[dict[str, Any]], actions: str = "allocate") -> Session:
    return run_session(snapshot(objs), load_configuration(CONF.format(actions=actions)))


def gang(
    name: str,
    size: int,
    queue: str = "q",
    cpu: str = "1",
    min_member: int | None = None,
    phase: str = "Inqueue",
) -> list[dict[str, Any]]:
    members = [pod(f"{name}-{i}", group=name, cpu=cpu) for i in range(size)]
    return [podgroup(name, min_member or size, queue=queue, phase=phase), *members]


def placed(ssn: Session) -> dict[str, str]:
    return {t.key: t.node_name for t in ssn.bound}


def test_a_gang_that_fits_is_placed_whole_and_dispatched_to_bind() -> None:
    ssn = run([node("n1"), queue("q"), *gang("g", 3)])
    assert sorted(placed(ssn)) == ["ns/g-0", "ns/g-1", "ns/g-2"]
    assert all(task_of(ssn, f"ns/g-{i}").status == TaskStatus.BINDING for i in range(3))


def test_a_gang_that_does_not_fit_is_not_placed_in_part() -> None:
    ssn = run([node("n1", cpu="2"), queue("q"), *gang("g", 3)])
    assert placed(ssn) == {}
    assert all(task_of(ssn, f"ns/g-{i}").status == TaskStatus.PENDING for i in range(3))


def test_an_elastic_job_gets_its_minimum_and_then_what_fits() -> None:
    ssn = run([node("n1", cpu="3"), queue("q"), *gang("e", 5, min_member=2)])
    assert len(placed(ssn)) == 3


def test_a_task_that_fits_only_in_releasing_resources_is_pipelined() -> None:
    objs = [
        node("n1", cpu="2"),
        queue("q"),
        pod("leaving", cpu="2", node_name="n1", deleting=True),
        *gang("g", 1, cpu="2"),
    ]
    ssn = run(objs)
    assert placed(ssn) == {}
    waiting = task_of(ssn, "ns/g-0")
    assert (waiting.status, waiting.node_name) == (TaskStatus.PIPELINED, "n1")


def test_a_pending_podgroup_waits_for_enqueue_when_enqueue_is_configured() -> None:
    objs = [node("n1"), queue("q"), *gang("g", 1, phase="Pending")]
    assert placed(run(objs, "allocate")) == {"ns/g-0": "n1"}  # no enqueue: promoted in-session
    assert placed(run(objs, "enqueue, allocate")) == {"ns/g-0": "n1"}  # enqueue admits it first
    objs_capped = [
        node("n1"),
        queue("q", capability={"cpu": "0.5"}),
        *gang("g", 1, phase="Pending"),
    ]
    objs_capped[2]["spec"]["minResources"] = {"cpu": "1"}
    assert placed(run(objs_capped, "enqueue, allocate")) == {}


def test_a_queue_at_its_deserved_share_is_skipped_while_others_are_served() -> None:
    """6 CPU, two equal queues each asking for 3 more or less: deserved 3 each. "rich" already
    runs 3 (overused: deserved <= allocated) so its new task waits; "poor" gets all three."""
    objs = [
        node("n1", cpu="6"),
        queue("rich"),
        queue("poor"),
        podgroup("run", 1, queue="rich"),
        *[pod(f"run-{i}", group="run", node_name="n1") for i in range(3)],
        *gang("r", 1, queue="rich", cpu="1"),
        *gang("p", 3, queue="poor", cpu="1"),
    ]
    ssn = run(objs)
    assert sorted(placed(ssn)) == ["ns/p-0", "ns/p-1", "ns/p-2"]


def test_node_selector_limits_where_a_task_goes() -> None:
    objs = [
        node("a", labels={"zone": "x"}),
        node("b", labels={"zone": "y"}),
        queue("q"),
        podgroup("g", 1, queue="q", phase="Inqueue"),
        pod("g-0", group="g", node_selector={"zone": "y"}),
    ]
    assert placed(run(objs)) == {"ns/g-0": "b"}


def test_best_effort_tasks_are_left_to_backfill() -> None:
    objs = [
        node("n1"),
        queue("q"),
        podgroup("g", 1, queue="q", phase="Inqueue"),
        pod("g-0", group="g", cpu=None, memory=None),
    ]
    assert placed(run(objs)) == {}


def test_binpack_puts_a_task_on_the_fuller_node() -> None:
    objs = [
        node("empty", cpu="8"),
        node("busy", cpu="8"),
        queue("q"),
        podgroup("old", 1, queue="q"),
        pod("old-0", group="old", cpu="5", node_name="busy"),
        *gang("g", 1, cpu="1"),
    ]
    assert placed(run(objs)) == {"ns/g-0": "busy"}
