"""Leader election over a ``coordination.k8s.io/v1`` Lease, with the official client's module.

``kubernetes.leaderelection`` does the protocol (acquire, renew, take over an expired lease).
It has three traits this module works around:

* its ``LeaseLock`` builds its API object from the process-wide default client; we point it at
  the ApiClient the informers already authenticated;
* its ``Config`` calls ``sys.exit`` on inconsistent durations; :func:`validate_timings` says what
  is wrong first, as a ``ValueError``;
* it notices a lost lease only after a whole renew deadline of failed retries, and ``run()``
  returns for good after that. :class:`LeaderElector` re-enters the election in a loop and its
  :meth:`~LeaderElector.is_leader` is False as soon as the last successful renew is older than
  the renew deadline, so a replica cut off from the API server stops writing before another one
  can take the lease over (lease duration > renew deadline).
"""

from __future__ import annotations

import logging
import random
import socket
import string
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kubernetes import client as k8s_client
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock import leaselock
from prometheus_client import CollectorRegistry, Gauge

log = logging.getLogger(__name__)

#: The jitter factor ``electionconfig.Config`` applies to the retry period when validating.
_JITTER_FACTOR = 1.2


class Leadership(Protocol):
    """What the writers ask before every write."""

    identity: str

    def is_leader(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class ElectionTimings:
    """kube-scheduler's defaults (``--leader-elect-lease-duration`` and friends), in seconds."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


def validate_timings(t: ElectionTimings) -> None:
    """Raises ``ValueError`` naming the rule a set of timings breaks (the library would exit)."""
    if t.retry_period < 1:
        raise ValueError(f"leader election retry period must be at least 1s, not {t.retry_period}")
    if t.renew_deadline <= _JITTER_FACTOR * t.retry_period:
        raise ValueError(
            f"leader election renew deadline ({t.renew_deadline}s) must be greater than "
            f"{_JITTER_FACTOR} x the retry period ({t.retry_period}s)"
        )
    if t.lease_duration != int(t.lease_duration):
        raise ValueError(
            f"leader election lease duration must be whole seconds (a Lease holds an integer), "
            f"not {t.lease_duration}"
        )
    if t.lease_duration <= t.renew_deadline:
        raise ValueError(
            f"leader election lease duration ({t.lease_duration}s) must be greater than the "
            f"renew deadline ({t.renew_deadline}s)"
        )


def new_identity() -> str:
    """Hostname plus a random suffix: two replicas on one host (or a restarted pod that kept
    its name) must not mistake each other's lease for their own."""
    suffix = "".join(random.choices(string.ascii_lowercase + string.digits, k=8))
    return f"{socket.gethostname()}_{suffix}"


class _Stopped(Exception):
    """Raised inside the library's loops to end them when the elector stops."""


class _TrackedLeaseLock(leaselock.LeaseLock):
    """The library's LeaseLock on our client, remembering when our own record was last written,
    and able to break the library's endless acquire loop when the elector stops."""

    def __init__(self, name: str, namespace: str, identity: str, coordination: Any) -> None:
        super().__init__(name, namespace, identity)  # type: ignore[no-untyped-call]
        self.api_instance = coordination
        self.stopping = threading.Event()
        self.last_renew: float | None = None  # time.monotonic() of our last successful write

    def get(self, name: str, namespace: str) -> Any:
        if self.stopping.is_set():
            raise _Stopped
        return super().get(name, namespace)  # type: ignore[no-untyped-call]

    def create(self, name: str, namespace: str, election_record: Any) -> bool:
        ok = bool(super().create(name, namespace, election_record))  # type: ignore[no-untyped-call]
        self._written(ok, election_record)
        return ok

    def update(self, name: str, namespace: str, updated_record: Any) -> bool:
        if self.stopping.is_set():
            raise _Stopped
        ok = bool(super().update(name, namespace, updated_record))  # type: ignore[no-untyped-call]
        self._written(ok, updated_record)
        return ok

    def _written(self, ok: bool, record: Any) -> None:
        if ok and record.holder_identity == self.identity:
            self.last_renew = time.monotonic()

    def release(self) -> None:
        """Give the lease up on a clean stop so another replica takes over at once (client-go's
        ``ReleaseOnCancel``): empty holder, a one-second duration."""
        try:
            lease = self.api_instance.read_namespaced_lease(self.name, self.namespace)
            if lease.spec is None or lease.spec.holder_identity != self.identity:
                return
            lease.spec.holder_identity = None
            lease.spec.lease_duration_seconds = 1
            self.api_instance.replace_namespaced_lease(self.name, self.namespace, lease)
            log.info("released leader lease %s/%s", self.namespace, self.name)
        except Exception as exc:  # the lease then simply expires
            log.warning("could not release leader lease %s/%s: %s", self.namespace, self.name, exc)


class LeaderElector:
    """Runs the election in a daemon thread for as long as the process lives.

    ``on_start`` / ``on_stop`` are called from the election thread when this replica gains and
    loses the lease; they must return quickly (start a thread of their own for long work).
    """

    def __init__(
        self,
        api_client: Any,
        *,
        lease_name: str,
        lease_namespace: str,
        timings: ElectionTimings | None = None,
        identity: str | None = None,
        on_start: Callable[[], None] | None = None,
        on_stop: Callable[[], None] | None = None,
        registry: CollectorRegistry | None = None,
        coordination_api: Any = None,
    ) -> None:
        """``coordination_api`` replaces the ``CoordinationV1Api`` built on ``api_client``."""
        self.timings = timings or ElectionTimings()
        validate_timings(self.timings)
        if not lease_name or not lease_namespace:
            raise ValueError("leader election needs a lease name and a lease namespace")
        self.identity = identity or new_identity()
        self.lease_name = lease_name
        self.lease_namespace = lease_namespace
        self._on_start = on_start
        self._on_stop = on_stop
        coordination = coordination_api or k8s_client.CoordinationV1Api(api_client)
        self._lock = _TrackedLeaseLock(lease_name, lease_namespace, self.identity, coordination)
        self._leading = False
        self._thread: threading.Thread | None = None
        self.gauge = Gauge(
            "queue_extender_leader",
            "1 while this replica holds the leader lease (only the leader writes to the API).",
            registry=registry,
        )
        self.gauge.set_function(lambda: 1.0 if self.is_leader() else 0.0)

    def is_leader(self) -> bool:
        last = self._lock.last_renew
        return (
            self._leading
            and last is not None
            and time.monotonic() - last < self.timings.renew_deadline
        )

    def start(self) -> LeaderElector:
        if self._thread is not None:
            raise RuntimeError("leader elector already started")
        self._thread = threading.Thread(
            target=self._run, name=f"leader-election-{self.lease_name}", daemon=True
        )
        self._thread.start()
        log.info(
            "leader election on lease %s/%s as %s",
            self.lease_namespace,
            self.lease_name,
            self.identity,
        )
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Leave the election; a leader releases the lease so the next one need not wait."""
        was_leading = self._leading
        self._lock.stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if was_leading:
            self._lock.release()

    def _config(self) -> Any:
        t = self.timings
        return electionconfig.Config(  # type: ignore[no-untyped-call]
            self._lock,
            lease_duration=int(t.lease_duration),
            renew_deadline=t.renew_deadline,
            retry_period=t.retry_period,
            onstarted_leading=self._started,
            onstopped_leading=self._stopped,
        )

    def _run(self) -> None:
        while not self._lock.stopping.is_set():
            try:
                election = leaderelection.LeaderElection(self._config())  # type: ignore[no-untyped-call]
                election.run()  # type: ignore[no-untyped-call]
            except _Stopped:
                break
            except Exception as exc:  # transport errors escape the library: retry after a period
                log.warning(
                    "leader election on %s/%s failed (%s); retrying",
                    self.lease_namespace,
                    self.lease_name,
                    exc,
                )
            finally:
                if self._leading:
                    self._stopped()
            # Lost the lease (or failed): wait a period, then run for it again.
            self._lock.stopping.wait(self.timings.retry_period)

    def _started(self) -> None:
        self._leading = True
        log.info(
            "%s became the leader (lease %s/%s)",
            self.identity,
            self.lease_namespace,
            self.lease_name,
        )
        if self._on_start is not None:
            self._on_start()

    def _stopped(self) -> None:
        if not self._leading:
            return
        self._leading = False
        log.warning("%s is no longer the leader", self.identity)
        if self._on_stop is not None:
            self._on_stop()


class AlwaysLeader:
    """``--leader-elect=false``: a single replica that always writes."""

    def __init__(
        self, identity: str | None = None, registry: CollectorRegistry | None = None
    ) -> None:
        self.identity = identity or new_identity()
        self.gauge = Gauge(
            "queue_extender_leader",
            "1 while this replica holds the leader lease (only the leader writes to the API).",
            registry=registry,
        )
        self.gauge.set(1)

    def is_leader(self) -> bool:
        return True

    def start(self) -> AlwaysLeader:
        return self

    def stop(self, timeout: float = 5.0) -> None:
        return None


SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def pod_namespace(path: str = SERVICE_ACCOUNT_NAMESPACE) -> str:
    """The namespace this pod runs in (its service account's), else ``default``."""
    try:
        with open(path, encoding="utf-8") as f:
            namespace = f.read().strip()
    except OSError:
        return "default"
    return namespace or "default"
