"""Each session hook combines the plugins' answers with Volcano's tier rules.

The plugins here are test doubles registered under test-only names: the subject is the
dispatch, not any real plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from scheduler_core.api.job import JobInfo
from scheduler_core.api.node import NodeInfo
from scheduler_core.api.queue import QueueInfo
from scheduler_core.api.resource import Resource
from scheduler_core.api.snapshot import ClusterSnapshot
from scheduler_core.api.task import TaskInfo
from scheduler_core.conf import load_configuration
from scheduler_core.framework.arguments import Arguments
from scheduler_core.framework.fit import PERMIT, REJECT, Vote
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.hooks import (
    ALLOCATABLE,
    JOB_ENQUEUEABLE,
    JOB_PIPELINED,
    JOB_STARVING,
    JOB_VALID,
    OVERUSED,
    PREEMPTABLE,
    RECLAIMABLE,
    SIMULATE_ADD_TASK,
    TASK_ORDER,
    CycleState,
    Hook,
)
from scheduler_core.framework.registry import Plugin
from scheduler_core.framework.session import Session
from scheduler_core.framework.status import SUCCESS, Code, Status
from tests.builders import task
from tests.conftest import RegisterPlugin

#: per test: plugin name -> {hook: function}
BEHAVIOUR: dict[str, dict[Hook[Any], Any]] = {}


def _make_plugin(plugin_name: str) -> type[Plugin]:
    class Scripted(Plugin):
        name: ClassVar[str] = plugin_name

        def on_session_open(self, ssn: Session) -> None:
            for hook, fn in BEHAVIOUR.get(self.name, {}).items():
                ssn.add_hook(hook, self.name, fn)

    return Scripted


@pytest.fixture(autouse=True)
def _scripted_plugins(register_plugin: RegisterPlugin) -> None:
    BEHAVIOUR.clear()
    for name in ("t-a", "t-b", "t-c", "t-d"):
        register_plugin(_make_plugin(name))


def session(tiers: str) -> Session:
    return open_session(ClusterSnapshot(), load_configuration(tiers))


TWO_TIERS = """
tiers:
- plugins: [{name: t-a}, {name: t-b}]
- plugins: [{name: t-c}, {name: t-d}]
"""

V1, V2, V3 = task("v1"), task("v2"), task("v3")


def victims_fn(keep: list[TaskInfo], vote: int = 1) -> Callable[..., Any]:
    return lambda _p, _cands: (list(keep), vote)


def test_preemptable_is_the_intersection_within_a_tier_in_first_list_order() -> None:
    BEHAVIOUR["t-a"] = {PREEMPTABLE: victims_fn([V3, V1, V2])}
    BEHAVIOUR["t-b"] = {PREEMPTABLE: victims_fn([V1, V3])}
    ssn = session(TWO_TIERS)
    assert [v.uid for v in ssn.preemptable(task("p"), [V1, V2, V3])] == ["v3", "v1"]


def test_a_veto_in_tier_one_falls_through_to_tier_two() -> None:
    BEHAVIOUR["t-a"] = {PREEMPTABLE: victims_fn([V1, V2])}
    BEHAVIOUR["t-b"] = {PREEMPTABLE: victims_fn([])}
    BEHAVIOUR["t-c"] = {PREEMPTABLE: victims_fn([V2])}
    ssn = session(TWO_TIERS)
    assert [v.uid for v in ssn.preemptable(task("p"), [V1, V2])] == ["v2"]


def test_an_abstaining_plugin_is_ignored() -> None:
    BEHAVIOUR["t-a"] = {RECLAIMABLE: victims_fn([], vote=0)}
    BEHAVIOUR["t-b"] = {RECLAIMABLE: victims_fn([V1])}
    ssn = session(TWO_TIERS)
    assert [v.uid for v in ssn.reclaimable(task("p"), [V1])] == ["v1"]


def test_a_tier_one_verdict_hides_tier_two() -> None:
    BEHAVIOUR["t-a"] = {RECLAIMABLE: victims_fn([V1, V2])}
    BEHAVIOUR["t-c"] = {RECLAIMABLE: victims_fn([V2])}
    ssn = session(TWO_TIERS)
    assert [v.uid for v in ssn.reclaimable(task("p"), [V1, V2])] == ["v1", "v2"]


def test_disabled_flag_removes_a_plugin_from_the_intersection() -> None:
    BEHAVIOUR["t-a"] = {PREEMPTABLE: victims_fn([V1, V2])}
    BEHAVIOUR["t-b"] = {PREEMPTABLE: victims_fn([])}
    ssn = session("tiers:\n- plugins: [{name: t-a}, {name: t-b, enablePreemptable: false}]\n")
    assert [v.uid for v in ssn.preemptable(task("p"), [V1, V2])] == ["v1", "v2"]


def test_no_victims_when_every_tier_vetoes() -> None:
    BEHAVIOUR["t-a"] = {PREEMPTABLE: victims_fn([])}
    BEHAVIOUR["t-c"] = {PREEMPTABLE: victims_fn([])}
    assert session(TWO_TIERS).preemptable(task("p"), [V1]) == []


JOB = JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")
QUEUE = QueueInfo(name="q")


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        ({}, True),  # nothing registered: pipelined
        ({"t-a": 0, "t-c": 0}, True),  # all abstain
        ({"t-a": 1, "t-c": REJECT}, True),  # tier one permits: tier two never asked
        ({"t-a": 0, "t-c": REJECT}, False),  # tier one abstains, tier two rejects
        ({"t-a": 1, "t-b": REJECT}, False),  # any reject inside the deciding tier
    ],
)
def test_job_pipelined_votes(votes: dict[str, int], expected: bool) -> None:
    for name, vote in votes.items():
        BEHAVIOUR[name] = {JOB_PIPELINED: lambda _j, vote=vote: Vote(vote)}
    assert session(TWO_TIERS).job_pipelined(JOB) is expected


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        ({}, False),  # no hook: not starving
        ({"t-a": True, "t-c": False}, True),  # first tier with a hook decides
        ({"t-a": True, "t-b": False}, False),  # all of that tier must agree
        ({"t-c": True}, True),
    ],
)
def test_job_starving_is_answered_by_the_first_tier_with_a_hook(
    answers: dict[str, bool], expected: bool
) -> None:
    for name, answer in answers.items():
        BEHAVIOUR[name] = {JOB_STARVING: lambda _j, a=answer: a}
    assert session(TWO_TIERS).job_starving(JOB) is expected


def test_overused_if_any_plugin_says_so_allocatable_only_if_all_do() -> None:
    BEHAVIOUR["t-a"] = {OVERUSED: lambda _q: False, ALLOCATABLE: lambda _q, _t: Vote(PERMIT)}
    BEHAVIOUR["t-d"] = {OVERUSED: lambda _q: True, ALLOCATABLE: lambda _q, _t: Vote(REJECT)}
    ssn = session(TWO_TIERS)
    assert ssn.overused(QUEUE) is True
    assert ssn.allocatable(QUEUE, task("p")) is False
    assert ssn.preemptive(QUEUE, [task("p")]) is True  # no hook registered: may reclaim


def test_job_valid_returns_the_first_failure_and_ignores_flags() -> None:
    BEHAVIOUR["t-a"] = {JOB_VALID: lambda _j: SUCCESS}
    BEHAVIOUR["t-c"] = {
        JOB_VALID: lambda _j: Status(Code.UNSCHEDULABLE, ["m"], reason_code="NotEnoughTasks")
    }
    result = session(TWO_TIERS).job_valid(JOB)
    assert result is not None and result.reason_code == "NotEnoughTasks"


def test_orders_use_the_first_nonzero_comparator_then_age_then_uid() -> None:
    BEHAVIOUR["t-a"] = {TASK_ORDER: lambda _l, _r: 0}
    BEHAVIOUR["t-b"] = {TASK_ORDER: lambda l, r: r.pod_priority - l.pod_priority}
    ssn = session(TWO_TIERS)
    assert ssn.task_order_fn(task("x", priority=5), task("y", priority=1)) is True
    old = JobInfo(uid="ns/b", name="b", namespace="ns", queue="q", creation_timestamp="2026-01-01")
    new = JobInfo(uid="ns/a", name="a", namespace="ns", queue="q", creation_timestamp="2026-02-01")
    assert ssn.job_order_fn(old, new) is True
    same_age = JobInfo(
        uid="ns/c", name="c", namespace="ns", queue="q", creation_timestamp="2026-01-01"
    )
    assert ssn.job_order_fn(old, same_age) is True  # uid "ns/b" < "ns/c"


def test_task_fallback_order_uses_the_job_controllers_index() -> None:
    ssn = session(TWO_TIERS)
    assert ssn.task_order_fn(task("job-worker-2"), task("job-worker-10")) is True
    assert ssn.task_order_fn(task("job-worker-10"), task("job-worker-2")) is False


def test_victims_queue_pops_lowest_priority_of_the_same_job_first() -> None:
    BEHAVIOUR["t-a"] = {TASK_ORDER: lambda l, r: r.pod_priority - l.pod_priority}
    ssn = session(TWO_TIERS)
    queue = ssn.build_victims_priority_queue(
        [task("hi", priority=9), task("lo", priority=1), task("mid", priority=5)], task("p")
    )
    assert [queue.pop().uid for _ in range(3)] == ["lo", "mid", "hi"]


def test_arguments_follow_volcanos_accessor_rules() -> None:
    args = Arguments({"i": 3, "f": 2, "b": "true", "s": "x", "bad": "yes", "ib": True})
    assert args.get_int("i", 0) == 3
    assert args.get_int("f", 0) == 2
    assert args.get_int("ib", 7) == 7  # a bool is not an int
    assert args.get_float("f", 0.0) == 2.0
    assert args.get_bool("b", False) is True
    assert args.get_bool("bad", False) is False
    assert args.get_str("s", "") == "x"


def test_an_empty_intersection_is_a_veto_for_the_rest_of_the_tier() -> None:
    """A=[v1], B=[v2] leave no common victim: C's [v1, v2] must not resurrect them."""
    BEHAVIOUR["t-a"] = {PREEMPTABLE: victims_fn([V1])}
    BEHAVIOUR["t-b"] = {PREEMPTABLE: victims_fn([V2])}
    BEHAVIOUR["t-c"] = {PREEMPTABLE: victims_fn([V1, V2])}
    ssn = session("tiers:\n- plugins: [{name: t-a}, {name: t-b}, {name: t-c}]\n")
    assert ssn.preemptable(task("p"), [V1, V2]) == []


