"""Pods that filter turned away, kept so that they can be sent back to kube-scheduler.

kube-scheduler parks a pod whose every node an extender rejected until some cluster event
it watches moves it back to its active queue (extenders have no queueing hints), or for up
to five minutes. The events that free a queue's share — a Queue's capability or weight
raised, a pod of another queue finishing whose departure kube-scheduler saw before we
did — may never come as such an event. So filter records every pod it rejects here, and
a watcher asks again whenever the cluster changes; a pod that would now pass is nudged
(an update of the pod itself, which kube-scheduler treats as a reason to retry).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: Rejections a change in the cluster can lift. A missing node or an unreadable pod cannot.
RETRYABLE_CODES = frozenset(
    {
        "queue-missing",
        "queue-closed",
        "podgroup-missing",
        "gang-invalid",
        "queue-capability",
        "queue-overused",
        "gang-unsatisfiable",
        "topology-no-domain",
    }
)


@dataclass(slots=True)
class ParkedPod:
    key: str
    pod: dict[str, Any]
    code: str
    since: float
    nudged_at: float = float("-inf")


class ParkedPods:
    """Rejected pods by key; bounded, oldest dropped first."""

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self._pods: dict[str, ParkedPod] = {}

    def __len__(self) -> int:
        return len(self._pods)

    def __iter__(self) -> Iterator[ParkedPod]:
        return iter(list(self._pods.values()))

    def park(self, key: str, pod: dict[str, Any], code: str, now: float) -> None:
        if code not in RETRYABLE_CODES:
            return
        previous = self._pods.pop(key, None)
        nudged_at = previous.nudged_at if previous is not None else float("-inf")
        since = previous.since if previous is not None else now
        self._pods[key] = ParkedPod(key, pod, code, since, nudged_at)
        while len(self._pods) > self.limit:
            del self._pods[next(iter(self._pods))]

    def unpark(self, key: str) -> None:
        self._pods.pop(key, None)
