"""explain names what the engine cannot judge about a pod and that nothing is evicted for
it; a pod it can judge gets no such step."""

from __future__ import annotations

from scheduler_core.insight.explain import explain_cached_pod
from tests.builders import claim_volume, pvc, storage_class, with_volumes
from tests.extender.conftest import accounting
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