def test_after_a_tier_vetoes_by_intersection_the_next_tier_decides() -> None:
    BEHAVIOUR["t-a"] = {PREEMPTABLE: victims_fn([V1])}
    BEHAVIOUR["t-b"] = {PREEMPTABLE: victims_fn([V2])}
    BEHAVIOUR["t-c"] = {PREEMPTABLE: victims_fn([V2])}
    assert [v.uid for v in session(TWO_TIERS).preemptable(task("p"), [V1, V2])] == ["v2"]


def test_the_rejecting_plugins_reason_is_the_enqueue_answer() -> None:
    BEHAVIOUR["t-a"] = {JOB_ENQUEUEABLE: lambda _j: Vote(PERMIT)}
    BEHAVIOUR["t-b"] = {JOB_ENQUEUEABLE: lambda _j: Vote(REJECT, "queue q is full")}
    ssn = session(TWO_TIERS)
    assert ssn.job_enqueue_vote(JOB) == Vote(REJECT, "queue q is full")
    assert ssn.job_enqueueable(JOB) is False


def test_a_hook_with_an_unknown_tier_flag_fails_where_it_is_declared() -> None:
    with pytest.raises(ValueError, match="unknown tier flag 'enablePreemptible'"):
        Hook("preemptable", "enablePreemptible")


def test_a_hook_filled_after_the_first_dispatch_takes_part_from_then_on() -> None:
    ssn = session(TWO_TIERS)
    assert ssn.overused(QUEUE) is False
    ssn.add_hook(OVERUSED, "t-c", lambda _q: True)
    assert ssn.overused(QUEUE) is True


def test_only_plugins_that_may_pick_victims_or_judge_allocatable_simulate() -> None:
    added: list[str] = []
    for name in ("t-a", "t-b", "t-c"):
        BEHAVIOUR[name] = {SIMULATE_ADD_TASK: lambda *_a, n=name: added.append(n)}
    ssn = session(
        "tiers:\n- plugins: [{name: t-a, enablePreemptable: false, enabledAllocatable: false},"
        " {name: t-b, enablePreemptable: false}, {name: t-c, enabledAllocatable: false}]\n"
    )
    assert ssn.simulating == {"t-b", "t-c"}
    node = NodeInfo(name="n1", allocatable=Resource(1000, 0), capacity=Resource(1000, 0))
    ssn.simulate_add_task(CycleState(), task("p"), V1, node)
    assert added == ["t-b", "t-c"]
