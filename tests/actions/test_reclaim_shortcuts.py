"""The evicting actions' shortcuts for a backlog decide exactly what the plain walk decides.

Whether a job starves is asked once per session state (``JobChecks``), the nodes' refusals
of a waiting pod are judged once per pods alike (``AlikeRefusals``), a queue compared with
itself is not walked through the plugins, and a preemptor none of whose nodes holds valid
victims stops before its nodes are listed. Each only avoids work whose outcome is known:
over random clusters of several queues (some over their share, some with pods no node can
take), a cycle's evictions, placements and the words every waiting pod is told are the same
with them and without them.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.actions import reclaim
from scheduler_core.actions.util.job_checks import JobChecks
from scheduler_core.controller.decision import decide, live_configuration
from scheduler_core.framework.cannot_help_alike import AlikeRefusals
from tests import builders as b

VOLCANO = b.configuration(b.HELM_CONF, "enqueue, allocate, preempt, reclaim")
CONFS = {"live": live_configuration(VOLCANO), "volcano": VOLCANO}


@st.composite
def backlog(draw: st.DrawFn) -> list[b.Obj]:
    """Full nodes running pods of queues q1-q3 and waiting pods of every queue: plain pods
    and gangs of a few alike specs, some larger than any node or asking for a zone no node
    is in."""
    nodes = draw(st.integers(1, 4))
    objs: list[b.Obj] = [
        b.node(f"n{i}", cpu="2", memory="8Gi", labels={"zone": "a"}) for i in range(nodes)
    ]
    objs += [b.queue(f"q{q}", weight=draw(st.integers(1, 3))) for q in (1, 2, 3)]
    # Two 1-cpu pods fill each node, each its own gang of one in a queue drawn for it.
    running = [(f"n{i // 2}", draw(st.sampled_from(["q1", "q2", "q3"]))) for i in range(nodes * 2)]
    for i, (on, queue) in enumerate(running):
        objs.append(b.podgroup(f"run{i}", 1, queue=queue))
        member: dict[str, Any] = {
            "group": f"run{i}",
            "node_name": on,
            "started": "2024-01-01T00:00:00Z",
        }
        objs.append(b.pod(f"r{i}", priority=draw(st.sampled_from([0, 10])), **member))
    specs: list[dict[str, Any]] = [
        {"cpu": "1", "priority": 0},
        {"cpu": "1", "priority": 10},
        {"cpu": "4", "priority": 0},
        {"cpu": "1", "priority": 0, "node_selector": {"zone": "b"}},
    ]
    for j in range(draw(st.integers(1, 6))):
        queue = draw(st.sampled_from(["q1", "q2", "q3"]))
        spec = specs[draw(st.integers(0, len(specs) - 1))]
        if draw(st.booleans()):
            members = draw(st.integers(1, 2))
            objs.append(b.podgroup(f"w{j}", members, queue=queue, phase="Inqueue"))
            objs += [
                b.pod(f"w{j}-{t}", group=f"w{j}", unschedulable=True, **spec)
                for t in range(members)
            ]
        else:
            objs.append(b.pod(f"plain{j}", queue=queue, unschedulable=True, **spec))
    return objs


def outcome(objs: list[b.Obj], conf: str) -> tuple[object, ...]:
    decision = decide(b.snapshot(objs), CONFS[conf])
    evictions = [(e.victim.name, e.node, e.action, e.preemptor_node) for e in decision.evictions]
    told = sorted((u.task.name, u.reason, u.note) for u in decision.unhelped())
    return evictions, told


@settings(max_examples=120, deadline=None)
@given(backlog(), st.sampled_from(sorted(CONFS)))
def test_the_backlog_shortcuts_change_no_eviction_and_no_word_a_pod_is_told(
    objs: list[b.Obj], conf: str
) -> None:
    fast = outcome(objs, conf)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(JobChecks, "starving", lambda self, job: self.session.job_starving(job))
        patch.setattr(AlikeRefusals, "refusals", lambda self, task, judge: judge())
        patch.setattr(reclaim, "_distinct_first", lambda less: less)
        full = outcome(objs, conf)
    assert fast == full
