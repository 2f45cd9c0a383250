"""The reclaim loop around the decision: leader only, synced and fresh only, Eviction API
results (an unknown one counted as done), events, the preemptor's reservation, dry run,
waiting for the informers, deadlines within the leadership margin, and the brakes (caps and
backoff). Time is a fake clock the tests move."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from scheduler_core.api.job import JobInfo
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.controller.events import ObjectRef
from scheduler_core.controller.reclaim import (
    BACKOFF_INITIAL,
    CONFIRM_TIMEOUT,
    DEFAULT_EVICTION_TIMEOUT,
    MIN_EVICTION_DEADLINE,
    ReclaimLoop,
    ReclaimOptions,
)
from scheduler_core.controller.rest import ApiError
from tests.builders import HELM_CONF, Obj, configuration, node, pod, queue, snapshot
from tests.controller.reclaim_world import reclaim_conf


def cluster() -> list[Obj]:
    objs: list[Obj] = [node("n0", cpu="2"), node("n1", cpu="2"), queue("q1"), queue("q2")]
    objs += [pod(f"a{i}", queue="q1", node_name=f"n{i // 2}") for i in range(4)]
    objs += [pod("b0", queue="q2")]
    return objs


#: Fake answers beyond HTTP codes: the answer was lost after sending; nothing listened.
LOST = -1
REFUSED = -2


class FakeRest:
    """Answers evictions by pod name: an HTTP status, ``LOST`` or ``REFUSED``; a list of
    them is used up one request at a time (then 201). ``on_post`` runs as each request is
    sent (a test moves the leadership margin there)."""

    def __init__(self, answers: dict[str, int | list[int]] | None = None) -> None:
        self.answers = answers or {}
        self.posts: list[str] = []
        self.deadlines: list[float] = []
        self.on_post: Callable[[], None] = lambda: None

    def post_within(
        self, path: str, body: dict[str, Any], resource: str, deadline: float
    ) -> dict[str, Any]:
        assert resource == "pods/eviction" and body["kind"] == "Eviction"
        name = path.split("/")[-2]
        self.posts.append(name)
        self.deadlines.append(deadline)
        self.on_post()
        answer = self.answers.get(name, 201)
        status = (answer.pop(0) if answer else 201) if isinstance(answer, list) else answer
        if status == LOST:
            raise ApiError(0, "ReadTimeoutError", "read timed out")
        if status == REFUSED:
            raise ApiError(0, "NewConnectionError", "connection refused", sent=False)
        if status >= 300:
            raise ApiError(status, "refused")
        return {}


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, regarding: ObjectRef, event_type: str, reason: str, note: str) -> None:
        self.events.append((regarding.name, reason, note))


class HarnessCluster:
    """The harness as the loop reads the cluster (``ReclaimCluster``)."""

    def __init__(self, h: Harness) -> None:
        self.h = h

    def ready(self) -> bool:
        return self.h.synced

    def fresh(self) -> bool:
        return self.h.fresh

    def heard_since(self, monotonic: float) -> bool:
        return self.h.heard > monotonic

    def snapshot(self) -> ClusterSnapshot:
        return self.h.take_snapshot()

    def waiting(self) -> bool:
        return self.h.waiting()

    def version(self) -> int:
        return self.h.version()

    def task(self, key: str) -> TaskInfo | None:
        return self.h.cache.get(key)

    def reserve(self, task: TaskInfo, job: JobInfo) -> None:
        self.h.reserve(task, job)


class HarnessLeader:
    """The harness as whom the loop acts for (``ReclaimLeader``)."""

    def __init__(self, h: Harness) -> None:
        self.h = h
        self.rest = h.rest
        self.recorder = h.recorder

    def is_leader(self) -> bool:
        return self.h.leader

    def leadership_valid_for(self) -> float:
        return self.h.margin if self.h.leader else 0.0

    def server_now(self) -> float:
        return self.h.server


class Harness:
    def __init__(
        self,
        *,
        dry_run: bool = False,
        answers: dict[str, int | list[int]] | None = None,
        objs: list[Obj] | None = None,
        options: ReclaimOptions | None = None,
        conf: Any = None,
    ) -> None:
        self.rest = FakeRest(answers)
        self.recorder = FakeRecorder()
        self.leader = True
        self.margin = math.inf
        self.synced = True
        self.fresh = True
        self.now = 1000.0  # the monotonic clock
        self.heard = 1000.0  # when every watch was last heard from
        self.server = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
        self.objs = objs if objs is not None else cluster()
        self.reserved: list[str] = []
        self.cache: dict[str, TaskInfo] = {}
        #: What the loop's ``waiting``, ``version`` and ``snapshot`` answer (a test may
        #: replace them); by default something always waits and the cluster always changed.
        self.waiting: Callable[[], bool] = lambda: True
        self.version: Callable[[], int] = itertools.count().__next__
        self.take_snapshot: Callable[[], ClusterSnapshot] = self.snapshot
        self.loop = ReclaimLoop(
            conf or reclaim_conf(),
            options or ReclaimOptions(dry_run=dry_run),
            cluster=HarnessCluster(self),
            leader=HarnessLeader(self),  # type: ignore[arg-type]
            registry=CollectorRegistry(),
            clock=lambda: self.now,
        )

    def gone(self, *names: str) -> None:
        """The cache (and the cluster) no longer hold these pods."""
        self.objs = [o for o in self.objs if o["metadata"]["name"] not in names]
        self.snapshot()

    def replace_victims(self) -> None:
        """Every victim gone, and its preemptor (a pending pod of q2) running on its node."""
        victims = {
            name: o["spec"]["nodeName"]
            for o in self.objs
            if (name := o["metadata"]["name"]) in self.rest.posts
        }
        waiting = [o for o in self.objs if o["kind"] == "Pod" and not o["spec"].get("nodeName")]
        for (_, node_name), preemptor in zip(victims.items(), waiting, strict=False):
            preemptor["spec"]["nodeName"] = node_name
            preemptor["status"]["phase"] = "Running"
        self.gone(*victims)

    def tick(self, seconds: float) -> None:
        """Time passes and every watch is heard from."""
        self.now += seconds
        self.heard = self.now

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

    def held(self, reason: str) -> float:
        return self.loop.metrics.held.labels(reason)._value.get()


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


def test_a_cycle_decided_in_a_forked_child_evicts_and_explains_as_one_on_the_thread() -> None:
    on_thread, in_child = Harness(), Harness(options=ReclaimOptions(fork=True))
    for h in (on_thread, in_child):
        decision = h.loop.run_once()
        assert decision is not None and len(decision.evictions) == 1
    assert in_child.rest.posts == on_thread.rest.posts
    assert in_child.recorder.events == on_thread.recorder.events
    assert in_child.reserved == on_thread.reserved == ["b0"]
    assert in_child.count("ok") == 1


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


def test_a_disruption_budget_refusal_is_counted_and_retried_after_a_backoff() -> None:
    h = Harness(answers={f"a{i}": 429 for i in range(4)})
    h.loop.run_once()
    assert h.count("pdb") == 1 and h.reserved == []
    h.tick(1.0)
    assert h.loop.run_once() is not None  # nothing unconfirmed: the next cycle decides
    assert h.count("pdb") == 1 and h.held("backoff") == 1
    h.tick(BACKOFF_INITIAL)
    h.loop.run_once()
    assert h.count("pdb") == 2


def test_gone_and_failed_evictions_are_told_apart() -> None:
    h = Harness(answers={f"a{i}": 404 for i in range(4)})
    h.loop.run_once()
    assert h.count("gone") == 1
    h = Harness(answers={f"a{i}": 403 for i in range(4)})
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
    lost = Harness(answers={f"a{i}": LOST for i in range(4)})
    lost.loop.run_once()
    assert recent_evictions(lost.loop)[0].reason.startswith("unconfirmed (no answer): ")


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
    h.waiting = lambda: waiting[0]
    copy = h.take_snapshot
    h.take_snapshot = lambda: taken.append(1) or copy()  # type: ignore[func-returns-value]
    assert h.loop.run_once() is None and taken == [] and skipped(h, "nothing-waiting") == 1
    waiting[0] = True
    assert h.loop.run_once() is not None and taken == [1]


def test_an_unchanged_cluster_that_decided_nothing_is_not_decided_again() -> None:
    h = Harness()
    h.objs = [o for o in h.objs if o["metadata"]["name"] != "a0"]  # q2's pod fits: no eviction
    version = [7]
    h.version = lambda: version[0]
    assert h.loop.run_once() is not None
    assert h.loop.run_once() is None and skipped(h, "unchanged") == 1
    version[0] = 8  # anything changed: decide again
    assert h.loop.run_once() is not None


def test_a_new_configuration_decides_again_on_an_unchanged_cluster() -> None:
    h = Harness()
    h.objs = [o for o in h.objs if o["metadata"]["name"] != "a0"]
    h.version = lambda: 7
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
    h.version = lambda: 7
    assert h.loop.run_once() is not None and h.rest.posts == []
    assert h.loop.run_once() is not None and skipped(h, "unchanged") == 0


# --- results whose outcome is unknown ----------------------------------------------------


def test_a_server_error_or_a_lost_answer_is_unknown_not_a_failure() -> None:
    for answer in (500, 504, LOST):
        h = Harness(answers={f"a{i}": answer for i in range(4)})
        h.loop.run_once()
        assert h.count("unknown") == 1 and h.count("error") == 0, answer


def test_an_eviction_whose_answer_was_lost_is_awaited_like_a_success() -> None:
    h = Harness(answers={f"a{i}": LOST for i in range(4)})
    h.loop.run_once()
    [victim] = h.rest.posts
    assert {r for _, r, _ in h.recorder.events} >= {"EvictionUnconfirmed", "Reclaiming"}
    assert h.reserved == ["b0"]  # the room may be free: it is kept for the preemptor
    for _ in range(int(CONFIRM_TIMEOUT) - 1):
        h.tick(1.0)
        assert h.loop.run_once() is None  # the victim still shows Running: wait
    assert h.rest.posts == [victim]
    h.gone(victim)  # the eviction had been applied after all
    h.tick(1.0)
    assert h.loop.run_once() is not None
    assert h.rest.posts == [victim]  # its room is not counted again: no second victim


def test_a_victim_still_running_past_the_bound_is_taken_as_not_evicted_and_backed_off() -> None:
    h = Harness(answers={f"a{i}": LOST for i in range(4)})
    h.loop.run_once()
    [victim] = h.rest.posts
    h.tick(CONFIRM_TIMEOUT + 1)
    decision = h.loop.run_once()
    assert decision is not None and decision.evictions[0].victim.name == victim
    assert h.rest.posts == [victim] and h.held("backoff") == 1


def test_past_the_bound_the_loop_still_waits_until_every_watch_has_been_heard_from() -> None:
    h = Harness(answers={f"a{i}": LOST for i in range(4)})
    h.loop.run_once()
    h.now += CONFIRM_TIMEOUT + 10  # time passes, but no watch has delivered anything since
    assert h.loop.run_once() is None
    assert h.loop.metrics.skipped.labels("awaiting-informers")._value.get() == 1
    h.heard = h.now
    assert h.loop.run_once() is not None


# --- freshness ---------------------------------------------------------------------------


def test_a_stale_cache_decides_nothing() -> None:
    h = Harness()
    h.fresh = False
    assert h.loop.run_once() is None and h.rest.posts == []
    assert skipped(h, "stale-cache") == 1
    h.fresh = True
    assert h.loop.run_once() is not None and len(h.rest.posts) == 1


# --- leadership --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("margin", "deadline"),
    [
        (math.inf, DEFAULT_EVICTION_TIMEOUT),
        (30.0, DEFAULT_EVICTION_TIMEOUT),
        (3.5, 3.5),
        (MIN_EVICTION_DEADLINE, MIN_EVICTION_DEADLINE),
    ],
)
def test_every_eviction_deadline_fits_in_the_leadership_margin(
    margin: float, deadline: float
) -> None:
    h = Harness()
    h.margin = margin
    h.loop.run_once()
    assert h.rest.deadlines == [deadline]


def test_with_too_little_leadership_left_nothing_is_sent() -> None:
    h = Harness()
    h.margin = MIN_EVICTION_DEADLINE / 2
    h.loop.run_once()
    assert h.rest.posts == [] and h.held("leadership-margin") == 1
    assert h.reserved == [] and h.recorder.events == []


def test_an_eviction_never_sent_is_retried_each_time_sized_against_the_margin_then() -> None:
    h = Harness(answers={f"a{i}": [REFUSED, REFUSED, 201] for i in range(4)})
    margins = iter([9.0, 4.0, 2.0])
    seen: list[float] = []

    def shrink() -> None:
        h.margin = next(margins)
        seen.append(h.margin)

    h.margin = 10.0
    h.rest.on_post = shrink
    h.loop.run_once()
    assert h.rest.deadlines == [5.0, 5.0, 4.0]  # each within the margin it was sent under
    assert h.count("ok") == 1


def test_a_lease_lost_between_attempts_stops_the_retries() -> None:
    h = Harness(answers={f"a{i}": REFUSED for i in range(4)})

    def lose() -> None:
        h.leader = False

    h.rest.on_post = lose
    h.loop.run_once()
    assert len(h.rest.posts) == 1 and h.reserved == []


def test_an_eviction_that_may_have_arrived_is_never_sent_twice() -> None:
    h = Harness(answers={f"a{i}": [LOST, 201] for i in range(4)})
    h.loop.run_once()
    assert len(h.rest.posts) == 1


# --- brakes ------------------------------------------------------------------------------


def big_cluster(nodes: int) -> list[Obj]:
    """q1 runs two 1-cpu pods on each of ``nodes`` 2-cpu nodes; q2, of equal weight, waits
    with as many: the decision wants to take half of q1's pods back."""
    objs: list[Obj] = [node(f"n{i}", cpu="2") for i in range(nodes)] + [queue("q1"), queue("q2")]
    objs += [pod(f"a{i}", queue="q1", node_name=f"n{i // 2}") for i in range(2 * nodes)]
    objs += [pod(f"b{i}", queue="q2") for i in range(2 * nodes)]
    return objs


