"""The canonical preempt/reclaim scenarios, table-driven.

* scope: preempt works inside a queue, reclaim across queues, never the other way;
* reclaim's four-condition reclaimee filter (Task-A..E on Node-1);
* why Job-A (priority 100) did or did not preempt Job-B (priority 1) in Queue-1, one row
  per exit of the debugging flowchart (queue overused, no victim, gang, ...);
* topology-aware candidate choice, one row per scoring level, end to end.

The candidate-count formula and the reprieve rule are tabled in ``test_topology.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from scheduler_core.actions.util.victims import reclaimee_filter
from scheduler_core.api.types import TaskStatus
from scheduler_core.conf import SchedulerConfiguration
from tests.builders import (
    GANG_CONF,
    HELM_CONF,
    PRIORITY_CLASSES,
    Obj,
    configuration,
    evicted_keys,
    evictions,
    node,
    pipelined,
    pod,
    podgroup,
    priority_class,
    queue,
    run,
    session,
    task_of,
)

PREEMPT = configuration(HELM_CONF, "preempt")
RECLAIM = configuration(GANG_CONF, "reclaim")

# --- scope: preempt within a queue, reclaim across queues ----------------------------------------


def _one_node_two_queues(b_queue: str) -> list[Obj]:
    return [
        node("n1", cpu="2"),
        queue("q1"),
        queue("q2"),
        *PRIORITY_CLASSES,
        podgroup("job-a", 1, queue="q1", priority_class="high"),
        podgroup("job-b", 1, queue=b_queue, priority_class="low"),
        pod("a-0", group="job-a", cpu="2", priority=100),
        pod("b-0", group="job-b", node_name="n1", cpu="2", priority=1),
    ]


def _reclaim_scope() -> list[Obj]:
    """q1 waits for one cpu; n1 runs a low-priority q1 task, n2 runs three tasks of q2,
    one more than its deserved half of the cluster."""
    return [
        node("n1", cpu="1"),
        node("n2", cpu="3"),
        queue("q1"),
        queue("q2"),
        *PRIORITY_CLASSES,
        podgroup("job-x", 1, queue="q1", priority_class="high"),
        podgroup("job-r", 1, queue="q1", priority_class="low"),
        podgroup("job-y", 1, queue="q2", priority_class="low"),
        pod("x-0", group="job-x", priority=100),
        pod("r-0", group="job-r", node_name="n1", priority=1),
        pod("y-0", group="job-y", node_name="n2", priority=1),
        pod("y-1", group="job-y", node_name="n2", priority=1),
        pod("y-2", group="job-y", node_name="n2", priority=1),
    ]


@pytest.mark.parametrize(
    ("case", "objects", "conf", "evicted"),
    [
        ("preempt inside the queue", _one_node_two_queues("q1"), PREEMPT, ["ns/b-0"]),
        ("preempt never crosses queues", _one_node_two_queues("q2"), PREEMPT, []),
        ("reclaim takes from another queue only", _reclaim_scope(), RECLAIM, ["ns/y-0"]),
    ],
)
def test_preempt_and_reclaim_scope(
    case: str, objects: list[Obj], conf: SchedulerConfiguration, evicted: list[str]
) -> None:
    assert evicted_keys(run(objects, conf)) == evicted, case


def test_reclaim_ignores_a_lower_priority_task_of_its_own_queue() -> None:
    ssn = run(_reclaim_scope(), RECLAIM)
    assert task_of(ssn, "ns/r-0").status == TaskStatus.RUNNING
    assert pipelined(ssn) == {"ns/x-0": "n2"}


# --- reclaim's reclaimee filter: Task-A..E -------------------------------------------------------


@dataclass
class Node1:
    """Seed 001's Node-1: A and D of prod, B of dev, C of test (not reclaimable), E of dev
    completed; X of prod is starving. dev also runs four tasks on Node-2, beyond its
    deserved share (prod 2 : dev 1 : test 1 gives dev 4 of 8 cpu). B belongs to the big
    dev job, so gang has tasks to spare."""

    b_phase: str | None = None
    b_preemptable: bool | None = None
    b_queue: str = "dev"
    dev_reclaimable: bool | None = None
    extra: list[Obj] = field(default_factory=list)

    def objects(self) -> list[Obj]:
        objs = [
            node("node-1", cpu="4"),
            node("node-2", cpu="4"),
            queue("prod", weight=2),
            queue("dev", reclaimable=self.dev_reclaimable),
            queue("test", reclaimable=False),
            podgroup("job-prod", 1, queue="prod"),
            podgroup("job-x", 1, queue="prod"),
            podgroup("job-dev", 1, queue="dev"),
            podgroup("job-test", 1, queue="test"),
            pod("task-a", group="job-prod", node_name="node-1"),
            pod(
                "task-b",
                group=f"job-{self.b_queue}",
                node_name="node-1",
                phase=self.b_phase,
                preemptable=self.b_preemptable,
            ),
            pod("task-c", group="job-test", node_name="node-1"),
            pod("task-d", group="job-prod", node_name="node-1"),
            pod("task-e", group="job-dev", node_name="node-1", phase="Succeeded"),
            pod("task-x", group="job-x"),
        ]
        for i in range(4):
            objs.append(pod(f"dev-{i}", group="job-dev", node_name="node-2"))
        return objs + self.extra


def test_only_task_b_passes_the_four_conditions() -> None:
    ssn = session(Node1().objects(), RECLAIM)
    accept = reclaimee_filter(ssn, ssn.jobs["ns/job-x"])
    on_node = {t.name: accept(t) for t in ssn.nodes["node-1"].tasks.values()}
    assert on_node == {"task-a": False, "task-b": True, "task-c": False, "task-d": False}
    completed = task_of(ssn, "ns/task-e")
    assert completed.status == TaskStatus.SUCCEEDED and not accept(completed)


@pytest.mark.parametrize(
    ("condition", "cluster", "evicted"),
    [
        ("all four hold: B goes", Node1(), ["ns/task-b"]),
        ("1. Running only (B is Bound)", Node1(b_phase="Pending"), []),
        ("2. preemptable only", Node1(b_preemptable=False), []),
        ("3. another queue only (B in prod)", Node1(b_queue="prod"), []),
        ("4. reclaimable queue only", Node1(dev_reclaimable=False), []),
    ],
)
def test_reclaimee_conditions_end_to_end(
    condition: str, cluster: Node1, evicted: list[str]
) -> None:
    ssn = run(cluster.objects(), RECLAIM)
    # node-2 is full of dev tasks that the same rules allow; X goes to the first node in
    # name order where victims free enough, so only node-1's verdict is looked at here
    on_node_1 = [k for k, host, _, _ in evictions(ssn) if host == "node-1"]
    assert on_node_1 == evicted, condition


# --- why Job-A did or did not preempt Job-B ------------------------------------------------------


def job_a_b(
    *,
    a_min: int = 1,
    a_tasks: int = 1,
    a_cpu: str = "2",
    a_running: bool = False,
    a_best_effort: bool = False,
    a_selector: dict[str, str] | None = None,
    b_min: int = 1,
    b_phase: str | None = None,
    b_preemptable: bool | None = None,
    pods_on_n1: int = 110,
) -> list[Obj]:
    """Queue-1 on one 2-cpu node: Job-B (priority 1) runs two 1-cpu tasks, Job-A (priority
    100) waits with ``a_tasks`` tasks."""
    objs = [
        node("n1", cpu="2" if not a_running else "3", pods=pods_on_n1),
        queue("queue-1"),
        *PRIORITY_CLASSES,
        podgroup("job-a", a_min, queue="queue-1", priority_class="high"),
        podgroup("job-b", b_min, queue="queue-1", priority_class="low"),
    ]
    for i in range(a_tasks):
        cpu = None if a_best_effort else a_cpu
        memory = None if a_best_effort else "1Gi"
        objs.append(
            pod(
                f"a-{i}",
                group="job-a",
                cpu=cpu,
                memory=memory,
                priority=100,
                node_selector=a_selector,
            )
        )
    if a_running:
        objs.append(pod("a-run", group="job-a", node_name="n1", priority=100))
    for i in range(2):
        objs.append(
            pod(
                f"b-{i}",
                group="job-b",
                node_name="n1",
                priority=1,
                phase=b_phase,
                preemptable=b_preemptable,
            )
        )
    return objs


@pytest.mark.parametrize(
    ("step", "objects", "conf", "evicted", "pipelined_tasks"),
    [
        ("1. not starving", job_a_b(a_running=True), PREEMPT, [], []),
        ("2. JobValid fails", job_a_b(a_min=3), PREEMPT, [], []),
        ("3a. filter: victims not Running/Bound", job_a_b(b_phase="Unknown"), PREEMPT, [], []),
        (
            "3b. filter: best-effort preemptor",
            job_a_b(a_best_effort=True, pods_on_n1=2),
            PREEMPT,
            [],
            [],
        ),
        ("3c. filter: preemptable=false", job_a_b(b_preemptable=False), PREEMPT, [], []),
        (
            "4. gang keeps Job-B at minAvailable",
            job_a_b(b_min=2),
            configuration(GANG_CONF, "preempt"),
            [],
            [],
        ),
        ("5. predicates reject the node", job_a_b(a_selector={"zone": "x"}), PREEMPT, [], []),
        ("6. not pipelined: discarded", job_a_b(a_min=2, a_tasks=2), PREEMPT, [], []),
        ("success", job_a_b(), PREEMPT, ["ns/b-0", "ns/b-1"], ["ns/a-0"]),
    ],
)
def test_why_job_a_did_or_did_not_preempt_job_b(
    step: str,
    objects: list[Obj],
    conf: SchedulerConfiguration,
    evicted: list[str],
    pipelined_tasks: list[str],
) -> None:
    before = {t.key: t.status for t in session(objects, conf).jobs["ns/job-b"].tasks.values()}
    ssn = run(objects, conf)
    assert sorted(evicted_keys(ssn)) == evicted, step
    assert sorted(pipelined(ssn)) == pipelined_tasks, step
    after = {t.key: t.status for t in ssn.jobs["ns/job-b"].tasks.values()}
    if not evicted:
        assert after == before, step


def test_the_discarded_statement_had_evicted_before_it_was_undone() -> None:
    """Row 6 is not vacuous: Job-A's first task did evict, then the gang failed."""
    from scheduler_core.framework.statement import Statement

    seen: list[int] = []
    original = Statement.discard

    def spy(self: Statement) -> None:
        seen.append(sum(1 for op in self.operations if op.op.value == "Evict"))
        original(self)

    Statement.discard = spy  # type: ignore[method-assign]
    try:
        ssn = run(job_a_b(a_min=2, a_tasks=2), PREEMPT)
    finally:
        Statement.discard = original  # type: ignore[method-assign]
    assert max(seen) == 2
    assert evicted_keys(ssn) == []


