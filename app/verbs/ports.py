"""The port between the HTTP service and the scheduling engine.

The HTTP layer knows the engine only through `ExtenderBackend`; the engine adapter (owned
elsewhere) implements it. Keeping this contract to plain data means the service can be
tested with a scripted backend and the engine can be tested without HTTP.

Threading contract: the service calls every backend method on its event-loop thread, one
call at a time, so decisions are serialised exactly as kube-scheduler's scheduling cycle is.
A backend method must therefore never block on I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from app.telemetry.metrics import QueueMetrics
from scheduler_core.extender.decisions import FilterResult, NodeVictims
from scheduler_core.extender.prioritize import HostScores


class BadPodError(ValueError):
    """A pod the engine cannot read (a field it cannot parse): the caller's mistake, answered
    with HTTP 400 and the one-line message, not an engine failure."""


class ExtenderBackend(Protocol):
    """What the HTTP service needs from the engine.

    Pods arrive as the decoded Kubernetes JSON (`dict`), exactly as kube-scheduler sent them.
    The service never calls a verb for a pod the backend does not manage (`is_managed`
    false): it answers those with kube-scheduler-neutral pass-through itself.
    """

    def readiness(self) -> tuple[bool, str]:
        """(ready, reason); the reason is shown by /readyz while not ready."""
        ...

    def is_managed(self, pod: dict[str, Any]) -> bool: ...

    def decode_offered_names(self, data: bytes) -> tuple[str, ...] | None:
        """``data`` (the request's ``NodeNames``, a JSON array) decoded by the backend, when
        it can do better than plain decoding (names it knows, handed out as its own strings);
        None leaves the decoding to the service. Must not raise."""
        ...

    def filter(self, pod: dict[str, Any], node_names: Sequence[str]) -> FilterResult:
        """Passed nodes and a ``Status`` per rejected node, as the engine decided them; the
        service sends it as it is (after keeping it to the nodes asked). ``node_names`` is
        the request's own tuple, the same one for a list offered again: never changed."""
        ...

    def prioritize(self, pod: dict[str, Any], node_names: list[str]) -> HostScores:
        """A score per node in 0..10 (`MaxExtenderPriority`): ``node_names`` beside one int
        array, in the request's order (a node the backend cannot score gets 0), which the
        route encodes without a step per node. The route still checks both: an answer
        naming other nodes or holding a value out of range is clamped to the request."""
        ...

    def preempt(
        self, pod: dict[str, Any], candidates: dict[str, list[str]]
    ) -> dict[str, NodeVictims]:
        """candidates: node -> kube-scheduler's proposed victim UIDs (lists may be empty).

        Returns only the nodes that have a valid victim set.
        """
        ...

    def queue_metrics(self) -> list[QueueMetrics]: ...

    def explain(self, pod: dict[str, Any]) -> dict[str, Any]:
        """A JSON-able account of how the engine sees this pod (POST /debug/explain).

        Raises `BadPodError` for a pod the engine cannot read."""
        ...

    def debug_state(self) -> dict[str, Any]:
        """A JSON-able dump of queues and caches (GET /debug/queues)."""
        ...
