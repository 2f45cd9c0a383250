"""The leader tells, on each refused HyperNode, why the network topology was refused.

The cache refuses a tree that does not hold (a cycle, a node in two domains of one tier...)
and keeps serving the last good one: placement goes on, so nothing else would show a person
that their edit was not taken. Each replica logs the refusal and counts it; the leader alone
writes a Warning event on each offending HyperNode (``kubectl describe hypernode`` shows it),
once per refusal: the same refusal read again is not a new event, a new one is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from .events import WARNING, ObjectRef
from .periodic import Periodic
from .runtime import Controller

log = logging.getLogger(__name__)

HYPERNODE_API: Final = "topology.volcano.sh/v1alpha1"
#: The event reason on a HyperNode whose tree was refused.
REFUSED_REASON: Final = "TopologyRefused"


class TopologyReporter:
    """Every ``tick`` seconds, on the leader: ``refusals`` hands over (and forgets) the
    HyperNodes of a new refusal, each with its sentence; each gets a Warning event. A
    replica that does not lead leaves them for when it does."""

    def __init__(
        self,
        controller: Controller,
        refusals: Callable[[], dict[str, str]],
        *,
        tick: float = 2.0,
    ) -> None:
        self._controller = controller
        self._recorder = controller.recorder
        self._refusals = refusals
        self._worker = Periodic("topology-report", tick, self.tick, what="topology refusal report")

    def start(self) -> TopologyReporter:
        self._worker.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._worker.stop(timeout)

    def tick(self) -> None:
        if not self._controller.is_leader():
            return
        for name, reason in sorted(self._refusals().items()):
            self._recorder.record(
                ObjectRef("HyperNode", name, api_version=HYPERNODE_API),
                WARNING,
                REFUSED_REASON,
                f"HyperNode {name}: {reason}; the network topology is refused and the last "
                "good one keeps serving",
                action="BuildTopology",
            )
