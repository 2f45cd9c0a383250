"""The refusals kept for pods alike give every pod the verdict it gets judged alone.

``AlikeRefusals`` lets a waiting pod take the nodes' refusals of a pod that reads alike,
judged earlier in the session. Over random clusters (nodes of several sizes, labels and
taints; running pods with labels and anti-affinity; waiting pods of a few specs, each its
own job or in groups), with an eviction made halfway through, every pod's verdict is the
same with the record and without it.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.types import TaskStatus
from scheduler_core.conf import default_configuration
from scheduler_core.framework.cannot_help import judge
from scheduler_core.framework.cannot_help_alike import AlikeRefusals, likeness
from scheduler_core.framework.statement import Statement
from tests import builders as b

ZONES = ("a", "b")
TAINT = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoSchedule"}
ANTI = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            b.pod_term(b.selector({"app": "web"}), "zone")
        ]
    }
}


@st.composite
def cluster(draw: st.DrawFn) -> list[b.Obj]:
    objects: list[b.Obj] = [b.queue("q")]
    nodes = draw(st.integers(1, 5))
    for n in range(nodes):
        objects.append(
            b.node(
                f"n{n}",
                cpu=str(draw(st.sampled_from((2, 4, 8)))),
                labels={"zone": draw(st.sampled_from(ZONES))},
                taints=[TAINT] if draw(st.booleans()) else (),
            )
        )
        for slot in range(draw(st.integers(0, 2))):
            objects.append(
                b.pod(
                    f"run-{n}-{slot}",
                    node_name=f"n{n}",
                    queue="q",
                    labels={"app": draw(st.sampled_from(("web", "db")))},
                    affinity=ANTI if draw(st.booleans()) else None,
                    tolerations=[TOLERATION],
                )
            )
    specs: list[dict[str, Any]] = [
        {
            "cpu": str(draw(st.sampled_from((1, 3, 16)))),
            "labels": {"app": draw(st.sampled_from(("web", "db", "batch")))},
            "node_selector": {"zone": z}
            if (z := draw(st.sampled_from((*ZONES, "c", ""))))
            else None,
            "tolerations": [TOLERATION] if draw(st.booleans()) else (),
            "priority": draw(st.sampled_from((0, 10))),
        }
        for _ in range(draw(st.integers(1, 3)))
    ]
    for i in range(draw(st.integers(1, 8))):
        spec = specs[draw(st.integers(0, len(specs) - 1))]
        group = f"g{i % 2}" if draw(st.booleans()) else None
        objects.append(b.pod(f"wait-{i}", queue="q", group=group, unschedulable=True, **spec))
    for g in range(2):
        objects.append(b.podgroup(f"g{g}", min_member=1, queue="q"))
    return objects


@settings(max_examples=150, deadline=None)
@given(cluster(), st.integers(0, 8))
def test_a_pod_judged_with_the_record_of_pods_alike_gets_its_own_verdict(
    objects: list[b.Obj], evict_after: int
) -> None:
    ssn = b.session(objects, default_configuration())
    alike = AlikeRefusals(ssn)
    waiting = [
        (job, task)
        for job in ssn.jobs.values()
        for task in job.tasks.values()
        if task.status == TaskStatus.PENDING
    ]
    running = [t for j in ssn.jobs.values() for t in j.tasks.values() if t.node_name]
    for i, (job, task) in enumerate(waiting * 2):
        if i == evict_after and running:
            Statement(ssn).evict(running[0], "test")
        assert judge(ssn, job, task, alike=alike) == judge(ssn, job, task), task.key


def test_pods_that_differ_only_in_who_they_are_read_alike() -> None:
    ssn = b.session(
        [
            b.queue("q"),
            b.pod("a", queue="q", created="2026-01-01T00:00:00Z"),
            b.pod("b", queue="q", created="2026-01-02T00:00:00Z"),
            b.pod("c", queue="q", cpu="2"),
        ],
        default_configuration(),
    )
    keys = {t.name: likeness(t) for j in ssn.jobs.values() for t in j.tasks.values()}
    assert keys["a"] == keys["b"]
    assert keys["a"] != keys["c"]
