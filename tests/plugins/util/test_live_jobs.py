"""plugins/util/live_jobs: what gang, priority and conformance share."""

from __future__ import annotations

import logging

import pytest

from scheduler_core.accounting.following import can_follow
from scheduler_core.api.job import JobInfo
from scheduler_core.conf import load_configuration
from scheduler_core.engine import open_session
from scheduler_core.framework.registry import UsageChange, follows_nothing
from scheduler_core.logutil import v
from scheduler_core.plugins.util.live_jobs import ReadsLive, with_known_jobs
from tests.builders import node, pod, podgroup, snapshot, task, tiers


def test_a_preemptee_whose_job_the_session_does_not_know_is_left_out_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    jobs = {"ns/j": JobInfo(uid="ns/j", name="j", namespace="ns", queue="q")}
    known, stray = task("known", job="ns/j"), task("stray", job="ns/gone")
    log = logging.getLogger("tests.live_jobs")
    with caplog.at_level(v(4), logger="tests.live_jobs"):
        pairs = list(with_known_jobs(jobs, [stray, known], log))
    assert [(t.name, j.uid) for t, j in pairs] == [("known", "ns/j")]
    assert [r.name for r in caplog.records] == ["tests.live_jobs"]
    assert "<ns/stray> because its job <ns/gone> is not in the session" in caplog.text


@pytest.mark.parametrize("name", ["gang", "priority", "conformance"])
def test_a_live_reading_plugin_is_followed_in_place_with_nothing_to_do(name: str) -> None:
    objects = [node("n1", cpu="4"), podgroup("j", min_member=1), pod("p", group="j", cpu="1")]
    ssn = open_session(snapshot(objects), load_configuration(tiers(name)), read_only=True)
    plugin = ssn.plugins[name]
    assert isinstance(plugin, ReadsLive)
    assert can_follow(ssn)
    change = UsageChange(usage={}, queues={"default"}, nodes={"n1"}, jobs=set())
    assert plugin.follow(ssn, change) is follows_nothing
