"""Who leads: our own ``coordination.k8s.io/v1`` Lease, or the Lease of the kube-scheduler we
sit beside.

Two modes:

* **standalone** (:class:`LeaderElector`): the extender elects itself through its own Lease,
  the same protocol as client-go's leader election (acquire an empty or expired lease, renew
  it every retry period, optimistic concurrency on the resourceVersion, give it back on a clean
  stop as ``ReleaseOnCancel`` does);
* **sidecar** (:class:`SchedulerLeaseFollower`): the extender leads exactly while the
  kube-scheduler of its own pod leads. It only reads that scheduler's Lease and compares the
  holder identity, which kube-scheduler builds as ``hostname + "_" + uuid``, with its own host
  name (the containers of a pod share it). The decisions (the loop's reservations, the status,
  the events) are then made by the process that answers the active scheduler's verbs.

Why not the ``kubernetes`` client's ``leaderelection`` module: it judges a lease's expiry
with the wall clock (``time.time()`` compared with the time it observed the record), so a
clock step forward on a follower makes it take a lease the leader is still renewing, while
the leader keeps counting itself leader. Here every duration is measured on this process's
monotonic clock (``time.monotonic()``), and only intervals are compared, never two hosts'
wall clocks: a follower takes over once it has seen no change of the record for the lease
duration, counted from when *it* observed the last change; a leader counts its lease from
the moment it *sent* its last successful renew (the write landed after that, and every
follower saw it later still). The wall clock only fills the Lease's informational
``acquireTime`` / ``renewTime``.

:meth:`leadership_valid_for` is the fencing margin the eviction path reads: the seconds for
which this process is still guaranteed to hold the lease (the lease duration, minus the time
since the last renew judged as above, minus a safety margin of lease duration - renew
deadline), 0.0 when not leading. ``is_leader()`` is ``leadership_valid_for() > 0``, so a
replica cut off from the API server stops writing a whole safety margin before another one
could take the lease over.
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
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, Required, TypedDict, Unpack

from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry, Gauge

from scheduler_core.logutil import v

log = logging.getLogger(__name__)

#: client-go's jitter factor: the renew deadline must exceed this many retry periods.
_JITTER_FACTOR = 1.2

LeaderElectMode = Literal["standalone", "sidecar"]


class Leadership(Protocol):
    """What the writers ask before every write."""

    identity: str

    def is_leader(self) -> bool: ...

    def leadership_valid_for(self) -> float: ...


@dataclass(frozen=True, slots=True)
class ElectionTimings:
    """kube-scheduler's defaults (``--leader-elect-lease-duration`` and friends), in seconds."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    @property
    def safety_margin(self) -> float:
        """What :meth:`leadership_valid_for` keeps back from the lease duration: the slack
        between giving up (renew deadline) and a follower's takeover (lease duration)."""
        return self.lease_duration - self.renew_deadline


def validate_timings(t: ElectionTimings) -> None:
    """Raises ``ValueError`` naming the rule a set of timings breaks."""
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


def new_identity(hostname: str | None = None) -> str:
    """Hostname plus a random suffix: two replicas on one host (or a restarted pod that kept
    its name) must not mistake each other's lease for their own."""
    suffix = "".join(random.choices(string.ascii_lowercase + string.digits, k=8))
    return f"{hostname or socket.gethostname()}_{suffix}"


def holder_hostname(holder: str) -> str:
    """The host part of a kube-scheduler holder identity (``hostname_uuid``; a host name has no
    underscore, a UUID neither)."""
    return holder.rsplit("_", 1)[0] if "_" in holder else holder


def _wall_now() -> datetime:
    return datetime.now(UTC)


def _leader_gauge(registry: CollectorRegistry | None) -> Gauge:
    return Gauge(
        "queue_extender_leader",
        "1 while this replica leads (only the leader runs the reclaim loop and the status writer).",
        registry=registry,
    )


