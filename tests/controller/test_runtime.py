"""The controller's leadership margin: what the eviction path sizes its deadlines by."""

from __future__ import annotations

import math
import time

import pytest

from scheduler_core.controller.leader import LeaderElector
from scheduler_core.controller.runtime import Controller, ControllerOptions


def elected() -> tuple[Controller, LeaderElector]:
    controller = Controller(object(), ControllerOptions(leader_elect=True))
    assert isinstance(controller.leadership, LeaderElector)
    return controller, controller.leadership


def test_without_an_election_the_margin_is_unbounded() -> None:
    controller = Controller(object(), ControllerOptions(leader_elect=False))
    assert controller.leadership_valid_for() == math.inf


def test_a_replica_that_does_not_lead_has_no_margin() -> None:
    controller, _ = elected()
    assert controller.leadership_valid_for() == 0.0


@pytest.mark.parametrize("age", [0.0, 3.0, 9.0])
def test_the_margin_is_what_is_left_of_the_renew_deadline_since_the_last_renew(
    age: float,
) -> None:
    controller, elector = elected()
    elector._leading = True
    elector._lock.last_renew = time.monotonic() - age
    margin = controller.leadership_valid_for()
    assert 0.0 < margin <= elector.timings.renew_deadline - age


def test_a_renew_older_than_the_renew_deadline_leaves_no_margin() -> None:
    controller, elector = elected()
    elector._leading = True
    elector._lock.last_renew = time.monotonic() - elector.timings.renew_deadline - 1
    assert controller.leadership_valid_for() == 0.0
