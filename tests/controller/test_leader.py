"""Leadership, driven one step at a time with fake clocks against an in-memory Lease API:
standalone election on our own Lease, and the sidecar that follows kube-scheduler's Lease."""

from __future__ import annotations

import copy
import json
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry

from scheduler_core.controller.leader import (
    AlwaysLeader,
    ElectionTimings,
    LeaderElector,
    SchedulerLeaseFollower,
    holder_hostname,
    pod_namespace,
    validate_timings,
)
from tests.builders import lease

FAST = ElectionTimings(lease_duration=3.0, renew_deadline=2.0, retry_period=1.0)
DEFAULTS = ElectionTimings()
LEASE = ("ops", "kube-queue-extender")
SCHEDULER_LEASE = ("kube-system", "kube-scheduler")


class LeaseStore:
    """The Lease objects of an API server: read, create, replace with resourceVersion checks."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.leases: dict[tuple[str, str], Any] = {}
        self.version = 0

    def put(self, obj: Any) -> None:
        """Write as another party would (a kube-scheduler renewing its lease)."""
        with self.lock:
            self.version += 1
            obj = copy.deepcopy(obj)
            obj.metadata.resource_version = str(self.version)
            self.leases[(obj.metadata.namespace, obj.metadata.name)] = obj


class FakeCoordination:
    """One replica's view of the store; ``partitioned`` makes every call fail like a dead link."""

    def __init__(self, store: LeaseStore) -> None:
        self.store = store
        self.partitioned = False
        self.reads = 0

    def _check(self) -> None:
        if self.partitioned:
            raise ApiException(status=503, reason="Service Unavailable")

    def read_namespaced_lease(self, name: str, namespace: str, **_: Any) -> Any:
        self._check()
        self.reads += 1
        with self.store.lock:
            found = self.store.leases.get((namespace, name))
            if found is None:
                exc = ApiException(status=404, reason="Not Found")
                exc.body = json.dumps({"code": 404})
                raise exc
            return copy.deepcopy(found)

    def create_namespaced_lease(self, namespace: str, body: Any, **_: Any) -> Any:
        self._check()
        with self.store.lock:
            name = body.metadata.name
            if (namespace, name) in self.store.leases:
                raise ApiException(status=409, reason="AlreadyExists")
            self.store.version += 1
            created = copy.deepcopy(body)
            created.metadata.resource_version = str(self.store.version)
            self.store.leases[(namespace, name)] = created
            return copy.deepcopy(created)

    def replace_namespaced_lease(self, name: str, namespace: str, body: Any, **_: Any) -> Any:
        self._check()
        with self.store.lock:
            current = self.store.leases[(namespace, name)]
            if body.metadata.resource_version != current.metadata.resource_version:
                raise ApiException(status=409, reason="Conflict")
            self.store.version += 1
            replaced = copy.deepcopy(body)
            replaced.metadata.resource_version = str(self.store.version)
            self.store.leases[(namespace, name)] = replaced
            return copy.deepcopy(replaced)


class Clocks:
    """One process's clocks: the monotonic one advances with real time for every process
    alike; the wall clock can be stepped on its own (NTP, a VM resumed, an operator)."""

    def __init__(self, shared: list[float]) -> None:
        self.shared = shared
        self.wall_offset = timedelta()

    def monotonic(self) -> float:
        return self.shared[0]

    def wall(self) -> datetime:
        return (
            datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=self.shared[0]) + self.wall_offset
        )


