"""The verdict of ``cannot_help``: which kind of "no", and the sentence naming what is
missing. Apart from the judging so that the session can hold verdicts without importing
what judges them."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

#: The event reason on a waiting pod that no eviction can help.
CANNOT_HELP_REASON: Final = "ReclaimCannotHelp"


class Kind(enum.Enum):
    """What is missing. The value is stable: logs, the explain API and tests read it."""

    CAPABILITY = "capability"
    PLACEMENT = "placement"
    VOLUMES = "volumes"
    DEVICES = "devices"
    RESOURCES = "resources"
    NODES = "nodes"
    #: A gang with a network topology request: no single domain of an allowed tier can hold
    #: every member not placed yet, even with the victims the queue rules allow.
    TOPOLOGY = "topology"


@dataclass(frozen=True, slots=True)
class CannotHelp:
    """The verdict: which kind of "no", and the sentence naming what is missing."""

    kind: Kind
    detail: str

    @property
    def note(self) -> str:
        """The event's note and the explain API's words (one sentence for both)."""
        return f"no eviction can help this pod: {self.detail}"
