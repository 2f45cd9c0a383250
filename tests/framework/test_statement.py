"""Statement operations change the session at once; commit makes them effective and discard
undoes them exactly, in reverse order."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.job import JobInfo
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.resource import ZERO, Resource
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.api.types import TaskStatus
from scheduler_core.conf import load_configuration
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.session import EventHandler, Session
from scheduler_core.framework.statement import Op, Statement


def make_session(running: int = 2, pending: int = 2) -> Session:
    node = NodeInfo.new("n1", Resource(4000, 4 * 2**30, {"pods": 110}))
    job = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q", min_available=1)
    for i in range(running + pending):
        req = Resource(1000, 2**30, {"pods": 1})
        t = TaskInfo(
            uid=f"t{i}",
            name=f"t{i}",
            namespace="ns",
            job="ns/j",
            resreq=req,
            init_resreq=req,
            status=TaskStatus.RUNNING if i < running else TaskStatus.PENDING,
            node_name="n1" if i < running else "",
        )
        job.add_task_info(t)
        if i < running:
            node.add_task(t)
    snapshot = ClusterSnapshot(jobs={job.uid: job}, nodes={"n1": node})
    return open_session(snapshot, load_configuration(""), clone=False)


def values(r: Resource) -> tuple[float, float, dict[str, float]]:
    """A resource's amounts; a scalar at 0 equals a missing one for this comparison."""
    return (r.milli_cpu, r.memory, {k: q for k, q in (r.scalars or {}).items() if q})


def state(ssn: Session) -> tuple[Any, ...]:
    node = ssn.nodes["n1"]
    job = ssn.jobs["ns/j"]
    return (
        values(node.idle),
        values(node.used),
        values(node.releasing),
        values(node.pipelined),
        sorted(node.tasks),
        sorted((t.uid, int(t.status), t.node_name) for t in job.tasks.values()),
        values(job.allocated),
    )


def test_evict_moves_the_task_to_releasing_and_fires_deallocate() -> None:
    ssn = make_session()
    seen: list[str] = []
    ssn.add_event_handler(EventHandler(deallocate=lambda t: seen.append(t.uid)))
    stmt = Statement(ssn)
    victim = ssn.jobs["ns/j"].tasks["t0"]
    stmt.evict(victim, "preempt")
    node = ssn.nodes["n1"]
    assert victim.status == TaskStatus.RELEASING
    assert node.releasing.milli_cpu == 1000
    assert node.future_idle().milli_cpu == 3000  # 2 idle + 1 releasing
    assert seen == ["t0"]
    assert ssn.jobs["ns/j"].ready_task_num() == 1


def test_pipeline_promises_future_idle_without_touching_idle() -> None:
    ssn = make_session()
    stmt = Statement(ssn)
    preemptor = ssn.jobs["ns/j"].tasks["t2"]
    stmt.pipeline(preemptor, "n1")
    node = ssn.nodes["n1"]
    assert preemptor.status == TaskStatus.PIPELINED
    assert node.idle.milli_cpu == 2000
    assert node.future_idle().milli_cpu == 1000
    assert ssn.jobs["ns/j"].waiting_task_num() == 1


def test_commit_records_evictions_and_dispatches_allocations_to_binding() -> None:
    ssn = make_session()
    stmt = Statement(ssn)
    victim = ssn.jobs["ns/j"].tasks["t0"]
    preemptor = ssn.jobs["ns/j"].tasks["t2"]
    stmt.evict(victim, "reclaim", preemptor)
    stmt.allocate(ssn.jobs["ns/j"].tasks["t3"], ssn.nodes["n1"])
    stmt.commit()
    assert [
        (e.task.uid, e.reason, e.preemptor.uid if e.preemptor else None, e.node)
        for e in ssn.evictions
    ] == [("t0", "reclaim", "t2", "n1")]
    assert ssn.jobs["ns/j"].tasks["t3"].status == TaskStatus.BINDING
    assert [t.uid for t in ssn.bound] == ["t3"]
    assert stmt.operations == []


def test_discarded_statement_evicts_nothing() -> None:
    ssn = make_session()
    before = state(ssn)
    stmt = Statement(ssn)
    stmt.evict(ssn.jobs["ns/j"].tasks["t0"], "preempt")
    stmt.pipeline(ssn.jobs["ns/j"].tasks["t2"], "n1")
    stmt.discard()
    assert ssn.evictions == []
    assert state(ssn) == before


def test_merge_moves_operations_into_the_receiver() -> None:
    ssn = make_session()
    outer, inner = Statement(ssn), Statement(ssn)
    inner.evict(ssn.jobs["ns/j"].tasks["t0"], "preempt")
    outer.merge(inner)
    assert inner.operations == [] and [o.op for o in outer.operations] == [Op.EVICT]


OPS = st.lists(
    st.tuples(st.sampled_from(["evict", "pipeline", "allocate"]), st.integers(0, 5)),
    max_size=12,
)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(OPS)
def test_discard_restores_the_session_exactly(ops: list[tuple[str, int]]) -> None:
    ssn = make_session(running=3, pending=3)
    allocated_by_handler: list[float] = [0.0]
    ssn.add_event_handler(
        EventHandler(
            allocate=lambda t: allocated_by_handler.__setitem__(
                0, allocated_by_handler[0] + t.resreq.milli_cpu
            ),
            deallocate=lambda t: allocated_by_handler.__setitem__(
                0, allocated_by_handler[0] - t.resreq.milli_cpu
            ),
        )
    )
    before = state(ssn)
    stmt = Statement(ssn)
    job = ssn.jobs["ns/j"]
    for op, i in ops:
        t = job.tasks[f"t{i}"]
        if op == "evict" and t.status == TaskStatus.RUNNING:
            stmt.evict(t, "preempt")
        elif op == "pipeline" and t.status == TaskStatus.PENDING:
            stmt.pipeline(t, "n1")
        elif (
            op == "allocate"
            and t.status == TaskStatus.PENDING
            and t.resreq.less_equal(ssn.nodes["n1"].idle, ZERO)
        ):
            stmt.allocate(t, ssn.nodes["n1"])
    stmt.discard()
    assert state(ssn) == before
    assert allocated_by_handler[0] == 0.0
