"""Preempt's shortcuts for a standing backlog decide exactly what the full walk decides.

Phase 2 skips a job that holds no Bound or Running task, phase 1 keeps a preemptor's room
walk for the next alike preemptor until something is placed or evicted, a preemptor
whose victims free enough on no node is not scored, a preemptor above every pod priority of
its queue walks no room, one whose nodes with room hold valid victims nowhere only moves
the walk's rotation on, reclaim takes preempt's list of idle room when nothing changed in
between, and whether a queue may reclaim for a pod is asked once per pods alike. Each only
avoids work whose outcome is known, so the evictions of a cycle are the same with them and
without them, and so are the words its pods are told whether the per-job log lines are read
or not.
"""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.actions import preempt, reclaim
from scheduler_core.actions.util import idle_room
from scheduler_core.actions.util.idle_room import IdleRoom
from scheduler_core.actions.util.predicate_helper import HardVerdicts, PredicateHelper
from scheduler_core.api.task import TaskInfo
from scheduler_core.controller.decision import decide, live_configuration
from scheduler_core.logutil import v
from tests import builders as b
from tests.actions.test_reclaim_shortcuts import backlog
from tests.actions.test_reclaim_shortcuts import outcome as told_outcome

VOLCANO = b.configuration(b.HELM_CONF, "enqueue, allocate, preempt, reclaim")
#: The live loop's rules (preempt only at equal pod priority, only what does not fit idle
#: room), and Volcano's own preempt, which also places a preemptor that fits with no victim.
CONFS = {
    "live": live_configuration(VOLCANO),
    "volcano": VOLCANO,
    "volcano-without-allocate": b.configuration(b.HELM_CONF, "enqueue, preempt, reclaim"),
}


@st.composite
def one_queue_cluster(draw: st.DrawFn) -> list[b.Obj]:
    """Full 2-cpu nodes (and perhaps an idle one) and waiting pods in one or two queues:
    PodGroups of two priority classes, plain pods, mixed pod priorities."""
    nodes = draw(st.integers(1, 3))
    objs: list[b.Obj] = [b.node(f"n{i}", cpu="2", memory="8Gi") for i in range(nodes)]
    # sometimes a node with idle room, where a waiting pod fits without any eviction
    objs += [b.node(f"spare{i}", cpu="2", memory="8Gi") for i in range(draw(st.integers(0, 1)))]
    objs += [b.queue("q1"), b.queue("q2"), b.priority_class("high", 1000)]
    for i in range(nodes * 2):
        group = f"run{i // 2}"
        if i % 2 == 0:
            objs.append(
                b.podgroup(
                    group, draw(st.integers(1, 2)), queue=draw(st.sampled_from(["q1", "q2"]))
                )
            )
        objs.append(
            b.pod(
                f"r{i}",
                group=group,
                node_name=f"n{i // 2}",
                priority=draw(st.sampled_from([0, 10])),
                started="2024-01-01T00:00:00Z",
            )
        )
    for j in range(draw(st.integers(1, 4))):
        queue = draw(st.sampled_from(["q1", "q2"]))
        priority = draw(st.sampled_from([0, 10]))
        if draw(st.booleans()):
            members = draw(st.integers(1, 2))
            objs.append(
                b.podgroup(
                    f"w{j}",
                    members,
                    queue=queue,
                    priority_class=draw(st.sampled_from(["", "high"])),
                    phase="Inqueue",
                )
            )
            objs += [b.pod(f"w{j}-{t}", group=f"w{j}", priority=priority) for t in range(members)]
        else:
            objs.append(b.pod(f"plain{j}", queue=queue, priority=priority))
    return objs


def outcome(objs: list[b.Obj], conf: str) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    """The cycle's evictions and where it placed the preemptors."""
    ssn = b.run(objs, CONFS[conf]) if conf != "live" else None
    if ssn is not None:
        return [(e.task.name, e.node, e.reason) for e in ssn.evictions], b.pipelined(ssn)
    decision = decide(b.snapshot(objs), CONFS[conf])
    return [(e.victim.name, e.node, e.action) for e in decision.evictions], {}


@settings(max_examples=120, deadline=None)
@given(one_queue_cluster(), st.sampled_from(sorted(CONFS)))
def test_the_shortcuts_change_no_eviction(objs: list[b.Obj], conf: str) -> None:
    fast = outcome(objs, conf)
    with pytest.MonkeyPatch.context() as patch:
        # Every job holds victims (no skip, no kept room walk); every node may (scored).
        patch.setattr(preempt, "_holds_victims", lambda job: True)
        patch.setattr(preempt, "_has_valid_victims", lambda *args: True)
        full = outcome(objs, conf)
    assert fast == full


def _walked(self: HardVerdicts, helper: PredicateHelper, task: TaskInfo) -> None:
    self.walk_indices(helper, task)


@settings(max_examples=120, deadline=None)
@given(st.one_of(one_queue_cluster(), backlog()), st.sampled_from(["live", "volcano"]))
def test_the_shortcuts_for_alike_jobs_change_no_eviction_and_no_word_read_or_not(
    objs: list[b.Obj], conf: str
) -> None:
    """With the per-job lines unread and every shortcut, as the full path with them read."""
    fast = told_outcome(objs, conf)
    engine = logging.getLogger("scheduler_core")
    before = engine.level
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(preempt.PreemptAction, "_may_hold_victims_for", lambda *args: True)
        patch.setattr(HardVerdicts, "advance", _walked)
        patch.setattr(IdleRoom, "_taken", lambda self: idle_room._by_idle_cpu(self._ssn))
        patch.setattr(
            reclaim.ReclaimAction,
            "_preemptive",
            lambda self, ssn, queue, task: ssn.preemptive(queue, [task]),
        )
        engine.setLevel(v(5))
        try:
            full = told_outcome(objs, conf)
        finally:
            engine.setLevel(before)
    assert fast == full


def test_the_per_job_lines_are_logged_when_read(caplog: pytest.LogCaptureFixture) -> None:
    objs = [
        b.node("n1", cpu="2"),
        b.queue("q1"),
        b.pod("r", queue="q1", cpu="2", node_name="n1", started="2024-01-01T00:00:00Z"),
        b.podgroup("w", 1, queue="q1", phase="Inqueue"),
        b.pod("p", group="w", unschedulable=True),
    ]
    with caplog.at_level(v(5), logger="scheduler_core"):
        decide(b.snapshot(objs), CONFS["live"])
    lines = caplog.messages
    assert any(m.startswith("No preemptor task in job <ns/") for m in lines)
    assert any(m.startswith("Considering reclaim for 1 tasks of job <ns/") for m in lines)
