"""The accounting session weighs past usage that fades with time, not with cluster events:
it is opened again once its usage reading is older than the refresh interval, and only when
the usage history plugin adjusts shares."""

from __future__ import annotations

from scheduler_core.api.resource import Resource
from scheduler_core.api.usage_history import UsageHistory
from scheduler_core.conf import load_configuration
from tests.builders import accounting, node, pod, podgroup, queue

H = 100.0  # refresh interval: 1 s
CONF = """
actions: ""
tiers:
- plugins:
  - name: usagehistory
    arguments:
      usage.halfLife: 100s
  - name: proportion
"""


def cluster() -> list[dict[str, object]]:
    objs: list[dict[str, object]] = [node("n1", cpu="8", memory="64Gi"), queue("q1")]
    objs += [queue("q2"), podgroup("pg", queue="q2", phase="Inqueue")]
    objs += [pod(f"p{i}", cpu="1", group="pg") for i in range(10)]
    return objs


def test_the_session_is_opened_again_when_usage_moved_on() -> None:
    acct, _ = accounting(cluster(), CONF)
    now = [0.0]
    history = UsageHistory(H, monotonic=lambda: now[0])
    history.held("q1", Resource(8000, 0))
    acct.state.usage_history = history
    acct.use_configuration(load_configuration(CONF))
    first = acct.session()
    now[0] = 0.5
    assert acct.session() is first  # the same reading still stands
    now[0] = 1.5
    assert acct.session() is not first


def test_without_the_plugin_time_alone_opens_no_session() -> None:
    acct, _ = accounting(cluster())
    now = [0.0]
    acct.state.usage_history = UsageHistory(H, monotonic=lambda: now[0])
    first = acct.session()
    now[0] = 10 * H
    assert acct.session() is first
