"""Leader election on the client's own LeaseLock, against an in-memory Lease API."""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry

from scheduler_core.controller.leader import (
    AlwaysLeader,
    ElectionTimings,
    LeaderElector,
    pod_namespace,
    validate_timings,
)

FAST = ElectionTimings(lease_duration=3.0, renew_deadline=2.0, retry_period=1.0)


class LeaseStore:
    """The Lease objects of an API server: read, create, replace with resourceVersion checks."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.leases: dict[tuple[str, str], Any] = {}
        self.version = 0


class FakeCoordination:
    """One replica's view of the store; ``partitioned`` makes every call fail like a dead link."""

    def __init__(self, store: LeaseStore) -> None:
        self.store = store
        self.partitioned = False

    def _check(self) -> None:
        if self.partitioned:
            raise ApiException(status=503, reason="Service Unavailable")

    def read_namespaced_lease(self, name: str, namespace: str) -> Any:
        self._check()
        with self.store.lock:
            lease = self.store.leases.get((namespace, name))
            if lease is None:
                exc = ApiException(status=404, reason="Not Found")
                exc.body = json.dumps({"code": 404})
                raise exc
            return copy.deepcopy(lease)

    def create_namespaced_lease(self, namespace: str, body: Any) -> Any:
        self._check()
        with self.store.lock:
            name = body.metadata.name
            if (namespace, name) in self.store.leases:
                raise ApiException(status=409, reason="AlreadyExists")
            self.store.version += 1
            lease = k8s_client.V1Lease(
                metadata=k8s_client.V1ObjectMeta(
                    name=name, namespace=namespace, resource_version=str(self.store.version)
                ),
                spec=body.spec,
            )
            self.store.leases[(namespace, name)] = lease
            return copy.deepcopy(lease)

    def replace_namespaced_lease(self, name: str, namespace: str, body: Any) -> Any:
        self._check()
        with self.store.lock:
            current = self.store.leases[(namespace, name)]
            if body.metadata.resource_version != current.metadata.resource_version:
                raise ApiException(status=409, reason="Conflict")
            self.store.version += 1
            lease = copy.deepcopy(body)
            lease.metadata.resource_version = str(self.store.version)
            self.store.leases[(namespace, name)] = lease
            return copy.deepcopy(lease)


def elector(
    store: LeaseStore, identity: str, **kwargs: Any
) -> tuple[LeaderElector, FakeCoordination]:
    api = FakeCoordination(store)
    e = LeaderElector(
        None,
        lease_name="kube-queue-extender",
        lease_namespace="ops",
        timings=FAST,
        identity=identity,
        coordination_api=api,
        registry=CollectorRegistry(),
        **kwargs,
    )
    return e, api


def wait(check: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def holder(store: LeaseStore) -> str | None:
    lease = store.leases.get(("ops", "kube-queue-extender"))
    return None if lease is None else lease.spec.holder_identity


@pytest.mark.parametrize(
    ("timings", "message"),
    [
        (ElectionTimings(15, 10, 0.5), "retry period must be at least 1s"),
        (ElectionTimings(15, 2, 2), "renew deadline (2s) must be greater than 1.2 x"),
        (ElectionTimings(10, 10, 2), "lease duration (10s) must be greater than the renew"),
    ],
)
def test_timings_the_library_would_exit_on_are_a_value_error(
    timings: ElectionTimings, message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate_timings(timings)


def test_kube_scheduler_defaults_are_valid() -> None:
    validate_timings(ElectionTimings())


def test_exactly_one_of_two_replicas_leads_and_the_lease_names_it() -> None:
    store = LeaseStore()
    a, _ = elector(store, "a")
    b, _ = elector(store, "b")
    a.start()
    b.start()
    try:
        wait(lambda: a.is_leader() or b.is_leader())
        time.sleep(1.5)  # a few retry periods: the other must still be following
        leaders = [e for e in (a, b) if e.is_leader()]
        assert len(leaders) == 1
        assert holder(store) == leaders[0].identity
    finally:
        a.stop()
        b.stop()


def test_a_cut_off_leader_stops_leading_before_the_other_takes_over() -> None:
    store = LeaseStore()
    started: list[str] = []
    stopped: list[str] = []
    a, a_api = elector(
        store, "a", on_start=lambda: started.append("a"), on_stop=lambda: stopped.append("a")
    )
    a.start()
    wait(a.is_leader)
    b, _ = elector(store, "b", on_start=lambda: started.append("b"))
    b.start()
    both = []
    try:
        a_api.partitioned = True  # a can no longer renew, and does not know it yet

        def watch() -> bool:
            if a.is_leader() and b.is_leader():
                both.append(time.monotonic())
            return b.is_leader()

        wait(watch)
        assert not both, "two replicas believed they were leading at the same time"
        assert not a.is_leader()
        assert holder(store) == "b"
        wait(lambda: "a" in stopped)
        assert started == ["a", "b"]
    finally:
        a.stop()
        b.stop()


def test_is_leader_turns_false_once_the_last_renew_is_older_than_the_deadline() -> None:
    store = LeaseStore()
    a, _ = elector(store, "a")
    a.start()
    try:
        wait(a.is_leader)
        # Still "leading" for the library, but its last successful renew is stale.
        a._lock.last_renew = time.monotonic() - FAST.renew_deadline - 0.1
        assert not a.is_leader()
    finally:
        a.stop()


def test_a_stopped_leader_releases_the_lease_so_the_next_need_not_wait() -> None:
    store = LeaseStore()
    a, _ = elector(store, "a")
    a.start()
    wait(a.is_leader)
    a.stop()
    assert not holder(store)
    b, _ = elector(store, "b")
    b.start()
    try:
        wait(b.is_leader, timeout=FAST.retry_period * 3)
    finally:
        b.stop()


def test_leader_gauge_follows_leadership() -> None:
    registry = CollectorRegistry()
    always = AlwaysLeader("solo", registry=registry)
    assert always.is_leader()
    assert registry.get_sample_value("queue_extender_leader") == 1.0


def test_pod_namespace_comes_from_the_service_account_file(tmp_path: Any) -> None:
    path = tmp_path / "namespace"
    path.write_text("batch-system\n")
    assert pod_namespace(str(path)) == "batch-system"
    assert pod_namespace(str(tmp_path / "absent")) == "default"


def test_a_fractional_lease_duration_is_refused() -> None:
    with pytest.raises(ValueError, match="whole seconds"):
        validate_timings(ElectionTimings(15.5, 10, 2))