class World:
    """A store, a shared flow of time, and replicas on it."""

    def __init__(self) -> None:
        self.store = LeaseStore()
        self.time = [1000.0]

    def advance(self, seconds: float) -> None:
        self.time[0] += seconds

    def elector(
        self, identity: str, timings: ElectionTimings = FAST, **kwargs: Any
    ) -> tuple[LeaderElector, FakeCoordination, Clocks]:
        api = FakeCoordination(self.store)
        clocks = Clocks(self.time)
        e = LeaderElector(
            None,
            lease_name=LEASE[1],
            lease_namespace=LEASE[0],
            timings=timings,
            identity=identity,
            coordination_api=api,
            registry=CollectorRegistry(),
            monotonic=clocks.monotonic,
            wall=clocks.wall,
            **kwargs,
        )
        return e, api, clocks

    def follower(
        self, hostname: str, timings: ElectionTimings = DEFAULTS, **kwargs: Any
    ) -> tuple[SchedulerLeaseFollower, FakeCoordination]:
        api = FakeCoordination(self.store)
        f = SchedulerLeaseFollower(
            None,
            lease_name=SCHEDULER_LEASE[1],
            lease_namespace=SCHEDULER_LEASE[0],
            timings=timings,
            hostname=hostname,
            coordination_api=api,
            registry=CollectorRegistry(),
            monotonic=lambda: self.time[0],
            **kwargs,
        )
        return f, api

    def holder(self, key: tuple[str, str] = LEASE) -> str | None:
        found = self.store.leases.get(key)
        return None if found is None else found.spec.holder_identity

    def scheduler_renews(
        self, holder: str, *, wall: datetime | None = None, duration: int = 15
    ) -> None:
        """kube-scheduler writing its Lease (its own wall clock, whatever it says)."""
        self.store.put(
            lease(
                SCHEDULER_LEASE[1],
                SCHEDULER_LEASE[0],
                holder,
                renew_time=wall
                or datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=self.time[0]),
                duration=duration,
            )
        )


# --- timings ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("timings", "message"),
    [
        (ElectionTimings(15, 10, 0.5), "retry period must be at least 1s"),
        (ElectionTimings(15, 2, 2), "renew deadline (2s) must be greater than 1.2 x"),
        (ElectionTimings(10, 10, 2), "lease duration (10s) must be greater than the renew"),
        (ElectionTimings(15.5, 10, 2), "whole seconds"),
    ],
)
def test_inconsistent_timings_are_a_value_error_naming_the_rule(
    timings: ElectionTimings, message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate_timings(timings)


def test_kube_scheduler_defaults_are_valid_and_keep_five_seconds_back() -> None:
    validate_timings(DEFAULTS)
    assert DEFAULTS.safety_margin == 5.0


# --- standalone ---------------------------------------------------------------------------


def test_exactly_one_of_two_replicas_leads_and_the_lease_names_it() -> None:
    w = World()
    a, _, _ = w.elector("a")
    b, _, _ = w.elector("b")
    for _ in range(20):
        a.step()
        b.step()
        assert [e.is_leader() for e in (a, b)] == [True, False]
        w.advance(FAST.retry_period)
    assert w.holder() == "a"


def test_the_margin_is_lease_duration_less_time_since_renew_sent_less_safety_margin() -> None:
    w = World()
    a, _, _ = w.elector("a")
    assert a.leadership_valid_for() == 0.0
    a.step()
    assert a.leadership_valid_for() == FAST.lease_duration - FAST.safety_margin
    w.advance(0.5)
    assert a.leadership_valid_for() == pytest.approx(FAST.renew_deadline - 0.5)


def test_a_follower_whose_wall_clock_jumps_forward_does_not_take_over_while_the_leader_renews() -> (
    None
):
    w = World()
    a, _, _ = w.elector("a")
    b, _, b_clocks = w.elector("b")
    a.step()
    b.step()
    b_clocks.wall_offset = timedelta(hours=1)  # the lease's renewTime now looks an hour old
    for _ in range(30):
        w.advance(FAST.retry_period)
        a.step()
        b.step()
        assert a.is_leader() and not b.is_leader()
    assert w.holder() == "a"


def test_a_leader_whose_renewals_fail_stops_leading_before_the_lease_could_be_taken() -> None:
    w = World()
    stopped: list[str] = []
    a, a_api, _ = w.elector("a", on_stop=lambda: stopped.append("a"))
    b, _, _ = w.elector("b")
    a.step()
    b.step()
    a_api.partitioned = True  # a can no longer renew, and does not know it yet
    a_stopped_at = b_took_at = None
    for _ in range(200):
        w.advance(0.05)
        a.step()
        b.step()
        assert not (a.is_leader() and b.is_leader())
        if a_stopped_at is None and not a.is_leader():
            a_stopped_at = w.time[0]
        if b_took_at is None and b.is_leader():
            b_took_at = w.time[0]
    assert a_stopped_at is not None and b_took_at is not None
    assert b_took_at - a_stopped_at >= FAST.safety_margin - 0.05
    assert stopped == ["a"] and w.holder() == "b"


def test_a_stopped_leader_gives_the_lease_back_and_the_next_leads_at_its_next_retry() -> None:
    w = World()
    order: list[str] = []
    a, _, _ = w.elector("a", on_stop=lambda: order.append(f"stopped, holder {w.holder()}"))
    b, _, _ = w.elector("b")
    a.step()
    b.step()
    a.stop()
    assert order == ["stopped, holder a"], "the writers stop before the lease is given back"
    assert not a.is_leader() and a.leadership_valid_for() == 0.0
    assert not w.holder()
    b.step()  # no time passed: an empty holder is free at once
    assert b.is_leader() and w.holder() == "b"


def test_a_follower_takes_an_abandoned_lease_one_lease_duration_after_it_saw_it_change() -> None:
    w = World()
    a, _, _ = w.elector("a")
    b, _, _ = w.elector("b")
    a.step()
    b.step()  # b sees a's record now
    w.advance(FAST.lease_duration - 0.1)  # a died without a word
    b.step()
    assert not b.is_leader()
    w.advance(0.1)
    b.step()
    assert b.is_leader() and w.holder() == "b"
    assert w.store.leases[LEASE].spec.lease_transitions == 1


_ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from(["step", "partition", "heal", "jump-wall", "advance"]),
        st.floats(min_value=0.01, max_value=4.0),
    ),
    max_size=120,
)


