"""capacity's arguments: ``ancestorReclaimLevel``, how many levels of a reclaimer's and a
victim's ancestors (in a queue hierarchy) take part in deciding a reclaim."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from scheduler_core.framework.arguments import Arguments

log = logging.getLogger("scheduler_core.plugins.capacity")

ANCESTOR_RECLAIM_LEVEL = "ancestorReclaimLevel"


@dataclass(frozen=True, slots=True)
class CapacityArgs:
    """``ancestor_reclaim_level``: 0 (the default) judges a reclaim by the two leaf queues
    alone; n > 0 also lets an ancestor up to n levels above a reclaiming leaf grant the
    reclaim, and makes a victim's ancestors up to n levels agree to it."""

    ancestor_reclaim_level: int = 0

    @classmethod
    def parse(cls, arguments: Arguments) -> CapacityArgs:
        """Volcano's rules: a value that is not a whole number leaves the default, a
        negative one is said and taken as 0 (never refused)."""
        level = arguments.get_int(ANCESTOR_RECLAIM_LEVEL, 0)
        if level < 0:
            log.warning(
                "%s should be non-negative, got %d. Falling back to 0.",
                ANCESTOR_RECLAIM_LEVEL,
                level,
            )
            level = 0
        return cls(ancestor_reclaim_level=level)
