"""The controller's shared parts: one REST client, one election, one event recorder, one
metrics registry. The loops that write (status write-back, reclaim) are built on top of it and
ask :meth:`Controller.is_leader` before every write."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from .events import EventRecorder
from .leader import AlwaysLeader, ElectionTimings, LeaderElector, new_identity
from .rest import RestClient

log = logging.getLogger(__name__)

DEFAULT_LEASE_NAME = "kube-queue-extender"


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    leader_elect: bool = True
    write_status: bool = True
    lease_name: str = DEFAULT_LEASE_NAME
    lease_namespace: str = "default"
    timings: ElectionTimings = field(default_factory=ElectionTimings)
    event_qps: float = 5.0
    event_burst: int = 25


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
        identity = identity or new_identity()
        self.leadership: LeaderElector | AlwaysLeader
        if self.options.leader_elect:
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
        """Monotonic seconds for which this replica is sure to still hold the lease; 0.0 when
        it does not lead, infinite without an election (``--leader-elect=false``).

        A write that must not land after another replica took over (an eviction) is sent only
        with a deadline within this margin. Counted from the last successful renew against
        the renew deadline, which is what :meth:`is_leader` judges: another replica cannot
        take the lease over before a whole lease duration has passed since it saw that renew,
        and the renew deadline is shorter than the lease duration by construction
        (``validate_timings``), so the difference absorbs the renew's own latency."""
        leadership = self.leadership
        if isinstance(leadership, AlwaysLeader):
            return math.inf
        if not leadership.is_leader():
            return 0.0
        last = leadership._lock.last_renew
        if last is None:
            return 0.0
        return max(0.0, leadership.timings.renew_deadline - (time.monotonic() - last))

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

    def stop(self) -> None:
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
