"""QueueInfo: a Volcano Queue as the scheduler reads it."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler_core.api.resource import Resource
from scheduler_core.api.types import QueueState
from scheduler_core.api.usage_history import UsageRecord

ROOT_QUEUE = "root"
DEFAULT_QUEUE = "default"


@dataclass(slots=True)
class QueueInfo:
    """The spec fields the proportion and capacity plugins read.

    Resource lists are ``None`` when the spec leaves them out or empty: Volcano treats an
    empty ``capability`` as "no limit" and an empty ``guarantee`` as "nothing reserved".
    """

    name: str
    weight: int = 1
    capability: Resource | None = None
    guarantee: Resource | None = None
    deserved: Resource | None = None
    reclaimable_spec: bool | None = None
    priority: int = 0
    parent: str = ""
    state: QueueState = QueueState.OPEN
    hierarchy: str = ""
    hierarchy_weights: str = ""
    creation_timestamp: str = ""
    implicit: bool = False
    #: Default minimum runtime (seconds) of this queue's pods before reclaim may take them.
    min_runtime: float | None = None
    #: The decayed usage its annotation carries over from an earlier process (None: none),
    #: or why that annotation cannot be taken up (``usage_record_error``).
    usage_record: UsageRecord | None = None
    usage_record_error: str = ""

    @property
    def uid(self) -> str:
        return self.name

    def reclaimable(self) -> bool:
        """Unset means reclaimable: a queue must opt out of lending its resources."""
        return True if self.reclaimable_spec is None else self.reclaimable_spec

    def is_open(self) -> bool:
        return self.state == QueueState.OPEN
