"""binpack: prefer the node the pod fills best (``plugin.py``), with its arguments (their keys
beside them) read once into ``BinpackArgs`` (``args.py``)."""

from scheduler_core.plugins.binpack.args import BINPACK_RESOURCES_PREFIX, BinpackArgs
from scheduler_core.plugins.binpack.plugin import BinpackPlugin

__all__ = ["BINPACK_RESOURCES_PREFIX", "BinpackArgs", "BinpackPlugin"]
