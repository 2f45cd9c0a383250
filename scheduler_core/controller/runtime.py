"""The controller's shared parts: one REST client, one leadership, one event recorder, one
metrics registry. The loops that write (status write-back, reclaim) are built on top of it and
ask :meth:`Controller.is_leader` before every write; the eviction path also reads
:meth:`Controller.leadership_valid_for`, the margin for which the lease is still surely ours.

Leadership comes in two modes (``leader_elect_mode``): ``standalone`` elects through the
extender's own Lease; ``sidecar`` follows the Lease of the kube-scheduler in the same pod, so
the replica that decides, reserves and reports is the one answering the active scheduler."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from .events import EventRecorder
from .leader import (
    AlwaysLeader,
    ElectionTimings,
    LeaderElectMode,
    LeaderElector,
    SchedulerLeaseFollower,
    new_identity,
)
from .rest import RestClient

log = logging.getLogger(__name__)

DEFAULT_LEASE_NAME = "kube-queue-extender"
#: kube-scheduler's own defaults (``leaderElection.resourceName`` / ``resourceNamespace``).
DEFAULT_SCHEDULER_LEASE_NAME = "kube-scheduler"
DEFAULT_SCHEDULER_LEASE_NAMESPACE = "kube-system"


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    leader_elect: bool = True
    write_status: bool = True
    lease_name: str = DEFAULT_LEASE_NAME
    lease_namespace: str = "default"
    timings: ElectionTimings = field(default_factory=ElectionTimings)
    event_qps: float = 5.0
    event_burst: int = 25
    #: ``standalone``: our own Lease; ``sidecar``: lead while the scheduler beside us does.
    leader_elect_mode: LeaderElectMode = "standalone"
    scheduler_lease_name: str = DEFAULT_SCHEDULER_LEASE_NAME
    scheduler_lease_namespace: str = DEFAULT_SCHEDULER_LEASE_NAMESPACE
    #: The host name kube-scheduler puts in its holder identity (None: this host's name).
    hostname: str | None = None


class Controller:
    """Owns the election and the recorder; tells the write-back loops when they lead."""

    def __init__(
        self,
        api_client: Any,
        options: ControllerOptions | None = None,
        *,
        registry: CollectorRegistry | None = None,
        identity: str | None = None,
    ) -> None:
        self.options = options or ControllerOptions()
        self.registry = registry if registry is not None else CollectorRegistry()
        self.api_client = api_client
        self.rest = RestClient(api_client, self.registry)
        self._on_start: list[Callable[[], None]] = []
        self._on_stop: list[Callable[[], None]] = []
        identity = identity or new_identity(self.options.hostname)
        self.leadership: LeaderElector | SchedulerLeaseFollower | AlwaysLeader
        if self.options.leader_elect and self.options.leader_elect_mode == "sidecar":
            self.leadership = SchedulerLeaseFollower(
                api_client,
                lease_name=self.options.scheduler_lease_name,
                lease_namespace=self.options.scheduler_lease_namespace,
                timings=self.options.timings,
                hostname=self.options.hostname,
                identity=identity,
                on_start=self._started,
                on_stop=self._stopped,
                registry=self.registry,
            )
        elif self.options.leader_elect:
            self.leadership = LeaderElector(
                api_client,
                lease_name=self.options.lease_name,
                lease_namespace=self.options.lease_namespace,
                timings=self.options.timings,
                identity=identity,
                on_start=self._started,
                on_stop=self._stopped,
                registry=self.registry,
            )
        else:
            self.leadership = AlwaysLeader(identity, registry=self.registry)
        self.identity = identity
        self.recorder = EventRecorder(
            self.rest,
            identity,
            self.is_leader,
            registry=self.registry,
            qps=self.options.event_qps,
            burst=self.options.event_burst,
        )

    def is_leader(self) -> bool:
        return self.leadership.is_leader()

    def leadership_valid_for(self) -> float:
        """Seconds (monotonic) for which this process is still guaranteed to lead; 0.0 when it
        does not. A write that must not land under another leader (an eviction) gets a request
        deadline shorter than this, and asks again after any retry.

        Standalone: the lease duration, minus the time since the send of our last successful
        renew, minus the safety margin (lease duration - renew deadline). Sidecar: the same
        from the followed scheduler Lease, counted from a lower bound of when *we* saw it
        renewed. Both on this process's monotonic clock, never by comparing wall clocks.
        ``inf`` with ``--leader-elect=false`` (a single replica: nothing else writes)."""
        return self.leadership.leadership_valid_for()

    def server_now(self) -> float:
        """The API server's wall clock as this process can tell it (from the Date header of
        its last answer): what minimum runtimes are judged on."""
        return self.rest.clock.now()

    def on_leading(
        self, start: Callable[[], None] | None = None, stop: Callable[[], None] | None = None
    ) -> None:
        """Callbacks run (from the election thread) when this replica gains / loses the lease.
        They must return quickly. With ``--leader-elect=false`` ``start`` runs at start-up."""
        if start is not None:
            self._on_start.append(start)
        if stop is not None:
            self._on_stop.append(stop)

    def start(self) -> Controller:
        self.recorder.start()
        self.leadership.start()
        if isinstance(self.leadership, AlwaysLeader):
            self._started()
        return self

    def resign(self) -> None:
        """Stop leading now, before anything else stops: every writer asks ``is_leader()``
        before each write, so none lands once a stop has begun. The lease is given back by
        :meth:`stop`, after the writers have stopped. Safe to call from a signal handler."""
        self.leadership.resign()

    def stop(self) -> None:
        """Stop leading (the stop callbacks end the writers), give a held lease back, then
        stop the recorder: the successor leads within one retry period."""
        self.leadership.stop()
        self.recorder.stop()

    def _started(self) -> None:
        for callback in self._on_start:
            try:
                callback()
            except Exception:
                log.exception("a start-leading callback failed")

    def _stopped(self) -> None:
        for callback in self._on_stop:
            try:
                callback()
            except Exception:
                log.exception("a stop-leading callback failed")