def _record_of(spec: Any) -> tuple[Any, ...]:
    """What changes on every write of a Lease: a follower compares these, never the times."""
    return (
        spec.holder_identity or "",
        spec.renew_time,
        spec.acquire_time,
        spec.lease_transitions,
        spec.lease_duration_seconds,
    )


class LeaseElection:
    """One replica's side of the election protocol, one step at a time (no thread, no sleep):
    :class:`LeaderElector` drives it, tests drive it with fake clocks."""

    def __init__(
        self,
        coordination: Any,
        *,
        name: str,
        namespace: str,
        identity: str,
        timings: ElectionTimings,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = _wall_now,
    ) -> None:
        self.coordination = coordination
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.timings = timings
        self._monotonic = monotonic
        self._wall = wall
        #: Seconds a call may take: a hung call must not hold the election (or an exit) up;
        #: the margin runs out on its own meanwhile.
        self.request_timeout = timings.retry_period
        self._observed: tuple[Any, ...] | None = None
        self._observed_at = 0.0  # monotonic time we first received the observed record
        #: Monotonic time at which the request of our last successful write was sent.
        self.renewed_at: float | None = None
        #: Whether we ever wrote the lease: only then can it name us, and need giving back.
        self.ever_held = False

    def leadership_valid_for(self) -> float:
        if self.renewed_at is None:
            return 0.0
        elapsed = self._monotonic() - self.renewed_at
        return max(0.0, self.timings.lease_duration - elapsed - self.timings.safety_margin)

    def forget(self) -> None:
        """Count ourselves leader no more (a stop, or renewals failed past the deadline)."""
        self.renewed_at = None

    def try_acquire_or_renew(self) -> bool:
        """One round: True when this replica holds the lease after it. Raises what the API
        raises besides a lost race (a 409, which is False)."""
        sent = self._monotonic()
        try:
            lease = self.coordination.read_namespaced_lease(
                self.name, self.namespace, _request_timeout=self.request_timeout
            )
        except ApiException as exc:
            if exc.status != 404:
                raise
            return self._create(sent)
        received = self._monotonic()
        spec = lease.spec or k8s_client.V1LeaseSpec()
        lease.spec = spec
        record = _record_of(spec)
        if record != self._observed:
            self._observed, self._observed_at = record, received
        holder = spec.holder_identity or ""
        if holder and holder != self.identity:
            duration = spec.lease_duration_seconds or int(self.timings.lease_duration)
            if received - self._observed_at < duration:
                return False  # held, and renewed within a lease duration of our watching
        now = self._wall()
        if holder != self.identity:
            spec.acquire_time = now
            spec.lease_transitions = (spec.lease_transitions or 0) + 1
        spec.holder_identity = self.identity
        spec.lease_duration_seconds = int(self.timings.lease_duration)
        spec.renew_time = now
        try:
            written = self.coordination.replace_namespaced_lease(
                self.name, self.namespace, lease, _request_timeout=self.request_timeout
            )
        except ApiException as exc:
            if exc.status == 409:
                return False  # another replica wrote first
            raise
        self._wrote(sent, written)
        return True

    def _create(self, sent: float) -> bool:
        now = self._wall()
        body = k8s_client.V1Lease(
            metadata=k8s_client.V1ObjectMeta(name=self.name, namespace=self.namespace),
            spec=k8s_client.V1LeaseSpec(
                holder_identity=self.identity,
                lease_duration_seconds=int(self.timings.lease_duration),
                acquire_time=now,
                renew_time=now,
                lease_transitions=0,
            ),
        )
        try:
            written = self.coordination.create_namespaced_lease(
                self.namespace, body, _request_timeout=self.request_timeout
            )
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        self._wrote(sent, written)
        return True

    def _wrote(self, sent: float, written: Any) -> None:
        self.renewed_at = sent
        self.ever_held = True
        if written is not None and getattr(written, "spec", None) is not None:
            self._observed, self._observed_at = _record_of(written.spec), self._monotonic()

    def release(self) -> bool:
        """Give the lease up (client-go's ``ReleaseOnCancel``: no holder, one-second duration)
        so a follower takes it at its next retry. Stops counting ourselves leader first."""
        self.forget()
        if not self.ever_held:
            return False
        try:
            lease = self.coordination.read_namespaced_lease(
                self.name, self.namespace, _request_timeout=self.request_timeout
            )
            spec = lease.spec
            if spec is None or spec.holder_identity != self.identity:
                return False
            now = self._wall()
            spec.holder_identity = None
            spec.lease_duration_seconds = 1
            spec.renew_time = now
            spec.acquire_time = now
            self.coordination.replace_namespaced_lease(
                self.name, self.namespace, lease, _request_timeout=self.request_timeout
            )
        except Exception as exc:  # the lease then simply expires
            log.warning("could not release leader lease %s/%s: %s", self.namespace, self.name, exc)
            return False
        log.info("released leader lease %s/%s", self.namespace, self.name)
        return True


