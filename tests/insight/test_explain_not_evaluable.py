"""explain and the status page's pending list name what the engine cannot judge about a pod
and that nothing is evicted for it; a pod it can judge gets no such step."""

from __future__ import annotations

from app.api.status_page import render_index
from scheduler_core.insight.explain import explain_cached_pod
from scheduler_core.insight.pending import pending_jobs
from scheduler_core.insight.queues import queue_views
from tests.builders import (
    accounting,
    claim_volume,
    node,
    pod,
    pvc,
    queue,
    storage_class,
    with_volumes,
)
from tests.insight.test_explain import FLOW, guide_case, member, steps


def test_explain_names_the_unbound_claim_and_skips_preemption() -> None:
    objs = [
        *guide_case(gang_min=1)[:-1],
        storage_class("fast"),
        pvc("data", storage_class="fast"),
        with_volumes(member("a0", "job-a", "2", high=True), claim_volume("v", "data")),
    ]
    acct, _ = accounting(objs)
    answer = explain_cached_pod(acct, "ns", "a0")
    by = steps(answer)
    step = by["evaluable"]
    assert step.verdict == "fail" and step.rule == "predicates.VolumeBinding"
    assert "PersistentVolumeClaim ns/data is not bound" in step.detail
    assert step.numbers["code"] == "NotEvaluable"
    assert by["preempt"].verdict == "skip" and "cannot judge" in by["preempt"].detail
    assert by["reclaim"].verdict == "skip"
    assert answer.victims == []
    assert "never evicts for it" in answer.summary
    assert by["nodes"].numbers["rejections"].get("not evaluable") == 1


def test_a_pod_it_can_judge_has_no_evaluable_step() -> None:
    acct, _ = accounting(guide_case(gang_min=1))
    answer = explain_cached_pod(acct, "ns", "a0")
    assert [s.name for s in answer.steps] == [*FLOW, "preempt", "reclaim"]


def test_the_pending_list_of_the_status_page_says_a_pod_is_not_evaluable() -> None:
    objs = [
        node("n1", cpu="4"),
        queue("a"),
        storage_class("fast"),
        pvc("data", storage_class="fast"),
        with_volumes(pod("w", queue="a"), claim_volume("v", "data")),
        pod("plain", queue="a"),
    ]
    acct, _ = accounting(objs)
    page = pending_jobs(acct, "a")
    by_pod = {job.first_pod: job for job in page.jobs}
    assert by_pod["ns/w"].code == "not-evaluable"
    assert "PersistentVolumeClaim ns/data is not bound" in by_pod["ns/w"].reason
    assert "never evicts for it" in by_pod["ns/w"].reason
    assert by_pod["ns/plain"].code == "filter-passes"
    html = render_index(queue_views(acct), {"a": page}, None)
    assert "the extender cannot judge where it fits" in html
