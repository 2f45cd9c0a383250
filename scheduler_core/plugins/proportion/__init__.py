"""proportion: weighted fair share between flat queues (Volcano's ``proportion`` plugin).

Each queue with work in the session is given a *deserved* share of the cluster by iterative
water-filling over the queue weights, bounded by its real capability and its request and
raised to its guarantee. Everything else follows from deserved: a queue at or above it is
overused (allocate skips it, reclaim may take from it), a task may only be allocated if the
queue stays within it on the dimensions the task asks for, and queues with the lowest
``allocated / deserved`` are served first.

The package: ``args`` (its arguments: none), ``fill`` (the deserved loop), ``memo`` (what it
remembers across sessions), ``adjusted`` (the loop on weights adjusted for past usage),
``hooks`` (the rules) and ``plugin`` (the session's records).
"""

from scheduler_core.plugins.proportion.adjusted import ADJUSTED_WEIGHT_SCALE
from scheduler_core.plugins.proportion.args import ProportionArgs
from scheduler_core.plugins.proportion.fill import MAX_DESERVED_PASSES, water_fill
from scheduler_core.plugins.proportion.memo import (
    MEMO_SLOT,
    USAGE_MEMO_SLOT,
    FillRecord,
    ProportionMemo,
    deserved_shares,
)
from scheduler_core.plugins.proportion.plugin import ProportionPlugin

__all__ = [
    "ADJUSTED_WEIGHT_SCALE",
    "MAX_DESERVED_PASSES",
    "MEMO_SLOT",
    "USAGE_MEMO_SLOT",
    "FillRecord",
    "ProportionArgs",
    "ProportionMemo",
    "ProportionPlugin",
    "deserved_shares",
    "water_fill",
]
