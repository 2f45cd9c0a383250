"""The members of a Kubernetes PodGroup gang are assumed in one group cycle and released
together when that cycle fails: reported unschedulable, or none bound within the window."""

from __future__ import annotations

from typing import Any

from scheduler_core.accounting.keeper import DEFAULT_GROUP_WINDOW, QueueAccounting
from scheduler_core.plugins.proportion import ProportionPlugin
from tests.builders import accounting, assume, native_podgroup, node, pod, podgroup, queue

MEMBERS = ("a", "b", "c")


def member(name: str, **extra: Any) -> dict[str, Any]:
    return pod(name, scheduling_group="g", **extra)


def cluster(*members: dict[str, Any]) -> list[dict[str, Any]]:
    return [node("n1", cpu="16"), queue("q1"), native_podgroup("g", 3, queue="q1"), *members]


def queue_cpu(acct: QueueAccounting, queue_name: str = "q1") -> float:
    """The CPU the accounting session's proportion plugin counts allocated in the queue."""
    proportion = acct.session().plugins["proportion"]
    assert isinstance(proportion, ProportionPlugin)
    return proportion.queue_opts[queue_name].allocated.milli_cpu


def test_a_member_reported_unschedulable_releases_the_whole_group_at_once() -> None:
    acct, _ = accounting(cluster(*(member(n) for n in MEMBERS)))
    for name in MEMBERS:
        assume(acct, member(name), ["n1"])
    assert len(acct.assumed) == 3
    acct.state.upsert("Pod", member("b", unschedulable=True))
    acct.session()
    assert acct.assumed == {}
    assert acct.group_released == 3 and acct.expired == 0


def test_no_member_bound_within_the_window_releases_the_group_before_the_ttl() -> None:
    acct, clock = accounting(cluster(*(member(n) for n in MEMBERS)), ttl=300)
    for name in MEMBERS:
        assume(acct, member(name), ["n1"])
    clock.now += DEFAULT_GROUP_WINDOW - 1
    acct.session()
    assert len(acct.assumed) == 3
    clock.now += 2
    acct.session()
    assert acct.assumed == {} and acct.group_released == 3 and acct.expired == 0


def test_the_window_runs_from_the_groups_last_assumption() -> None:
    acct, clock = accounting(cluster(*(member(n) for n in MEMBERS)), ttl=300)
    assume(acct, member("a"), ["n1"])
    clock.now += DEFAULT_GROUP_WINDOW - 1
    assume(acct, member("b"), ["n1"])
    clock.now += 2
    acct.session()
    assert sorted(acct.assumed) == ["ns/a", "ns/b"]


def test_a_member_bound_in_time_means_the_group_was_placed_and_the_rest_stay_assumed() -> None:
    acct, clock = accounting(cluster(*(member(n) for n in MEMBERS)), ttl=300)
    for name in MEMBERS:
        assume(acct, member(name), ["n1"])
    acct.state.upsert("Pod", member("a", node_name="n1"))
    acct.session()
    clock.now += DEFAULT_GROUP_WINDOW + 1
    acct.session()
    assert sorted(acct.assumed) == ["ns/b", "ns/c"]
    assert acct.group_released == 0


def test_an_unschedulable_condition_older_than_the_assumption_is_not_news() -> None:
    """A member retried after an earlier failure still carries that failure's condition;
    only a pod update after the assumption says this cycle failed."""
    stale = [member(n, unschedulable=True) for n in MEMBERS]
    acct, _ = accounting(cluster(*stale))
    for p in stale:
        assume(acct, p, ["n1"])
    acct.state.upsert("Pod", member("c", unschedulable=True, labels={"touched": "yes"}))
    acct.session()
    assert acct.assumed == {} and acct.group_released == 3
    for p in stale:
        assume(acct, p, ["n1"])
    acct.session()
    assert len(acct.assumed) == 3


def test_a_volcano_gang_is_not_released_by_group() -> None:
    members = [pod(n, group="vg") for n in MEMBERS]
    acct, clock = accounting(
        [node("n1", cpu="16"), queue("q1"), podgroup("vg", 3, queue="q1"), *members], ttl=300
    )
    for p in members:
        assume(acct, p, ["n1"])
    acct.state.upsert("Pod", pod("b", group="vg", unschedulable=True))
    clock.now += DEFAULT_GROUP_WINDOW + 1
    acct.session()
    assert len(acct.assumed) == 3 and acct.group_released == 0


def test_a_released_group_no_longer_holds_its_queues_share() -> None:
    acct, _ = accounting(cluster(*(member(n) for n in MEMBERS)))
    for name in MEMBERS:
        assume(acct, member(name), ["n1"])
    assert queue_cpu(acct) == 3000
    acct.state.upsert("Pod", member("a", unschedulable=True))
    assert queue_cpu(acct) == 0
