"""binpack: prefer the node the pod fills best (``plugin.py``), with its arguments read once
into ``BinpackArgs`` (``args.py``)."""

from scheduler_core.plugins.binpack.args import (
    BINPACK_CPU,
    BINPACK_MEMORY,
    BINPACK_RESOURCES,
    BINPACK_RESOURCES_PREFIX,
    BINPACK_WEIGHT,
    BinpackArgs,
)
from scheduler_core.plugins.binpack.plugin import (
    BinpackPlugin,
    binpacking_scores,
    weighted_requests,
)

__all__ = [
    "BINPACK_CPU",
    "BINPACK_MEMORY",
    "BINPACK_RESOURCES",
    "BINPACK_RESOURCES_PREFIX",
    "BINPACK_WEIGHT",
    "BinpackArgs",
    "BinpackPlugin",
    "binpacking_scores",
    "weighted_requests",
]
