"""The reclaim loop around the decision: leader only, synced only, Eviction API results,
events, the preemptor's reservation, dry run, and waiting for the informers."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from scheduler_core.api.job import JobInfo
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.controller.events import ObjectRef
from scheduler_core.controller.reclaim import ReclaimLoop, ReclaimOptions
from scheduler_core.controller.rest import ApiError
from tests.builders import HELM_CONF, Obj, configuration, node, pod, queue, snapshot
from tests.controller.reclaim_world import reclaim_conf


def cluster() -> list[Obj]:
    objs: list[Obj] = [node("n0", cpu="2"), node("n1", cpu="2"), queue("q1"), queue("q2")]
    objs += [pod(f"a{i}", queue="q1", node_name=f"n{i // 2}") for i in range(4)]
    objs += [pod("b0", queue="q2")]
    return objs


class FakeRest:
    def __init__(self, answers: dict[str, int] | None = None) -> None:
        self.answers = answers or {}
        self.posts: list[str] = []

    def post(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        assert resource == "pods/eviction" and body["kind"] == "Eviction"
        name = path.split("/")[-2]
        self.posts.append(name)
        status = self.answers.get(name, 201)
        if status >= 300:
            raise ApiError(status, "refused")
        return {}


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, regarding: ObjectRef, event_type: str, reason: str, note: str) -> None:
        self.events.append((regarding.name, reason, note))


class Harness:
    def __init__(self, *, dry_run: bool = False, answers: dict[str, int] | None = None) -> None:
        self.rest = FakeRest(answers)
        self.recorder = FakeRecorder()
        self.leader = True
        self.synced = True
        self.objs = cluster()
        self.reserved: list[str] = []
        self.cache: dict[str, TaskInfo] = {}
        self.loop = ReclaimLoop(
            reclaim_conf(),
            ReclaimOptions(dry_run=dry_run),
            rest=self.rest,  # type: ignore[arg-type]
            recorder=self.recorder,  # type: ignore[arg-type]
            is_leader=lambda: self.leader,
            ready=lambda: self.synced,
            snapshot=self.snapshot,
            task=self.cache.get,
            reserve=self.reserve,
            registry=CollectorRegistry(),
        )

    def snapshot(self) -> ClusterSnapshot:
        """The loop's private copy; the cache (what ``task`` reads) is a separate one."""
        live = snapshot(self.objs)
        self.cache.clear()
        self.cache.update({t.key: t for j in live.jobs.values() for t in j.tasks.values()})
        return snapshot(self.objs)

    def reserve(self, task: TaskInfo, job: JobInfo) -> None:
        self.reserved.append(task.name)

    def count(self, result: str) -> float:
        return self.loop.metrics.evictions.labels(result)._value.get()


def test_the_leader_evicts_through_the_eviction_api_and_explains_both_sides() -> None:
    h = Harness()
    decision = h.loop.run_once()
    assert decision is not None and len(decision.evictions) == 1
    [victim] = h.rest.posts
    reasons = {(name, reason) for name, reason, _ in h.recorder.events}
    assert (victim, "Reclaimed") in reasons and ("b0", "Reclaiming") in reasons
    note = next(n for name, r, n in h.recorder.events if r == "Reclaimed")
    assert note.startswith("queue q1 is overused (allocated cpu 4 > deserved cpu 3)")
    assert h.reserved == ["b0"]
    assert h.count("ok") == 1


def test_a_follower_or_an_unsynced_cache_does_nothing() -> None:
    h = Harness()
    h.leader = False
    assert h.loop.run_once() is None
    h.leader, h.synced = True, False
    assert h.loop.run_once() is None
    assert h.rest.posts == [] and h.recorder.events == []


def test_dry_run_evicts_nothing_but_records_would_reclaim() -> None:
    h = Harness(dry_run=True)
    h.loop.run_once()
    assert h.rest.posts == []
    assert {r for _, r, _ in h.recorder.events} == {"WouldReclaim"}
    assert h.reserved == []
    assert h.count("dry-run") == 1


def test_a_disruption_budget_refusal_is_counted_and_retried_later() -> None:
    h = Harness(answers={f"a{i}": 429 for i in range(4)})
    h.loop.run_once()
    assert h.count("pdb") == 1 and h.reserved == []
    assert h.loop.run_once() is not None  # nothing unconfirmed: the next cycle runs
    assert h.count("pdb") == 2


