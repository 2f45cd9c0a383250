"""Job answers kept across a session's actions, and empty statements settled without a vote,
decide exactly what asking every time decides.

Whether a job starves, is valid or is pipelined, and the evicting actions' job order key,
are asked once while the session's jobs stand (``Session.kept``), for every action of the
session; a statement that holds nothing
is neither voted on nor committed (``Statement.settles_alike``). Over random backlogs, and
over a cache that changes between the loop's cycles (pods arriving, leaving, finishing,
bound), every cycle's evictions, placements and the words every waiting pod is told are the
same with these shortcuts and without them.
"""

from __future__ import annotations

import gc
import logging
import subprocess
import sys
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.actions.util.job_checks import JobChecks
from scheduler_core.api.types import PodGroupPhase
from scheduler_core.cache.list_pager import GC_PAUSE
from scheduler_core.cache.objects import collect
from scheduler_core.cache.state import ClusterState
from scheduler_core.controller.decision import CycleDecision, decide
from scheduler_core.controller.snapshot import loop_snapshot
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.framework.session import Session
from scheduler_core.framework.statement import Statement
from scheduler_core.logutil import v
from tests import builders as b
from tests.actions.test_reclaim_shortcuts import CONFS, backlog


def summary(decision: CycleDecision) -> tuple[object, ...]:
    evictions = [(e.victim.name, e.node, e.action, e.preemptor_node) for e in decision.evictions]
    told = sorted((u.task.name, u.reason, u.note) for u in decision.unhelped())
    return evictions, told


