"""The read-only questions the API, the status page and the CLI ask the engine.

Separate from ``ExtenderBackend`` so a backend that only answers the verbs (a test double)
still serves them; ``create_app`` adds the read-only API when the backend also implements
this. Every method but the second half of ``whatif`` runs on the event-loop thread, like the
verbs, because it reads the state they change; the second half, the what-if's session, runs
on a worker thread over a private copy so that the verbs never wait for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from scheduler_core.insight.explain import Explanation
from scheduler_core.insight.pending import PendingPage
from scheduler_core.insight.queues import QueueView
from scheduler_core.insight.topology import TopologyView
from scheduler_core.insight.whatif import WhatIfRequest, WhatIfResult


@dataclass(frozen=True, slots=True)
class RecentEviction:
    """An eviction something in the process made (the reclaim loop, once it exists)."""

    pod: str
    queue: str | None
    reason: str
    at: str


#: Where the status page reads the last evictions from (the reclaim loop's record; a process
#: without a loop has none, and the page says there is none to show).
RecentEvictionsProvider = Callable[[], Sequence[RecentEviction]]


@runtime_checkable
class InsightBackend(Protocol):
    def queues(self) -> list[QueueView]: ...

    def queue(self, name: str) -> QueueView:
        """Raises ``scheduler_core.insight.lookup.NotFoundError``."""
        ...

    def pending(self, queue: str, limit: int) -> PendingPage:
        """Raises ``NotFoundError``."""
        ...

    def explain_pod(self, namespace: str, name: str) -> Explanation:
        """Raises ``NotFoundError``."""
        ...

    def explain_podgroup(self, namespace: str, name: str) -> Explanation:
        """Raises ``NotFoundError``."""
        ...

    def topology(self) -> TopologyView: ...

    def whatif(self, request: WhatIfRequest) -> Callable[[], WhatIfResult]:
        """Reads what it needs now (raising ``WhatIfError`` for a bad request) and returns
        the dry run, which touches only a private copy and may run on another thread."""
        ...
