"""Leadership on the real control plane: the sidecar follows the kube-scheduler of its pair, a
graceful stop hands the lease over at once, and a refused preemption is told by a replica
that does not lead."""

from __future__ import annotations

import itertools
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.controlplane import ControlPlane, Extender, Process, wait_for
from tests.e2e.kube import Kube

#: (lease duration, renew deadline, retry period): short ones so a takeover fits in a test,
#: and kube-scheduler's defaults, which the chart runs.
FAST = (4, 3, 1)
DEFAULTS = (15, 10, 2)


def scheduler_timings(t: tuple[int, int, int]) -> dict[str, str]:
    return {"leaseDuration": f"{t[0]}s", "renewDeadline": f"{t[1]}s", "retryPeriod": f"{t[2]}s"}


def extender_timings(t: tuple[int, int, int]) -> list[str]:
    return [
        "--leader-elect-lease-duration",
        str(t[0]),
        "--leader-elect-renew-deadline",
        str(t[1]),
        "--leader-elect-retry-period",
        str(t[2]),
    ]


_serial = itertools.count()


def leader_gauge(extender: Extender, stopping: bool = False) -> float:
    """The extender's leader gauge. A process told to stop that no longer answers counts 0:
    it resigned on the signal, before its listener closed."""
    try:
        text = extender.metrics()
    except OSError:
        if stopping or not extender.process.alive():
            return 0.0
        raise
    for line in text.splitlines():
        if line.startswith("queue_extender_leader "):
            return float(line.split()[1])
    return -1.0


def read_lease(api: Any, name: str) -> Any:
    try:
        return client.CoordinationV1Api(api).read_namespaced_lease(name, "default")
    except client.ApiException:
        return None


def holder_host(api: Any, name: str) -> str | None:
    found = read_lease(api, name)
    if found is None or not found.spec.holder_identity:
        return None
    return str(found.spec.holder_identity).rsplit("_", 1)[0]


class Pair:
    """One replica as the chart deploys it: kube-scheduler and the extender on its loopback,
    sharing a host name."""

    def __init__(
        self,
        cp: ControlPlane,
        host: str,
        lease: str,
        profile: str,
        timings: tuple[int, int, int] = FAST,
    ) -> None:
        self.host = host
        self.stopping = False
        self.extender = cp.start_extender(
            f"{host}-extender",
            args=[
                "--write-status=false",
                "--scheduler-names",
                profile,
                "--leader-elect-mode=sidecar",
                "--scheduler-lease-name",
                lease,
                "--scheduler-lease-namespace",
                "default",
                "--leader-elect-hostname",
                host,
                *extender_timings(timings),
            ],
        ).wait_ready()
        self.scheduler: Process = cp.start_scheduler(
            f"{host}-scheduler",
            [profile],
            self.extender.url + "/",
            leader_election={
                "leaderElect": True,
                "resourceName": lease,
                "resourceNamespace": "default",
                **scheduler_timings(timings),
            },
            hostname=host,
        )

    def stop(self) -> None:
        self.scheduler.stop()
        self.extender.process.stop()


@pytest.fixture
def pairs(
    control_plane: ControlPlane, request: pytest.FixtureRequest
) -> Iterator[tuple[Pair, Pair, str]]:
    timings = getattr(request, "param", FAST)
    n = next(_serial)
    lease = f"e2e-pair-scheduler-{n}-{int(time.time())}"
    profile = f"pair-scheduler-{n}"
    a = Pair(control_plane, f"pair-a{n}", lease, profile, timings)
    b = Pair(control_plane, f"pair-b{n}", lease, profile, timings)
    try:
        yield a, b, lease
    finally:
        a.stop()
        b.stop()


def one_leading_pair(api: Any, a: Pair, b: Pair, lease: str) -> tuple[Pair, Pair]:
    """(leader, follower) once exactly one extender leads and it is beside the scheduler
    holding the lease."""

    def settled() -> tuple[Pair, Pair] | None:
        gauges = (leader_gauge(a.extender), leader_gauge(b.extender))
        if sorted(gauges) != [0.0, 1.0]:
            return None
        leader, follower = (a, b) if gauges[0] == 1.0 else (b, a)
        return (leader, follower) if holder_host(api, lease) == leader.host else None

    found: tuple[Pair, Pair] = wait_for(settled, 30, "one pair to lead, extender and scheduler")
    return found


def watch_gauges(a: Pair, b: Pair, until: Any, timeout: float, what: str) -> float:
    """Polls both gauges until ``until()``; fails if both ever lead at once. Returns the
    seconds it took."""
    start = time.monotonic()
    while True:
        gauges = (leader_gauge(a.extender, a.stopping), leader_gauge(b.extender, b.stopping))
        assert gauges != (1.0, 1.0), "both extenders led at once"
        if until():
            return time.monotonic() - start
        assert time.monotonic() - start < timeout, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_the_extender_leads_with_its_own_scheduler_and_the_other_pair_takes_over_together(
    api: Any, pairs: tuple[Pair, Pair, str]
) -> None:
    a, b, lease = pairs
    leader, follower = one_leading_pair(api, a, b, lease)
    time.sleep(2)  # two retry periods later, still the same pair
    assert (leader_gauge(leader.extender), leader_gauge(follower.extender)) == (1.0, 0.0)
    assert holder_host(api, lease) == leader.host
    leader.scheduler.kill()  # SIGKILL: its lease is not given back; its extender lives on
    watch_gauges(
        a,
        b,
        lambda: leader_gauge(leader.extender) == 0.0,
        10,
        "the orphaned extender to stop leading",
    )
    watch_gauges(
        a,
        b,
        lambda: holder_host(api, lease) == follower.host and leader_gauge(follower.extender) == 1.0,
        30,
        "the other pair to take over",
    )
    assert leader_gauge(leader.extender) == 0.0