def _checked(
    timings: ElectionTimings | None, lease_name: str, lease_namespace: str, what: str
) -> ElectionTimings:
    """The timings to use (validated), once the lease is named; raises ValueError."""
    chosen = timings or ElectionTimings()
    validate_timings(chosen)
    if not lease_name or not lease_namespace:
        raise ValueError(f"{what} needs a lease name and a lease namespace")
    return chosen


class LeaseWatch(TypedDict, total=False):
    """How both kinds of leadership are built, beside the API client: the Lease, the
    timings, who we are, the start / stop callbacks, the gauge's registry, and the doubles a
    test puts in (``coordination_api`` replaces the ``CoordinationV1Api`` built on the
    client; ``monotonic`` is the clock leadership is judged on)."""

    lease_name: Required[str]
    lease_namespace: Required[str]
    timings: ElectionTimings | None
    identity: str | None
    on_start: Callable[[], None] | None
    on_stop: Callable[[], None] | None
    registry: CollectorRegistry | None
    coordination_api: Any
    monotonic: Callable[[], float]


class _Transitions:
    """What both kinds of leadership share: the lease they read, their timings, the start /
    stop callbacks, the thread that polls, and the gauge. ``leadership_valid_for`` is each
    kind's own."""

    def __init__(
        self, api_client: Any, what: str, hostname: str | None, options: LeaseWatch
    ) -> None:
        """Validates the timings and the lease's name (ValueError naming `what`); the identity
        defaults to `hostname` (this host when None) with a random suffix."""
        self.lease_name = options["lease_name"]
        self.lease_namespace = options["lease_namespace"]
        self.timings = _checked(options.get("timings"), self.lease_name, self.lease_namespace, what)
        self.identity = options.get("identity") or new_identity(hostname)
        self._on_start = options.get("on_start")
        self._on_stop = options.get("on_stop")
        self._coordination: Any = options.get("coordination_api") or k8s_client.CoordinationV1Api(
            api_client
        )
        self._monotonic = options.get("monotonic", time.monotonic)
        self._leading = False
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.gauge = _leader_gauge(options.get("registry"))
        self.gauge.set_function(lambda: 1.0 if self.is_leader() else 0.0)

    def leadership_valid_for(self) -> float:
        raise NotImplementedError

    def is_leader(self) -> bool:
        return self.leadership_valid_for() > 0.0

    def _start_thread(self, run: Callable[[], None], name: str) -> None:
        if self._thread is not None:
            raise RuntimeError(f"{name} already started")
        self._thread = threading.Thread(target=run, name=f"{name}-{self.lease_name}", daemon=True)
        self._thread.start()

    def _join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _became(self, leading: bool, what: str) -> None:
        if leading == self._leading:
            return
        self._leading = leading
        if leading:
            log.info("%s became the leader (%s)", self.identity, what)
            callback = self._on_start
        else:
            log.warning("%s is no longer the leader (%s)", self.identity, what)
            callback = self._on_stop
        if callback is not None:
            try:
                callback()
            except Exception:
                log.exception("a leadership callback failed")