# --- topology-aware candidates: the four levels, end to end --------------------------------------

LOWEST = -(2**31)

# per node: victims as (priority, cpu, started); the preemptor needs 2 cpu and each node is
# exactly full, so every victim listed must go
LEVELS = [
    (
        "1. lowest top victim",
        {"n1": [(5, 1, ""), (1, 1, "")], "n2": [(3, 1, ""), (1, 1, "")]},
        "n2",
    ),
    (
        "2. lowest priority sum",
        {"n1": [(5, 1, ""), (2, 1, "")], "n2": [(5, 1, ""), (4, 1, "")]},
        "n1",
    ),
    ("3. fewest victims", {"n1": [(5, 1, ""), (LOWEST, 1, "")], "n2": [(5, 2, "")]}, "n2"),
    (
        "4. youngest top victim",
        {
            "n1": [(5, 1, "2024-01-01T11:00:00Z"), (1, 1, "")],
            "n2": [(5, 1, "2024-01-01T10:00:00Z"), (1, 1, "")],
        },
        "n1",
    ),
]


def _level_cluster(victims: dict[str, list[tuple[int, int, str]]]) -> list[Obj]:
    values = {p for per_node in victims.values() for p, _, _ in per_node}
    objs: list[Obj] = [queue("q1"), priority_class("top", 1000)]
    objs += [priority_class(f"p{abs(p)}{'n' if p < 0 else ''}", p) for p in sorted(values)]
    objs += [podgroup("job-p", 1, queue="q1", priority_class="top")]
    objs += [pod("p", group="job-p", cpu="2", priority=1000)]
    for name, per_node in victims.items():
        objs.append(node(name, cpu=str(sum(c for _, c, _ in per_node))))
        for i, (prio, cpu, started) in enumerate(per_node):
            cls = f"p{abs(prio)}{'n' if prio < 0 else ''}"
            job = f"job-{name}-{i}"
            objs.append(podgroup(job, 1, queue="q1", priority_class=cls))
            objs.append(
                pod(
                    f"{name}-v{i}",
                    group=job,
                    node_name=name,
                    cpu=str(cpu),
                    priority=prio,
                    started=started,
                )
            )
    return objs


@pytest.mark.parametrize(("level", "victims", "winner"), LEVELS)
def test_topology_aware_choice_by_level(
    level: str, victims: dict[str, list[tuple[int, int, str]]], winner: str
) -> None:
    conf = configuration(
        HELM_CONF,
        "preempt",
        {
            "preempt": {
                "enableTopologyAwarePreemption": True,
                "minCandidateNodesAbsolute": 2,
                "randomSeed": 0,
            }
        },
    )
    ssn = run(_level_cluster(victims), conf)
    assert pipelined(ssn) == {"ns/p": winner}, level
    assert {host for _, host, _, _ in evictions(ssn)} == {winner}, level
    assert len(evictions(ssn)) == len(victims[winner]), level