@settings(max_examples=150, deadline=None)
@given(_ACTIONS)
def test_two_replicas_never_count_themselves_leader_at_once(actions: list[Any]) -> None:
    w = World()
    replicas = {name: w.elector(name) for name in ("a", "b", "c")}
    for name, action, amount in actions:
        elector, api, clocks = replicas[name]
        if action == "step":
            elector.step()
        elif action == "partition":
            api.partitioned = True
        elif action == "heal":
            api.partitioned = False
        elif action == "jump-wall":
            clocks.wall_offset += timedelta(seconds=amount * 1000)
        else:
            w.advance(amount)
        leaders = [n for n, (e, _, _) in replicas.items() if e.is_leader()]
        assert len(leaders) <= 1, f"{leaders} lead at once"


# --- sidecar ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("holder", "host"),
    [
        ("sched-7d9f-abcde_0b7c6a3e-8f1d-4c2a-9a51-2f0e8c7d6b5a", "sched-7d9f-abcde"),
        ("nohost", "nohost"),
        ("a_b_c", "a_b"),
    ],
)
def test_the_host_of_a_kube_scheduler_holder_identity_is_before_the_last_underscore(
    holder: str, host: str
) -> None:
    assert holder_hostname(holder) == host


def test_the_sidecar_leads_only_from_a_renew_it_watched_happen() -> None:
    w = World()
    w.scheduler_renews("pod-a_1111")
    f, _ = w.follower("pod-a")
    f.step()
    assert not f.is_leader(), "the first sight tells nothing of the renew's age"
    w.advance(1.0)
    w.scheduler_renews("pod-a_1111")
    w.advance(0.2)
    f.step()
    assert f.is_leader()
    # Counted from the previous read's send (1.2 s ago), not from now.
    assert f.leadership_valid_for() == pytest.approx(15 - 1.2 - DEFAULTS.safety_margin)


def test_the_sidecar_of_another_pod_never_leads() -> None:
    w = World()
    f, _ = w.follower("pod-b")
    for _ in range(5):
        w.scheduler_renews("pod-a_1111")
        f.step()
        w.advance(1.0)
        assert not f.is_leader() and f.leadership_valid_for() == 0.0


def test_the_sidecar_stops_leading_before_another_could_take_over_a_silent_scheduler() -> None:
    w = World()
    f, _ = w.follower("pod-a")
    for _ in range(3):
        w.scheduler_renews("pod-a_1111")
        f.step()
        w.advance(1.0)
    assert f.is_leader()
    last_floor = w.time[0] - 2.0  # the read before the last change was sent then
    while f.is_leader():
        f.step()
        w.advance(0.1)
    assert w.time[0] <= last_floor + 15 - DEFAULTS.safety_margin + 0.2


