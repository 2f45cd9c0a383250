"""The controller picks its leadership from the options and answers the eviction path's
question (how long is the lease surely ours) from it."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from scheduler_core.controller.leader import AlwaysLeader, LeaderElector, SchedulerLeaseFollower
from scheduler_core.controller.runtime import Controller, ControllerOptions


@pytest.mark.parametrize(
    ("options", "kind"),
    [
        (ControllerOptions(), LeaderElector),
        (ControllerOptions(leader_elect_mode="sidecar"), SchedulerLeaseFollower),
        (ControllerOptions(leader_elect=False), AlwaysLeader),
        (ControllerOptions(leader_elect=False, leader_elect_mode="sidecar"), AlwaysLeader),
    ],
    ids=["standalone", "sidecar", "no-election", "no-election-wins"],
)
def test_the_options_choose_the_leadership(options: ControllerOptions, kind: type) -> None:
    controller = Controller(None, options, registry=CollectorRegistry())
    assert isinstance(controller.leadership, kind)


def test_the_sidecar_follows_the_named_scheduler_lease_with_the_given_host() -> None:
    options = ControllerOptions(
        leader_elect_mode="sidecar",
        scheduler_lease_name="queue-scheduler",
        scheduler_lease_namespace="ops",
        hostname="pod-a",
    )
    controller = Controller(None, options, registry=CollectorRegistry())
    follower = controller.leadership
    assert isinstance(follower, SchedulerLeaseFollower)
    assert (follower.lease_name, follower.lease_namespace, follower.hostname) == (
        "queue-scheduler",
        "ops",
        "pod-a",
    )
    assert controller.identity.startswith("pod-a_")


def test_an_elected_controller_that_never_led_has_no_margin() -> None:
    for mode in ("standalone", "sidecar"):
        controller = Controller(
            None, ControllerOptions(leader_elect_mode=mode), registry=CollectorRegistry()
        )
        assert controller.leadership_valid_for() == 0.0
        assert not controller.is_leader()


def test_a_single_replica_has_an_unbounded_margin_until_it_resigns() -> None:
    controller = Controller(
        None, ControllerOptions(leader_elect=False), registry=CollectorRegistry()
    )
    assert controller.leadership_valid_for() == float("inf") and controller.is_leader()
    controller.resign()
    assert controller.leadership_valid_for() == 0.0 and not controller.is_leader()
