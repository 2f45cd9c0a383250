"""A queue's view shows its usage over time, its usage and weight shares and the deserved
share its weight alone would give, when the usage history plugin moved it; the status page
and ``kubectl queue`` show the same."""

from __future__ import annotations

from app.api.models import Queue, QueueList, QueueListView, document
from app.api.status_page import render_index, render_queue
from app.cli.query import render_queue as cli_queue
from app.cli.query import render_queues as cli_queues
from scheduler_core.accounting.keeper import QueueAccounting
from scheduler_core.api.resource import Resource
from scheduler_core.api.usage_history import UsageHistory
from scheduler_core.conf import load_configuration
from scheduler_core.insight.explain import explain_cached_pod
from scheduler_core.insight.pending import pending_jobs
from scheduler_core.insight.queues import queue_view, queue_views
from scheduler_core.insight.whatif import WhatIfRequest, what_if
from tests.builders import accounting, node, pod, podgroup, queue

CONF = """
actions: ""
tiers:
- plugins:
  - name: usagehistory
    arguments:
      usage.halfLife: 1h
  - name: proportion
"""


def contended_with_history() -> tuple[QueueAccounting, UsageHistory]:
    objs = [node("n1", cpu="8", memory="64Gi"), queue("q1"), queue("q2")]
    for name in ("q1", "q2"):
        objs.append(podgroup(f"{name}-pg", queue=name, phase="Inqueue"))
        objs += [pod(f"{name}-{i}", cpu="1", group=f"{name}-pg") for i in range(8)]
    acct, _ = accounting(objs, CONF)
    now = [0.0]
    history = UsageHistory(3600.0, monotonic=lambda: now[0])
    history.held("q1", Resource(8000, 0))
    now[0] = 3600.0
    acct.state.usage_history = history
    acct.use_configuration(load_configuration(CONF))  # the next session reads it
    return acct, history


def test_the_view_shows_usage_shares_and_the_weighted_deserved() -> None:
    acct, _ = contended_with_history()
    view = queue_view(acct, "q1")
    assert view is not None and view.history is not None
    history = view.history
    assert history.adjusted and history.half_life == "1h"
    assert history.usage_share == 1.0 and history.weight_share == 0.5
    assert history.factor == 0.5
    assert history.weighted_deserved is not None and history.weighted_deserved["cpu"] == 4.0
    assert view.deserved is not None and view.deserved["cpu"] == 2.0  # the floor
    # 8 cores for an hour, decayed: 8 * (1/ln 2) * (1 - 1/2) core-hours
    assert round(history.usage["cpu"] or 0, 3) == 5.771
    other = queue_view(acct, "q2")
    assert other is not None and other.history is not None and other.history.factor == 2.0


def test_status_page_and_kubectl_queue_show_it() -> None:
    acct, _ = contended_with_history()
    views = queue_views(acct)
    view = next(v for v in views if v.name == "q1")
    page = render_queue(view, pending_jobs(acct, "q1"))
    assert "Weighted deserved" in page and "cpu 4" in page
    assert "&times;0.5" in render_index(views, {}, None)
    listed = document(QueueList, QueueListView(views))
    table = cli_queues(listed)
    assert "WEIGHTED DESERVED" in table and "1.00 (weight x0.5)" in table
    one = document(Queue, view)
    assert "Weighted deserved:" in cli_queue(one)
    assert "half-life 1h" in cli_queue(one)


def test_without_the_plugin_the_views_carry_no_history() -> None:
    objs = [node("n1", cpu="8"), queue("q1")]
    acct, _ = accounting(objs)
    view = queue_view(acct, "q1")
    assert view is not None and view.history is None
    assert "USAGE SHARE" not in cli_queues(document(QueueList, QueueListView([view])))


def test_explain_says_what_past_usage_did_to_the_queue_share() -> None:
    acct, _ = contended_with_history()
    explanation = explain_cached_pod(acct, "ns", "q1-0")
    [step] = [s for s in explanation.steps if s.name == "queue-share"]
    assert step.numbers["usageShare"] == 1.0 and step.numbers["weightShare"] == 0.5
    assert step.numbers["weightedDeserved"]["cpu"] == 4.0
    assert step.numbers["deserved"]["cpu"] == 2.0


def test_the_what_if_answers_with_the_history_included() -> None:
    acct, _ = contended_with_history()
    extra = pod("q2-extra", cpu="1", queue="q2")
    result = what_if(acct, load_configuration(CONF), WhatIfRequest(add=[extra]))
    after = {q.name: q.after for q in result.queues}
    q1 = after["q1"]
    assert q1 is not None and q1.deserved is not None and q1.deserved["cpu"] == 2.0