@pytest.mark.parametrize(
    ("pairs", "bound"),
    [(FAST, 4.0), (DEFAULTS, 2 * 2.2 + 2.0)],
    indirect=["pairs"],
    ids=["4-3-1s", "kube-scheduler-defaults"],
)
def test_a_gracefully_stopped_pair_hands_over_within_one_scheduler_retry(
    api: Any, pairs: tuple[Pair, Pair, str], bound: float
) -> None:
    """kube-scheduler gives its lease back on SIGTERM; the other scheduler takes it at its
    next retry (client-go jitters it up to 2.2 retry periods) and its extender sees the
    renew at its next poll (half a retry period)."""
    a, b, lease = pairs
    leader, follower = one_leading_pair(api, a, b, lease)
    leader.stopping = True
    leader.scheduler.kill(signal.SIGTERM)  # a rolling update: both containers get SIGTERM
    leader.extender.process.kill(signal.SIGTERM)
    took = watch_gauges(
        a,
        b,
        lambda: leader_gauge(follower.extender) == 1.0,
        30,
        "the other pair to lead after a graceful stop",
    )
    print(f"\nsidecar handover after SIGTERM: {took:.2f}s")
    assert took < bound, f"{took:.1f}s"


def test_a_gracefully_stopped_standalone_leader_releases_and_the_next_leads_within_3s(
    control_plane: ControlPlane, api: Any
) -> None:
    lease = f"e2e-release-{int(time.time())}"
    args = [
        "--write-status=false",
        "--leader-elect-lease-name",
        lease,
        "--leader-elect-lease-namespace",
        "default",
    ]  # kube-scheduler's own timings, 15/10/2 s: a lease waited out would take 15 s
    replicas = [
        control_plane.start_extender(f"release-{i}", args=args).wait_ready() for i in range(2)
    ]
    try:
        wait_for(lambda: sorted(leader_gauge(e) for e in replicas) == [0.0, 1.0], 30, "one leader")
        leader, follower = sorted(replicas, key=lambda e: -leader_gauge(e))
        held = read_lease(api, lease).spec.holder_identity
        start = time.monotonic()
        leader.process.kill(signal.SIGTERM)
        wait_for(lambda: leader_gauge(follower) == 1.0, 10, "the follower to lead", interval=0.05)
        took = time.monotonic() - start
        print(f"\nstandalone handover after SIGTERM: {took:.2f}s")
        assert took < 3.0, f"{took:.1f}s"
        taken = read_lease(api, lease)
        assert taken.spec.holder_identity not in (None, held)
        leader.process.popen.wait(10)  # type: ignore[union-attr]
        assert "released leader lease" in leader.process.tail(40)
    finally:
        for e in replicas:
            e.process.stop()


def test_a_refused_preemption_is_told_within_5s_by_a_freshly_started_non_leader(
    control_plane: ControlPlane, api: Any, kube: Kube
) -> None:
    tag = f"{int(time.time()) % 100000}"
    lease = f"e2e-refusal-held-{tag}"
    # Somebody else holds the extender's lease for an hour: the replica never leads.
    now = datetime.now(UTC)
    client.CoordinationV1Api(api).create_namespaced_lease(
        "default",
        client.V1Lease(
            metadata=client.V1ObjectMeta(name=lease),
            spec=client.V1LeaseSpec(
                holder_identity="somebody-else_1",
                lease_duration_seconds=3600,
                acquire_time=now,
                renew_time=now,
            ),
        ),
    )
    profile = f"refusal-scheduler-{tag}"
    ns = kube.namespace()
    low = kube.priority_class(f"rf-low-{tag}", 10)
    high = kube.priority_class(f"rf-high-{tag}", 1000)
    kube.node(f"rf-n1-{tag}", cpu="2")
    kube.queue(f"rf-full-{tag}", reclaimable=False)
    kube.queue(f"rf-starved-{tag}")
    extender = control_plane.start_extender(
        f"refusal-{tag}",
        args=[
            "--scheduler-names",
            profile,
            "--leader-elect-lease-name",
            lease,
            "--leader-elect-lease-namespace",
            "default",
        ],
    ).wait_ready()
    scheduler = control_plane.start_scheduler(f"refusal-sched-{tag}", [profile], extender.url + "/")
    try:
        kube.pod(ns, "hog", cpu="2", queue=f"rf-full-{tag}", priority_class=low, scheduler=profile)
        kube.wait_running(ns, ["hog"])
        assert leader_gauge(extender) == 0.0
        created = time.monotonic()
        kube.pod(
            ns, "claim", cpu="2", queue=f"rf-starved-{tag}", priority_class=high, scheduler=profile
        )

        def refused() -> Any:
            found = client.EventsV1Api(api).list_namespaced_event(
                ns, field_selector="regarding.name=claim"
            )
            return next((e for e in found.items if e.reason == "NotReclaimable"), None)

        event = wait_for(refused, 5, "a NotReclaimable event on the preemptor", interval=0.1)
        print(f"\nrefusal event after {time.monotonic() - created:.2f}s")
        assert event.reporting_controller == "kube-queue-extender"
        assert f"rf-full-{tag}" in event.note
        assert leader_gauge(extender) == 0.0, "told by a replica that does not lead"
    finally:
        scheduler.stop()
        extender.process.stop()