class LeaderElector(_Transitions):
    """Standalone mode: runs the election on our own Lease in a daemon thread.

    ``on_start`` / ``on_stop`` are called from the election thread when this replica gains and
    loses the lease; they must return quickly (start a thread of their own for long work).
    """

    def __init__(
        self,
        api_client: Any,
        *,
        wall: Callable[[], datetime] = _wall_now,
        **options: Unpack[LeaseWatch],
    ) -> None:
        """``wall`` is the clock the lease's times are written with (a test's fake one)."""
        super().__init__(api_client, "leader election", None, options)
        self.election = LeaseElection(
            self._coordination,
            name=self.lease_name,
            namespace=self.lease_namespace,
            identity=self.identity,
            timings=self.timings,
            monotonic=self._monotonic,
            wall=wall,
        )

    def leadership_valid_for(self) -> float:
        if self._stopping.is_set() or not self._leading:
            return 0.0
        return self.election.leadership_valid_for()

    def step(self) -> None:
        """One round of the election: acquire or renew, then tell the callbacks of a change."""
        try:
            self.election.try_acquire_or_renew()
        except Exception as exc:  # a dead link: the margin runs out by itself
            log.warning(
                "leader election on %s/%s failed: %s", self.lease_namespace, self.lease_name, exc
            )
        if self._stopping.is_set():  # resigned while this round was under way
            self.election.forget()
            return
        valid = self.election.leadership_valid_for() > 0.0
        if not valid:
            self.election.forget()
        log.log(v(4), "lease %s/%s: leading=%s", self.lease_namespace, self.lease_name, valid)
        self._became(valid, f"lease {self.lease_namespace}/{self.lease_name}")

    def start(self) -> LeaderElector:
        self._start_thread(self._run, "leader-election")
        log.info(
            "leader election on lease %s/%s as %s",
            self.lease_namespace,
            self.lease_name,
            self.identity,
        )
        return self

    def resign(self) -> None:
        """Stop counting ourselves leader now, keeping the lease (a stop has begun: the
        writers stop before :meth:`stop` gives the lease back). Safe in a signal handler."""
        self._stopping.set()
        self.election.forget()
        self._became(False, "stopping")

    def stop(self, timeout: float = 5.0) -> None:
        """Leave the election: stop counting ourselves leader (the writers stop), then give
        the lease back so the next replica takes over at its next retry, not a lease later."""
        self.resign()
        self._join(timeout)
        self.election.forget()  # a step that was under way when we resigned
        self._became(False, "stopping")
        self.election.release()  # gives back only a lease that names us

    def _run(self) -> None:
        while not self._stopping.is_set():
            self.step()
            # A follower polls a little irregularly so two of them do not always collide.
            jitter = 0.0 if self._leading else random.uniform(0.0, 0.1)
            self._stopping.wait(self.timings.retry_period * (1.0 + jitter))


