"""The records' errors that subclass a built-in exception other than ``ValueError``, in a
module of their own: mypyc, which the engine's records are meant to be compiled with (see
docs/performance.md, Known gaps), cannot compile a class that subclasses such a type, and
this module can stay interpreted beside compiled records. Raised and caught as anywhere
else."""

from __future__ import annotations


class NodeError(RuntimeError):
    """A task cannot be placed on a node (e.g. Binding beyond idle)."""
