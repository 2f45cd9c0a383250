"""A new configuration swapped into the queue accounting: the next verb decides by it."""

from __future__ import annotations

from scheduler_core.conf import DEFAULT_CONF, load_configuration
from scheduler_core.extender.filter_verb import filter_pod
from scheduler_core.report import queue_attrs
from tests.builders import accounting, node, queue
from tests.extender.test_filter_verb import lone

CAPACITY_CONF = DEFAULT_CONF.replace("proportion", "capacity")


def test_the_next_session_is_opened_with_the_new_tiers_despite_the_refresh_interval() -> None:
    acct, _ = accounting([node("n1"), queue("q1")])
    acct.min_refresh_interval = 3600.0  # no cluster change would rebuild it in this test
    before = acct.session()
    assert "proportion" in before.plugins
    acct.use_configuration(load_configuration(CAPACITY_CONF))
    after = acct.session()
    assert after is not before
    assert "capacity" in after.plugins and "proportion" not in after.plugins
    assert acct.session() is after  # rebuilt once, not on every verb from now on


def test_assumed_pods_still_count_in_the_session_of_the_new_configuration() -> None:
    p0 = lone("p0", "q1", cpu="2")
    acct, _ = accounting([node("n1"), queue("q1"), p0])
    assert filter_pod(acct, p0, ["n1"]).passed == ["n1"]
    acct.use_configuration(load_configuration(CAPACITY_CONF))
    attrs = queue_attrs(acct.session())
    assert attrs["q1"].allocated.milli_cpu == 2000
