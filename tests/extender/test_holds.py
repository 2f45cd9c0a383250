"""hold_reason: the filter rule holding a cached pending task, as the status pass asks it."""

from __future__ import annotations

from scheduler_core.extender.holds import hold_reason
from tests.builders import accounting, native_podgroup, node, pod, podgroup, queue


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