class SchedulerLeaseFollower(_Transitions):
    """Sidecar mode: leads while the kube-scheduler of this pod holds its Lease, freshly.

    Every poll reads the scheduler's Lease. A record that differs from the last one read means
    the scheduler wrote it after that last read was sent: that send time (our monotonic clock)
    is a lower bound of the renew, and the lease stays this scheduler's at least a lease
    duration after it. On first sight the renew's age is unknown, so we lead only from the
    first renew we watch happen.
    """

    def __init__(
        self, api_client: Any, *, hostname: str | None = None, **options: Unpack[LeaseWatch]
    ) -> None:
        """``hostname`` is this pod's host: we lead while the holder's identity names it."""
        self.hostname = hostname or socket.gethostname()
        super().__init__(api_client, "sidecar leadership", self.hostname, options)
        self._record: tuple[Any, ...] | None = None
        self._last_read_sent: float | None = None
        self._renew_floor: float | None = None  # lower bound of the last renew we watched
        self._duration = self.timings.lease_duration
        self._ours = False
        self.holder = ""

    @property
    def poll_period(self) -> float:
        """Half the retry period: the renew's lower bound lags by at most one poll."""
        return max(0.25, self.timings.retry_period / 2)

    @property
    def safety_margin(self) -> float:
        """The followed lease's duration times our timings' share of slack (a third with
        kube-scheduler's 15/10 s): a scheduler run with shorter timings than our flags still
        leaves us a margin in proportion."""
        return self._duration * self.timings.safety_margin / self.timings.lease_duration

    def leadership_valid_for(self) -> float:
        if self._stopping.is_set() or not self._ours or self._renew_floor is None:
            return 0.0
        elapsed = self._monotonic() - self._renew_floor
        return max(0.0, self._duration - elapsed - self.safety_margin)

    def step(self) -> None:
        """One poll of the scheduler's Lease, then tell the callbacks of a change."""
        sent = self._monotonic()
        try:
            lease = self._coordination.read_namespaced_lease(
                self.lease_name, self.lease_namespace, _request_timeout=self.poll_period
            )
        except ApiException as exc:
            if exc.status == 404:
                self._observe(sent, None)
            else:
                log.warning(
                    "reading kube-scheduler's lease %s/%s failed: %s",
                    self.lease_namespace,
                    self.lease_name,
                    exc,
                )
        except Exception as exc:
            log.warning(
                "reading kube-scheduler's lease %s/%s failed: %s",
                self.lease_namespace,
                self.lease_name,
                exc,
            )
        else:
            self._observe(sent, lease.spec)
        self._became(
            self.is_leader(),
            f"kube-scheduler lease {self.lease_namespace}/{self.lease_name} "
            f"held by {self.holder or 'nobody'}",
        )

    def _observe(self, sent: float, spec: Any) -> None:
        record = _record_of(spec) if spec is not None else None
        if record != self._record:
            # Written after our previous read was served, so after it was sent.
            self._renew_floor = self._last_read_sent
            self._record = record
        self._last_read_sent = sent
        self.holder = (spec.holder_identity or "") if spec is not None else ""
        self._ours = bool(self.holder) and holder_hostname(self.holder) == self.hostname
        if spec is not None and spec.lease_duration_seconds:
            self._duration = float(spec.lease_duration_seconds)

    def start(self) -> SchedulerLeaseFollower:
        self._start_thread(self._run, "scheduler-lease")
        log.info(
            "leading while kube-scheduler holds lease %s/%s as host %s",
            self.lease_namespace,
            self.lease_name,
            self.hostname,
        )
        return self

    def resign(self) -> None:
        """Stop leading now (kube-scheduler gives its own lease back when it stops)."""
        self._stopping.set()
        self._became(False, "stopping")

    def stop(self, timeout: float = 5.0) -> None:
        self.resign()
        self._join(timeout)

    def _run(self) -> None:
        while not self._stopping.is_set():
            self.step()
            self._stopping.wait(self.poll_period)


class AlwaysLeader:
    """``--leader-elect=false``: a single replica that always writes."""

    def __init__(
        self, identity: str | None = None, registry: CollectorRegistry | None = None
    ) -> None:
        self.identity = identity or new_identity()
        self._stopped = False
        self.gauge = _leader_gauge(registry)
        self.gauge.set_function(lambda: 1.0 if self.is_leader() else 0.0)

    def is_leader(self) -> bool:
        return not self._stopped

    def leadership_valid_for(self) -> float:
        """Unbounded while running: nothing else may write."""
        return float("inf") if not self._stopped else 0.0

    def start(self) -> AlwaysLeader:
        return self

    def resign(self) -> None:
        self._stopped = True

    def stop(self, timeout: float = 5.0) -> None:
        self._stopped = True


SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def pod_namespace(path: str = SERVICE_ACCOUNT_NAMESPACE) -> str:
    """The namespace this pod runs in (its service account's), else ``default``."""
    try:
        with open(path, encoding="utf-8") as f:
            namespace = f.read().strip()
    except OSError:
        return "default"
    return namespace or "default"