def test_by_default_a_cycle_evicts_at_most_ten() -> None:
    h = Harness(objs=big_cluster(12))
    decision = h.loop.run_once()
    assert decision is not None and len(h.rest.posts) == 10


def test_no_more_than_the_per_minute_cap_over_any_minute() -> None:
    options = ReclaimOptions(max_evictions=0, max_evictions_per_minute=3)
    h = Harness(objs=big_cluster(6), options=options)
    h.loop.run_once()
    assert len(h.rest.posts) == 3 and h.held("rate-limit") == 1
    h.replace_victims()
    h.tick(30.0)
    h.loop.run_once()
    assert len(h.rest.posts) == 3  # the first three are within the minute still
    h.tick(31.0)
    h.loop.run_once()
    assert len(h.rest.posts) == 6


def test_a_failing_victim_waits_twice_as_long_after_each_failure() -> None:
    h = Harness(answers={f"a{i}": 403 for i in range(4)})
    sent_at: list[float] = []
    for _ in range(40):
        before = len(h.rest.posts)
        h.loop.run_once()
        if len(h.rest.posts) > before:
            sent_at.append(h.now)
        h.tick(1.0)
    gaps = [b - a for a, b in itertools.pairwise(sent_at)]
    assert gaps == [BACKOFF_INITIAL, 2 * BACKOFF_INITIAL, 4 * BACKOFF_INITIAL, 8 * BACKOFF_INITIAL]


