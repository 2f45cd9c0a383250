"""Two extender replicas on the real API server: one Lease, one leader, and a takeover when the
leader is killed."""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client

from tests.e2e.controlplane import ControlPlane, Extender, wait_for

LEASE = "e2e-leader-election"
ELECTION = [
    "--leader-elect-lease-name",
    LEASE,
    "--leader-elect-lease-namespace",
    "default",
    "--leader-elect-lease-duration",
    "4",
    "--leader-elect-renew-deadline",
    "3",
    "--leader-elect-retry-period",
    "1",
]


def leader_gauge(extender: Extender) -> float | None:
    for line in extender.metrics().splitlines():
        if line.startswith("queue_extender_leader "):
            return float(line.split()[1])
    return None


def lease(api: Any) -> Any:
    try:
        return client.CoordinationV1Api(api).read_namespaced_lease(LEASE, "default")
    except client.ApiException:
        return None


def holder(api: Any) -> str | None:
    found = lease(api)
    return None if found is None else (found.spec.holder_identity or None)


def test_two_replicas_elect_one_leader_and_the_other_takes_over_when_it_dies(
    control_plane: ControlPlane, api: Any
) -> None:
    first = control_plane.start_extender("replica-a", args=ELECTION).wait_ready()
    second = control_plane.start_extender("replica-b", args=ELECTION).wait_ready()
    replicas = [first, second]
    try:
        wait_for(lambda: holder(api), 30, "a replica to hold the lease")
        wait_for(
            lambda: sorted(leader_gauge(e) for e in replicas) == [0.0, 1.0],
            30,
            "exactly one replica to report itself leader",
        )
        time.sleep(2)  # two retry periods later it is still exactly one
        gauges = [leader_gauge(e) for e in replicas]
        assert sorted(gauges) == [0.0, 1.0]
        leader, follower = (first, second) if gauges[0] == 1.0 else (second, first)
        leader.process.kill()  # SIGKILL: no release of the lease, the follower must wait it out
        last = lease(api)
        wait_for(
            lambda: (
                holder(api) not in (None, last.spec.holder_identity)
                and leader_gauge(follower) == 1.0
            ),
            30,
            "the follower to take the lease over",
        )
        taken = lease(api)
        # The Lease's own times: the follower waited the lease out (4 s after the last renew
        # it saw, give or take one retry period) and did not wait much longer.
        gap = (taken.spec.acquire_time - last.spec.renew_time).total_seconds()
        assert 4 - 1 <= gap <= 4 + 5, f"takeover {gap:.1f}s after the last renew"
    finally:
        for e in replicas:
            e.process.stop()
