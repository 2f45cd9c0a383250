"""A queue's pending jobs in the engine's order, with the reason each waits."""

from __future__ import annotations

import pytest

from scheduler_core.insight.lookup import NotFoundError
from scheduler_core.insight.pending import pending_jobs
from scheduler_core.insight.queues import queue_views
from tests.builders import accounting, assume, node, pod, podgroup, priority_class, queue
from tests.insight.conftest import fingerprint


def cluster() -> list[dict[str, object]]:
    return [
        node("n1", cpu="4"),
        queue("a", capability={"cpu": "4"}),
        priority_class("low", 1),
        priority_class("high", 100),
        podgroup("run", 1, queue="a"),
        pod("r", group="run", cpu="3", node_name="n1"),
        podgroup("first-low", 1, queue="a", priority_class="low", phase="Inqueue"),
        pod("l0", group="first-low", cpu="2", priority=1),
        podgroup("later-high", 1, queue="a", priority_class="high", phase="Inqueue"),
        pod("h0", group="later-high", cpu="1", priority=100),
        podgroup("gang", 3, queue="a", priority_class="low", phase="Inqueue"),
        pod("g0", group="gang", cpu="1", priority=1),
    ]


def test_pending_jobs_come_in_serving_order_with_their_reasons() -> None:
    acct, _ = accounting(cluster())
    page = pending_jobs(acct, "a")
    assert page.total == 3
    assert page.jobs[0].job == "ns/later-high"  # priority orders jobs first
    assert [j.position for j in page.jobs] == [1, 2, 3]
    by = {j.job: j for j in page.jobs}
    assert by["ns/later-high"].code == "filter-passes"
    assert by["ns/first-low"].code == "queue-overused"
    assert "would exceed its deserved share" in by["ns/first-low"].reason
    assert by["ns/gang"].code == "gang-invalid"
    assert by["ns/gang"].first_pod == "ns/g0"


def test_a_passing_job_says_whether_kube_scheduler_has_tried_its_pod_yet() -> None:
    objects = cluster()
    acct, _ = accounting(objects)
    [untried] = [j for j in pending_jobs(acct, "a").jobs if j.job == "ns/later-high"]
    assert "waiting for kube-scheduler to try it" in untried.reason
    objects = [
        pod("h0", group="later-high", cpu="1", priority=100, unschedulable=True)
        if o["kind"] == "Pod" and o["metadata"]["name"] == "h0"
        else o
        for o in objects
    ]
    acct, _ = accounting(objects)
    [tried] = [j for j in pending_jobs(acct, "a").jobs if j.job == "ns/later-high"]
    assert tried.code == "filter-passes"
    assert "kube-scheduler's last attempt found no node for it" in tried.reason


def test_the_page_is_limited_but_the_total_counts_every_job() -> None:
    acct, _ = accounting(cluster())
    page = pending_jobs(acct, "a", limit=1)
    assert page.total == 3
    assert len(page.jobs) == 1


def test_an_unknown_queue_is_not_found_and_nothing_changes() -> None:
    acct, _ = accounting(cluster())
    before = fingerprint(acct)
    pending_jobs(acct, "a")
    assert fingerprint(acct) == before
    with pytest.raises(NotFoundError, match="queue nope"):
        pending_jobs(acct, "nope")


@pytest.mark.parametrize("assumed", [[], ["h0"], ["h0", "w0"]], ids=["none", "one", "two"])
def test_the_queue_counts_the_pending_jobs_its_pending_page_lists(assumed: list[str]) -> None:
    """A pod filter has let through (assumed, not bound yet) has its place: its job leaves
    the pending page, and the queue's pending count with it."""
    objects = [
        node("n1", cpu="8"),
        queue("a"),
        *[o for o in cluster() if o["kind"] not in ("Node", "Queue")],
        podgroup("wide", 1, queue="a", phase="Inqueue"),
        pod("w0", group="wide", cpu="1"),
    ]
    acct, _ = accounting(objects)
    for name in assumed:
        assume(acct, next(o for o in objects if o["metadata"]["name"] == name), ["n1"])
    page = pending_jobs(acct, "a")
    (view,) = [v for v in queue_views(acct) if v.name == "a"]
    assert view.pending_jobs == page.total == 4 - len(assumed)
