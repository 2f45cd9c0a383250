"""A reclaim cycle decided in a forked child decides exactly what the loop's thread decides:
the same evictions with the same rules, the same words for every waiting pod, the pods told
being the parent's own objects; the parent's snapshot is left as it was; the child's
failure is the parent's; a lock the child reads is never found taken in it."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.types import PodGroupPhase
from scheduler_core.api.usage_history import UsageHistory
from scheduler_core.conf import SchedulerConfiguration
from scheduler_core.controller import forked_decision
from scheduler_core.controller.decision import CycleDecision, decide
from scheduler_core.controller.forked import ForkedFailure
from scheduler_core.controller.forked_decision import decide_forked
from scheduler_core.framework.memo import SessionMemos
from tests import builders as b
from tests.actions.test_reclaim_shortcuts import CONFS, backlog

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def words(decision: CycleDecision) -> tuple[object, ...]:
    evictions = [
        (e.victim.key, e.node, e.action, e.preemptor.key if e.preemptor else "", e.rule)
        for e in decision.evictions
    ]
    told = sorted((u.task.key, u.reason, u.note) for u in decision.unhelped())
    return evictions, told, sorted(decision.no_domain)


@settings(max_examples=30, deadline=None)
@given(backlog(), st.sampled_from(sorted(CONFS)))
def test_a_cycle_decided_in_a_child_decides_as_on_the_thread(objs: list[b.Obj], conf: str) -> None:
    on_thread = decide(b.snapshot(objs), CONFS[conf], now=NOW)
    in_child = decide_forked(b.snapshot(objs), CONFS[conf], now=NOW)
    assert words(in_child) == words(on_thread)


def hopeless() -> list[b.Obj]:
    """Full 2-cpu nodes and two pods of 4 cpu no eviction could ever place."""
    return [
        b.node("n0", cpu="2", memory="8Gi"),
        b.queue("q1"),
        b.pod("r0", queue="q1", cpu="2", node_name="n0", started="2024-01-01T00:00:00Z"),
        b.pod("big0", queue="q1", cpu="4", unschedulable=True),
        b.pod("big1", queue="q1", cpu="4", unschedulable=True),
    ]


def test_the_pods_told_are_the_parents_own_objects_and_its_snapshot_is_left_as_it_was() -> None:
    snapshot = b.snapshot(hopeless())
    phases = {uid: job.phase for uid, job in snapshot.jobs.items()}
    decision = decide_forked(snapshot, CONFS["live"], now=NOW)
    told = decision.unhelped()
    assert sorted(u.task.name for u in told) == ["big0", "big1"]
    for unhelped in told:
        assert snapshot.jobs[unhelped.task.job].tasks[unhelped.task.uid] is unhelped.task
    # On the thread the session admits the waiting jobs in place (``decide`` without clone);
    # the child's admissions stay in the child.
    assert {uid: job.phase for uid, job in snapshot.jobs.items()} == phases
    assert PodGroupPhase.PENDING in phases.values()


def test_what_the_decision_raises_in_the_child_is_raised_in_the_parent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*args: object, **kwargs: object) -> CycleDecision:
        raise ValueError("reclaim arguments cannot be used")

    monkeypatch.setattr(forked_decision, "decide", refuse)
    with pytest.raises(ValueError, match="cannot be used"):
        decide_forked(b.snapshot(hopeless()), CONFS["live"], now=NOW)


def test_a_child_that_runs_past_the_deadline_is_a_failed_cycle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(forked_decision, "decide", lambda *args, **kwargs: time.sleep(30))
    with pytest.raises(ForkedFailure):
        decide_forked(b.snapshot(hopeless()), CONFS["live"], now=NOW, timeout=0.3)


def test_the_usage_history_held_by_another_thread_at_the_fork_is_whole_and_free_in_the_child(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An informer thread records usage under the history's lock many times a second; a
    child forked while it did would find the lock taken for ever."""
    snapshot = b.snapshot(hopeless())
    history = snapshot.usage_history = UsageHistory(3600.0)

    def reading_then_deciding(
        snap: ClusterSnapshot,
        conf: SchedulerConfiguration,
        *,
        memos: SessionMemos | None = None,
        now: datetime | None = None,
    ) -> CycleDecision:
        assert snap.usage_history is not None
        snap.usage_history.reading()
        return decide(snap, conf, memos=memos, now=now)

    monkeypatch.setattr(forked_decision, "decide", reading_then_deciding)
    taken = threading.Event()

    def record_a_while() -> None:
        with history.locked():
            taken.set()
            time.sleep(0.3)

    informer = threading.Thread(target=record_a_while)
    informer.start()
    taken.wait()
    try:
        decision = decide_forked(snapshot, CONFS["live"], now=NOW, timeout=20)
    finally:
        informer.join()
    assert sorted(u.task.name for u in decision.unhelped()) == ["big0", "big1"]