def test_a_minimum_runtime_is_judged_on_the_api_servers_clock() -> None:
    started = "2026-01-01T00:00:00Z"
    objs = cluster()
    for obj in objs:
        if obj["metadata"]["name"].startswith("a"):
            obj["status"]["startTime"] = started
            obj["metadata"]["annotations"]["kube-queue-extender.io/min-runtime"] = "1h"
    h = Harness(objs=objs)
    start = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    h.server = start + 1800  # half an hour in, on the server's clock, whatever ours says
    h.loop.run_once()
    assert h.rest.posts == []
    h.server = start + 3601
    h.loop.run_once()
    assert len(h.rest.posts) == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"max_evictions": -1},
        {"max_evictions_per_minute": -5},
        {"eviction_timeout": 0.5},
    ],
)
def test_unusable_brakes_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ReclaimOptions(**bad)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    margins=st.lists(st.floats(0.0, 20.0, allow_nan=False), min_size=1, max_size=8),
    answers=st.lists(st.sampled_from([REFUSED, LOST, 201, 429, 500]), min_size=1, max_size=8),
)
def test_no_request_ever_outlives_the_margin_it_was_sent_under(
    margins: list[float], answers: list[int]
) -> None:
    """Whatever the lease does between attempts and whatever the answers, every eviction
    request's deadline is within the leadership margin at the moment it is sent."""
    h = Harness(
        objs=big_cluster(4),
        answers={f"a{i}": list(answers) + [201] * 8 for i in range(8)},
    )
    upcoming = iter(margins)
    h.margin = next(upcoming)
    under: list[float] = []

    def sent() -> None:
        under.append(h.margin)
        h.margin = next(upcoming, h.margin)

    h.rest.on_post = sent
    h.loop.run_once()
    assert len(under) == len(h.rest.deadlines)
    for margin, deadline in zip(under, h.rest.deadlines, strict=True):
        assert MIN_EVICTION_DEADLINE <= deadline <= min(margin, DEFAULT_EVICTION_TIMEOUT)