def asking_every_time(run: Callable[[], CycleDecision]) -> CycleDecision:
    """``run`` with every job answer asked again and every statement voted on."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Session, "kept", lambda self, what, job, ask: ask(job))
        patch.setattr(Statement, "settles_alike", lambda self: False)
        return run()


@settings(max_examples=120, deadline=None)
@given(backlog(), st.sampled_from(sorted(CONFS)))
def test_kept_answers_and_unvoted_empty_statements_change_no_eviction_and_no_word(
    objs: list[b.Obj], conf: str
) -> None:
    fast = decide(b.snapshot(objs), CONFS[conf])
    full = asking_every_time(lambda: decide(b.snapshot(objs), CONFS[conf]))
    assert summary(fast) == summary(full)


#: What may happen to the cache between two cycles: a waiting pod arrives (of a spec),
#: a pod leaves, a running pod finishes, a waiting pod is bound to a node.
Change = tuple[str, int, int]
changes = st.lists(
    st.tuples(
        st.sampled_from(["arrive", "leave", "finish", "bind"]), st.integers(0, 9), st.integers(0, 3)
    ),
    min_size=1,
    max_size=4,
)


def apply(state: ClusterState, objs: list[b.Obj], change: Change, serial: int) -> None:
    what, pick, spec = change
    pods = [o for o in objs if o["kind"] == "Pod"]
    nodes = [o["metadata"]["name"] for o in objs if o["kind"] == "Node"]
    if what == "arrive":
        queue = f"q{spec % 3 + 1}"
        cpu = "4" if spec == 3 else "1"
        state.upsert("Pod", b.pod(f"new{serial}", queue=queue, cpu=cpu, unschedulable=True))
        return
    if not pods:
        return
    chosen = pods[pick % len(pods)]
    name = chosen["metadata"]["name"]
    if what == "leave":
        state.delete("Pod", f"ns/{name}")
    elif what == "finish" and chosen["spec"].get("nodeName"):
        state.upsert("Pod", {**chosen, "status": {**chosen["status"], "phase": "Succeeded"}})
    elif what == "bind" and not chosen["spec"].get("nodeName") and nodes:
        node = nodes[spec % len(nodes)]
        state.upsert(
            "Pod",
            {
                **chosen,
                "spec": {**chosen["spec"], "nodeName": node},
                "status": {"phase": "Running", "startTime": "2024-01-01T00:00:00Z"},
            },
        )


@settings(max_examples=60, deadline=None)
@given(backlog(), changes, st.sampled_from(sorted(CONFS)))
def test_the_loops_cycles_over_a_changing_cache_decide_as_asking_every_time(
    objs: list[b.Obj], between: list[Change], conf: str
) -> None:
    state = ClusterState()
    state.apply_objects(collect(objs))
    memos = SessionMemos()  # the loop's own, kept from one cycle to the next
    for serial, change in enumerate([None, *between]):
        if change is not None:
            apply(state, objs, change, serial)
        with GC_PAUSE.paused():
            fast = decide(loop_snapshot(state), CONFS[conf], memos=memos)
        full = asking_every_time(lambda: decide(loop_snapshot(state), CONFS[conf]))
        assert summary(fast) == summary(full)


ONE_WAITING = [b.node("n1"), b.queue("q"), b.pod("p", queue="q", unschedulable=True)]


def test_a_kept_answer_is_asked_again_once_the_session_places_anything() -> None:
    ssn = b.session(ONE_WAITING, CONFS["volcano"])
    job = next(iter(ssn.jobs.values()))
    asked: list[str] = []

    def ask(j: Any) -> int:
        asked.append(j.uid)
        return len(asked)

    assert ssn.kept("x", job, ask) == 1
    assert ssn.kept("x", job, ask) == 1
    ssn.placements += 1
    assert ssn.kept("x", job, ask) == 2
    job.phase = PodGroupPhase.RUNNING  # not the phase it was answered in
    assert ssn.kept("x", job, ask) == 3
    ssn.evictions.append(object())  # type: ignore[arg-type]
    assert ssn.kept("x", job, ask) == 4


def test_a_read_only_session_asks_every_time() -> None:
    ssn = b.session(ONE_WAITING, CONFS["volcano"])
    ssn.read_only = True
    job = next(iter(ssn.jobs.values()))
    asked: list[int] = []
    for _ in range(3):
        ssn.kept("x", job, lambda j: asked.append(1))
    assert len(asked) == 3


def test_job_checks_answer_as_the_session_does() -> None:
    ssn = b.session(ONE_WAITING, CONFS["volcano"])
    checks = JobChecks(ssn)
    for job in ssn.jobs.values():
        assert checks.starving(job) == ssn.job_starving(job)
        assert checks.pipelined(job) == ssn.job_pipelined(job)


@pytest.mark.parametrize(
    ("operations", "verbosity", "alike"),
    [(False, 0, True), (False, 3, False), (True, 0, False)],
)
def test_only_an_empty_statement_whose_words_no_one_reads_settles_alike(
    operations: bool, verbosity: int, alike: bool
) -> None:
    ssn = b.session(ONE_WAITING, CONFS["volcano"])
    stmt = Statement(ssn)
    if operations:
        stmt.pipeline(b.task_of(ssn, "ns/p"), "n1")
    logger = logging.getLogger("scheduler_core.statement")
    before = logger.level
    logger.setLevel(v(verbosity) if verbosity else logging.INFO)
    try:
        assert stmt.settles_alike() is alike
    finally:
        logger.setLevel(before)


def garbage_after_a_decided_cycle() -> int:
    """What the collector finds after a reclaim cycle decided with it paused, and a session
    released (run in a process of its own by the test below)."""
    state = ClusterState()
    state.apply_objects(
        collect(
            [
                b.node("n1", cpu="2"),
                b.queue("q1"),
                b.pod("r", queue="q1", cpu="2", node_name="n1", started="2024-01-01T00:00:00Z"),
                b.pod("p", queue="q1", unschedulable=True),
            ]
        )
    )
    gc.collect()
    with GC_PAUSE.paused():
        decide(loop_snapshot(state), CONFS["live"])
        ssn = b.session(ONE_WAITING, CONFS["live"])
        gone = weakref.ref(ssn)
        ssn.release()
        del ssn
        assert gone() is None
    return gc.collect()


def test_a_decided_cycle_leaves_nothing_for_the_collector() -> None:
    """The session is released as it closes: it and its copies go as soon as the caller
    lets go of the snapshot, by reference counting (as the loop runs a cycle, the collector
    paused throughout), with no cycle left for a collection to find.

    In a process of its own: the collector counts every thread's garbage, and a test worker
    runs many files, some of which leave threads behind (this test once found 17 objects in
    the full suite and none alone)."""
    code = (
        "from tests.actions.util.test_job_checks import garbage_after_a_decided_cycle as g; "
        "print(g())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[3],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0"], done.stdout + done.stderr
