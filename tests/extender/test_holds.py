"""The preempt verb's refusals, told as events by the replica that answered: when it chose
no victims and no eviction at all could place the pod, the pod hears the reclaim loop's
``ReclaimCannotHelp`` sentence; when an eviction would help, it does not. And hold_reason: the
filter rule holding a cached pending task, as the status pass asks it."""

from __future__ import annotations

from scheduler_core.extender.holds import IN_PROGRESS_REASON, hold_reason, preempt_refusals
from scheduler_core.extender.preempt_verb import preempt_pod
from scheduler_core.framework.cannot_help import CANNOT_HELP_REASON
from tests.builders import (
    accounting,
    native_podgroup,
    node,
    pod,
    podgroup,
    priority_class,
    queue,
)


def cluster(preemptor_cpu: str) -> tuple[list[dict[str, object]], dict[str, object]]:
    """One 2-cpu node full of q1's low-priority pod; q1's high-priority ``claim`` asks
    ``preemptor_cpu``."""
    objs: list[dict[str, object]] = [
        priority_class("low", 1),
        priority_class("high", 100),
        node("n1", cpu="2", memory="4Gi"),
        queue("q1"),
        pod("hog", cpu="2", memory="1Gi", node_name="n1", queue="q1", priority_class="low"),
    ]
    claim = pod(
        "claim", cpu=preemptor_cpu, memory="1Gi", queue="q1", priority_class="high", priority=100
    )
    return objs, claim


def test_a_pod_no_eviction_could_place_is_told_so_by_the_verb() -> None:
    objs, claim = cluster("3")
    acct, _ = accounting([*objs, claim])
    candidates = {"n1": ["ns-hog"]}
    chosen = preempt_pod(acct, claim, candidates)
    assert chosen == {}
    [refusal] = preempt_refusals(acct, claim, candidates, chosen)
    assert refusal.reason == CANNOT_HELP_REASON
    assert refusal.message == (
        "no eviction can help this pod: no node is large enough for it even when empty "
        "(1 Insufficient cpu)"
    )


def test_no_such_refusal_when_the_verb_found_victims() -> None:
    objs, claim = cluster("1")
    acct, _ = accounting([*objs, claim])
    candidates = {"n1": ["ns-hog"]}
    chosen = preempt_pod(acct, claim, candidates)
    assert list(chosen) == ["n1"]
    assert all(
        r.reason != CANNOT_HELP_REASON for r in preempt_refusals(acct, claim, candidates, chosen)
    )


def test_a_native_gang_member_is_held_by_the_gang_rule_as_a_volcano_one_is() -> None:
    objects = [
        node("n1", cpu="2"),
        queue("q"),
        native_podgroup("k", 3, queue="q"),
        podgroup("v", 3, queue="q"),
        *(pod(f"k{i}", cpu="1", scheduling_group="k") for i in range(3)),
        *(pod(f"v{i}", cpu="1", group="v") for i in range(3)),
    ]
    acct, _ = accounting(objects)
    ssn = acct.session()
    found = {}
    for uid in ("ns/native:k", "ns/v"):
        job = ssn.jobs[uid]
        task = next(iter(job.tasks.values()))
        found[uid] = hold_reason(acct, ssn, job, task)
    assert {code for code, _ in found.values() if code} == {"gang-unsatisfiable"}


def test_a_preemptor_asking_again_is_told_its_earlier_victims_are_on_their_way_out() -> None:
    objs, claim = cluster("1")
    acct, _ = accounting([*objs, claim])
    assert list(preempt_pod(acct, claim, {"n1": ["ns-hog"]})) == ["n1"]
    # kube-scheduler tries the pod again before the eviction shows, proposing nothing the
    # grant names: no victims, and a sentence saying why
    again = preempt_pod(acct, claim, {"n2": []})
    assert again == {}
    [refusal] = preempt_refusals(acct, claim, {"n2": []}, again)
    assert refusal.reason == IN_PROGRESS_REASON
    assert refusal.message.startswith(
        "victims chosen for this pod earlier are being evicted on n1 (1 victim)"
    )