def one_preemptor_two_victims() -> list[Obj]:
    """q2's one waiting pod needs a whole 2-cpu node: two victims of q1 on the same node."""
    objs: list[Obj] = [node("n0", cpu="2"), node("n1", cpu="2"), queue("q1"), queue("q2")]
    objs += [pod(f"a{i}", queue="q1", node_name=f"n{i // 2}") for i in range(4)]
    return [*objs, pod("b0", queue="q2", cpu="2")]


def test_a_victim_set_goes_whole_or_stops_at_the_first_refusal() -> None:
    h = Harness(objs=one_preemptor_two_victims())
    decision = h.loop.run_once()
    assert decision is not None and len(decision.evictions) == 2 and len(h.rest.posts) == 2
    refused = Harness(objs=one_preemptor_two_victims(), answers={f"a{i}": 429 for i in range(4)})
    refused.loop.run_once()
    assert len(refused.rest.posts) == 1  # the second would free too little alone


def test_a_set_with_one_victim_in_backoff_is_held_whole() -> None:
    h = Harness(objs=one_preemptor_two_victims(), answers={f"a{i}": [429] for i in range(4)})
    h.loop.run_once()
    [first] = h.rest.posts
    h.tick(1.0)  # within the first's backoff; its set-mate has never failed
    h.loop.run_once()
    assert h.rest.posts == [first] and h.held("backoff") == 2
    h.tick(BACKOFF_INITIAL)
    h.loop.run_once()
    assert len(h.rest.posts) == 3  # the whole set again: the first, then its set-mate


def test_a_set_that_would_pass_the_minute_cap_is_held_whole() -> None:
    h = Harness(
        objs=one_preemptor_two_victims(),
        options=ReclaimOptions(max_evictions_per_minute=1),
    )
    h.loop.run_once()
    assert h.rest.posts == [] and h.held("rate-limit") == 2