def test_gone_and_failed_evictions_are_told_apart() -> None:
    h = Harness(answers={f"a{i}": 404 for i in range(4)})
    h.loop.run_once()
    assert h.count("gone") == 1
    h = Harness(answers={f"a{i}": 500 for i in range(4)})
    h.loop.run_once()
    assert h.count("error") == 1


def test_no_cycle_runs_while_an_evicted_pod_still_looks_running() -> None:
    h = Harness()
    h.loop.run_once()
    [victim] = h.rest.posts
    assert h.loop.run_once() is None  # the cache still shows the victim Running
    h.objs = [o for o in h.objs if o["metadata"]["name"] != victim]
    h.snapshot()
    assert h.loop.run_once() is not None


def test_the_last_evictions_are_kept_for_the_status_page_newest_first() -> None:
    from app.backend.engine import recent_evictions

    h = Harness()
    h.loop.run_once()
    [row] = recent_evictions(h.loop)
    [victim] = h.rest.posts
    assert row.pod.endswith("/" + victim) and row.queue == "q1"
    assert row.reason.startswith("queue q1 is overused") and row.at.endswith("Z")
    dry = Harness(dry_run=True)
    dry.loop.run_once()
    assert recent_evictions(dry.loop)[0].reason.startswith("dry run: ")


def test_a_new_configuration_is_used_from_the_next_cycle() -> None:
    h = Harness()
    h.loop.use_configuration(configuration(HELM_CONF, "enqueue, allocate"))
    decision = h.loop.run_once()
    assert decision is not None and decision.evictions == []
    assert h.rest.posts == []


def test_a_configuration_with_unusable_reclaim_arguments_is_refused_and_the_old_one_kept() -> None:
    h = Harness()
    before = h.loop.conf
    with pytest.raises(ValueError, match=r"reclaim\.minRuntime"):
        h.loop.use_configuration(reclaim_conf(**{"reclaim.minRuntime": "soon"}))
    assert h.loop.conf is before
    decision = h.loop.run_once()
    assert decision is not None and len(decision.evictions) == 1


def skipped(h: Harness, reason: str) -> float:
    return h.loop.metrics.skipped.labels(reason)._value.get()


def test_with_nothing_waiting_a_cycle_copies_and_decides_nothing() -> None:
    h = Harness()
    waiting = [False]
    taken: list[int] = []
    h.loop.waiting = lambda: waiting[0]
    copy = h.loop.snapshot
    h.loop.snapshot = lambda: taken.append(1) or copy()  # type: ignore[func-returns-value]
    assert h.loop.run_once() is None and taken == [] and skipped(h, "nothing-waiting") == 1
    waiting[0] = True
    assert h.loop.run_once() is not None and taken == [1]


def test_an_unchanged_cluster_that_decided_nothing_is_not_decided_again() -> None:
    h = Harness()
    h.objs = [o for o in h.objs if o["metadata"]["name"] != "a0"]  # q2's pod fits: no eviction
    version = [7]
    h.loop.version = lambda: version[0]
    assert h.loop.run_once() is not None
    assert h.loop.run_once() is None and skipped(h, "unchanged") == 1
    version[0] = 8  # anything changed: decide again
    assert h.loop.run_once() is not None


def test_a_new_configuration_decides_again_on_an_unchanged_cluster() -> None:
    h = Harness()
    h.objs = [o for o in h.objs if o["metadata"]["name"] != "a0"]
    h.loop.version = lambda: 7
    assert h.loop.run_once() is not None
    assert h.loop.run_once() is None  # quiet and unchanged: skipped
    h.loop.use_configuration(configuration(HELM_CONF, "enqueue, reclaim"))
    assert h.loop.run_once() is not None


def test_a_minimum_runtime_keeps_an_unchanged_cluster_under_review() -> None:
    # The pods are too young now; with time alone they become victims, so every cycle looks.
    h = Harness()
    for obj in h.objs:
        if obj["kind"] == "Pod" and obj["metadata"]["name"].startswith("a"):
            obj["metadata"]["annotations"]["kube-queue-extender.io/min-runtime"] = "1000000h"
    h.loop.version = lambda: 7
    assert h.loop.run_once() is not None and h.rest.posts == []
    assert h.loop.run_once() is not None and skipped(h, "unchanged") == 0
