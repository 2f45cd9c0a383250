"""The session's job sort key orders jobs exactly as the plugins' pairwise job order does.

Actions queue thousands of waiting jobs; the key (``Session.job_order_key``) replaces a walk
through every plugin's compare function per comparison. These tests pin that both give the
same order, for any jobs and any arrangement of the ordering plugins in the tiers.
"""

from __future__ import annotations

from functools import cmp_to_key

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.api.job import JobInfo
from scheduler_core.framework.hooks import JOB_ORDER
from scheduler_core.framework.session import Session
from tests import builders as b

ORDERING_PLUGINS = ("priority", "gang", "drf")
TIMES = ("2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z")


@st.composite
def tier_yaml(draw: st.DrawFn) -> str:
    """The ordering plugins (some of them, in any order) spread over one to three tiers,
    each with its job order switched on or off, among plugins that order no jobs."""
    chosen = draw(st.permutations(ORDERING_PLUGINS))[: draw(st.integers(0, 3))]
    names = [*chosen, "proportion", "predicates"]
    cuts = sorted(draw(st.lists(st.integers(1, len(names) - 1), max_size=2, unique=True)))
    lines = ['actions: "reclaim"', "tiers:"]
    start = 0
    for end in [*cuts, len(names)]:
        lines.append("- plugins:")
        for name in names[start:end]:
            lines.append(f"  - name: {name}")
            if name in ORDERING_PLUGINS and draw(st.booleans()):
                lines.append(f"    enableJobOrder: {str(draw(st.booleans())).lower()}")
        start = end
    return "\n".join(lines) + "\n"


@st.composite
def cluster(draw: st.DrawFn) -> list[b.Obj]:
    """Jobs of mixed priority, gang size, running share and creation time on two nodes."""
    objects: list[b.Obj] = [
        b.node("n1", cpu="64", memory="256Gi"),
        b.node("n2", cpu="64", memory="256Gi"),
        b.priority_class("low", 1),
        b.priority_class("high", 100),
    ]
    for j in range(draw(st.integers(1, 12))):
        members = draw(st.integers(1, 3))
        objects.append(
            b.podgroup(
                f"g{j}",
                draw(st.integers(1, 3)),
                priority_class=draw(st.sampled_from(["", "low", "high"])),
                created=draw(st.sampled_from(TIMES)),
            )
        )
        for t in range(members):
            running = draw(st.booleans())
            objects.append(
                b.pod(
                    f"g{j}-{t}",
                    group=f"g{j}",
                    cpu=str(draw(st.integers(1, 4))),
                    node_name=draw(st.sampled_from(["n1", "n2"])) if running else "",
                )
            )
    return objects


def chain_order(ssn: Session, jobs: list[JobInfo]) -> list[str]:
    def compare(l: JobInfo, r: JobInfo) -> int:
        return -1 if ssn.job_order_fn(l, r) else 1 if ssn.job_order_fn(r, l) else 0

    return [j.uid for j in sorted(jobs, key=cmp_to_key(compare))]


def popped(ssn: Session, jobs: list[JobInfo]) -> list[str]:
    queue = ssn.job_queue(jobs)
    return [queue.pop().uid for _ in range(len(jobs))]


@settings(max_examples=150, deadline=None)
@given(cluster(), tier_yaml())
def test_the_sort_key_pops_jobs_in_the_plugin_chains_order(objects: list[b.Obj], conf: str) -> None:
    ssn = b.session(objects, conf)
    jobs = list(ssn.jobs.values())
    assert ssn.job_order_key() is not None
    assert popped(ssn, jobs) == chain_order(ssn, jobs)
    # A job pushed after the others takes its place by key as well.
    queue = ssn.job_queue(jobs[1:])
    queue.push(jobs[0])
    assert [queue.pop().uid for _ in jobs] == chain_order(ssn, jobs)


def test_a_plugin_ordering_jobs_without_a_key_keeps_the_pairwise_order() -> None:
    ssn = b.session(
        [
            b.node("n1"),
            b.podgroup("a", created=TIMES[1]),
            b.pod("a-0", group="a"),
            b.podgroup("z", created=TIMES[0]),
            b.pod("z-0", group="z"),
        ],
        b.tiers("priority, conformance"),
    )
    # Names first, whatever the creation time: no key can say what this compare says.
    ssn.add_hook(JOB_ORDER, "conformance", lambda l, r: -1 if l.name < r.name else 1)
    jobs = list(ssn.jobs.values())
    assert ssn.job_order_key() is None
    assert [ssn.jobs[uid].name for uid in popped(ssn, jobs)] == ["a", "z"]
    assert popped(ssn, jobs) == chain_order(ssn, jobs)