def test_the_sidecar_follows_a_handover_to_the_other_scheduler_at_once() -> None:
    w = World()
    f, _ = w.follower("pod-a")
    stops: list[str] = []
    f._on_stop = lambda: stops.append("stop")
    for _ in range(2):
        w.scheduler_renews("pod-a_1111")
        f.step()
        w.advance(1.0)
    assert f.is_leader()
    w.scheduler_renews("pod-b_2222")
    f.step()
    assert not f.is_leader() and stops == ["stop"]


def test_the_sidecar_ignores_the_schedulers_wall_clock() -> None:
    w = World()
    f, _ = w.follower("pod-a")
    skewed = datetime(2020, 1, 1, tzinfo=UTC)
    for i in range(3):
        w.scheduler_renews("pod-a_1111", wall=skewed + timedelta(seconds=i))
        f.step()
        w.advance(1.0)
    assert f.is_leader()


def test_the_sidecar_is_no_leader_while_it_cannot_read_the_lease_long_enough() -> None:
    w = World()
    f, api = w.follower("pod-a")
    for _ in range(2):
        w.scheduler_renews("pod-a_1111")
        f.step()
        w.advance(1.0)
    api.partitioned = True
    for _ in range(12):
        f.step()
        w.advance(1.0)
    assert not f.is_leader()


def test_a_stopped_sidecar_stops_leading_at_once() -> None:
    w = World()
    f, _ = w.follower("pod-a")
    for _ in range(2):
        w.scheduler_renews("pod-a_1111")
        f.step()
        w.advance(1.0)
    f.stop()
    assert not f.is_leader() and f.leadership_valid_for() == 0.0


# --- the rest -----------------------------------------------------------------------------


def test_leader_gauge_follows_leadership() -> None:
    registry = CollectorRegistry()
    always = AlwaysLeader("solo", registry=registry)
    assert always.is_leader() and always.leadership_valid_for() == float("inf")
    assert registry.get_sample_value("queue_extender_leader") == 1.0
    always.stop()
    assert registry.get_sample_value("queue_extender_leader") == 0.0
    w = World()
    registry = CollectorRegistry()
    e = LeaderElector(
        None,
        lease_name=LEASE[1],
        lease_namespace=LEASE[0],
        timings=FAST,
        identity="a",
        coordination_api=FakeCoordination(w.store),
        registry=registry,
        monotonic=lambda: w.time[0],
    )
    assert registry.get_sample_value("queue_extender_leader") == 0.0
    e.step()
    assert registry.get_sample_value("queue_extender_leader") == 1.0


def test_pod_namespace_comes_from_the_service_account_file(tmp_path: Any) -> None:
    path = tmp_path / "namespace"
    path.write_text("batch-system\n")
    assert pod_namespace(str(path)) == "batch-system"
    assert pod_namespace(str(tmp_path / "absent")) == "default"


def test_a_resigned_leader_writes_nothing_more_but_keeps_the_lease_until_it_stops() -> None:
    w = World()
    a, _, _ = w.elector("a")
    b, _, _ = w.elector("b")
    a.step()
    a.resign()
    assert not a.is_leader() and a.leadership_valid_for() == 0.0
    a.step()  # a round already under way when the stop began does not lead again
    assert not a.is_leader()
    b.step()
    assert not b.is_leader() and w.holder() == "a"
    a.stop()
    b.step()
    assert b.is_leader()


def test_stopping_a_replica_that_never_led_leaves_the_leaders_lease_alone() -> None:
    w = World()
    a, _, _ = w.elector("a")
    b, _, _ = w.elector("b")
    a.step()
    b.step()
    b.stop()
    assert w.holder() == "a"
    a.step()
    assert a.is_leader()


def test_the_sidecar_keeps_back_a_margin_in_proportion_to_the_schedulers_own_lease() -> None:
    w = World()
    f, _ = w.follower("pod-a")  # our flags: kube-scheduler's defaults, 15/10 s
    for _ in range(2):
        w.scheduler_renews("pod-a_1", duration=6)
        f.step()
        w.advance(0.5)
    # The scheduler runs a 6 s lease: a third of it kept back, counted from the read before.
    assert f.leadership_valid_for() == pytest.approx(6 - 1.0 - 2.0)
