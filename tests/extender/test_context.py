"""A pod the cache has not seen yet is judged in a one-off session that starts from the cache's
per-queue sums; its queue attributes equal those of a session that walks every job."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.engine import open_session
from scheduler_core.extender.context import PodContext
from scheduler_core.report import queue_attrs
from tests.builders import accounting, node, pod, podgroup, queue


def cluster() -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [node("n1", cpu="8"), node("n2", cpu="8")]
    objs += [queue("a", 2), queue("b", 1)]
    objs += [podgroup("gang", 3, queue="a", phase="Inqueue")]
    objs += [pod("g0", group="gang", node_name="n1"), pod("g1", group="gang")]
    objs += [pod(f"b{i}", queue="b", node_name="n2", cpu="2") for i in range(3)]
    return objs


def amounts(resource: Any) -> dict[str, float]:
    return {k: round(v, 3) for k, v in resource.to_quantities().items()}


@pytest.mark.parametrize(
    "newcomer",
    [
        pod("g2", group="gang"),  # a new member of a PodGroup the cache knows
        pod("lone", queue="b", cpu="3"),  # a job of one the cache has never seen
    ],
    ids=["member-of-known-gang", "new-lone-pod"],
)
def test_one_off_session_sums_equal_a_walk_over_every_job(newcomer: dict[str, Any]) -> None:
    acct, _ = accounting(cluster())
    ctx = PodContext(acct, newcomer)
    assert ctx.ssn is not acct.session(), "the pod is not in the cache: a one-off session"
    walked = ctx.ssn.snapshot
    walked.queue_usage = None
    slow = open_session(walked, acct.conf, clone=False)
    fast_attrs, slow_attrs = queue_attrs(ctx.ssn), queue_attrs(slow)
    assert set(fast_attrs) == set(slow_attrs)
    for name, attr in slow_attrs.items():
        other = fast_attrs[name]
        for field in ("deserved", "allocated", "request", "inqueue", "elastic"):
            assert amounts(getattr(attr, field)) == amounts(getattr(other, field)), (name, field)


def test_a_one_off_session_leaves_the_cache_sums_as_they_were() -> None:
    """The snapshot shares the cache's per-queue sums; the one adjusted for the newcomer's
    job is a copy, so the next session (and the cache) see the cluster as it is."""
    acct, _ = accounting(cluster())
    before = {q: amounts(u.request) for q, u in acct.state.shared_snapshot().queue_usage.items()}
    ctx = PodContext(acct, pod("g2", group="gang", cpu="3"))
    assert ctx.ssn is not acct.session()
    assert ctx.ssn.snapshot.queue_usage is not None
    assert amounts(ctx.ssn.snapshot.queue_usage["a"].request) != before["a"]
    after = {q: amounts(u.request) for q, u in acct.state.shared_snapshot().queue_usage.items()}
    assert after == before


@pytest.mark.parametrize(
    "newcomer",
    [pod("g2", group="gang", cpu="3"), pod("lone", queue="b", cpu="3")],
    ids=["member-of-known-gang", "new-lone-pod"],
)
def test_accounting_with_an_unseen_assumed_pod_keeps_the_cache_sums_and_equals_a_walk(
    newcomer: dict[str, Any],
) -> None:
    """After filter passes a pod the cache has not shown yet, the next accounting session
    counts it through its queue's sum (no walk over every job) and agrees with a walk."""
    acct, _ = accounting(cluster())
    before = {q: amounts(u.request) for q, u in acct.state.shared_snapshot().queue_usage.items()}
    ctx = PodContext(acct, newcomer)
    assert ctx.job is not None
    acct.assume(ctx.task, ctx.job)
    ssn = acct.session()
    assert ssn.snapshot.queue_usage is not None, "the rebuild kept the per-queue sums"
    assert ctx.task.uid in ssn.jobs[ctx.job.uid].tasks
    walked = ssn.snapshot
    walked.queue_usage = None
    slow = open_session(walked, acct.conf, clone=False)
    acct.replay_assumptions(slow)
    fast_attrs, slow_attrs = queue_attrs(ssn), queue_attrs(slow)
    assert set(fast_attrs) == set(slow_attrs)
    for name, attr in slow_attrs.items():
        for field in ("deserved", "allocated", "request", "inqueue", "elastic"):
            assert amounts(getattr(attr, field)) == amounts(getattr(fast_attrs[name], field)), (
                name,
                field,
            )
    after = {q: amounts(u.request) for q, u in acct.state.shared_snapshot().queue_usage.items()}
    assert after == before, "the cache's own sums are untouched"
