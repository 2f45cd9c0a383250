"""The log verbosity changes what is logged, never what is decided nor the way there: a
session at -v 4 (or 10) follows changes, reuses its remembered results and scores on the
node table exactly as one at -v 0."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from scheduler_core.accounting.following import can_follow
from scheduler_core.conf import DEFAULT_CONF, load_configuration
from scheduler_core.framework.framework import open_session
from scheduler_core.framework.memo import SessionMemos
from scheduler_core.logutil import v
from tests.builders import node, pod, queue, snapshot
from tests.plugins.usagehistory.test_plugin import cluster, conf_text, history_with

OBJECTS = [
    queue("a", weight=1),
    queue("b", weight=3),
    node("n1", cpu="4"),
    node("n2", cpu="8"),
    pod("p1", cpu="1", node_name="n1", phase="Running", queue="a"),
    pod("w1", cpu="2", queue="b"),
]


@pytest.fixture(params=[0, 4, 10], ids=lambda n: f"v{n}")
def verbosity(request: pytest.FixtureRequest) -> Iterator[int]:
    engine = logging.getLogger("scheduler_core")
    before = engine.level
    engine.setLevel(v(request.param))
    yield request.param
    engine.setLevel(before)


def test_a_read_only_session_can_follow_changes_at_every_verbosity(verbosity: int) -> None:
    ssn = open_session(snapshot(OBJECTS), load_configuration(DEFAULT_CONF), read_only=True)
    assert can_follow(ssn)


def test_proportion_reuses_its_last_deserved_loop_at_every_verbosity(verbosity: int) -> None:
    memos = SessionMemos()
    conf = load_configuration(DEFAULT_CONF)
    first = open_session(snapshot(OBJECTS), conf, memos=memos, read_only=True)
    second = open_session(snapshot(OBJECTS), conf, memos=memos, read_only=True)
    assert second.plugins["proportion"].derivation is first.plugins["proportion"].derivation


def test_scores_and_verdicts_are_the_same_at_every_verbosity(verbosity: int) -> None:
    conf = load_configuration(DEFAULT_CONF)
    ssn = open_session(snapshot(OBJECTS), conf, read_only=True)
    [task] = [t for job in ssn.jobs.values() for t in job.tasks.values() if t.name == "w1"]
    nodes = list(ssn.nodes.values())
    scores = ssn.node_scores(task, nodes)
    verdicts = [ssn.predicate(task, n) for n in nodes]
    engine = logging.getLogger("scheduler_core")
    engine.setLevel(v(0))
    quiet = open_session(snapshot(OBJECTS), conf, read_only=True)
    [same] = [t for job in quiet.jobs.values() for t in job.tasks.values() if t.name == "w1"]
    quiet_nodes = list(quiet.nodes.values())
    assert quiet.node_scores(same, quiet_nodes) == scores
    assert [quiet.predicate(same, n) for n in quiet_nodes] == verdicts


def test_proportion_reuses_its_loop_on_adjusted_weights_at_every_verbosity(
    verbosity: int,
) -> None:
    memos = SessionMemos()
    conf = load_configuration(conf_text())
    history = history_with({"q1": {"cpu": 8000.0}})
    weighted = []
    for _ in range(2):
        snap = snapshot(cluster({"q1": 8, "q2": 8}))
        snap.usage_history = history
        ssn = open_session(snap, conf, memos=memos, read_only=True)
        assert ssn.plugins["proportion"].adjustments  # the loop on adjusted weights ran
        weighted.append(ssn.plugins["proportion"].weighted)
    assert weighted[1] is weighted[0]  # the remembered result, not the loop run again
