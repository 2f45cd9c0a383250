"""Node-name lists kube-scheduler offered that the cache was found to hold every name of.

kube-scheduler offers the extender every feasible node for each pod (the rendered
configuration's ``percentageOfNodesToScore: 100``), and mostly the same list again: its
parallel filters only now and then finish in another order. Checking each of thousands of
freshly decoded names against the cache's node map was the largest single cost of a filter
call at 1,000 nodes. The verbs hand the engine a repeated list as the same immutable tuple
(``app.verbs.protocol.OfferedNames``), so a list found all known is remembered by identity
and not checked again: a node added since cannot make a known name unknown, and a node
removed forgets every list (``forget``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

#: Lists remembered at once: as many as the filter handler keeps decoded
#: (``OfferedNames``), whose tuples these are; a tuple kept here is kept alive.
DEFAULT_LISTS = 16


class KnownOffers:
    """Tuples of node names every one of which the cache held when they were checked, kept
    (so that their identity is not reused) until a node is removed."""

    __slots__ = ("_lists", "_size")

    def __init__(self, size: int = DEFAULT_LISTS) -> None:
        self._lists: dict[int, tuple[str, ...]] = {}
        self._size = size

    def all_known(self, names: Sequence[str], nodes: Mapping[str, object]) -> bool:
        """Whether ``nodes`` holds every name of ``names``. Only a tuple is remembered: a
        list may be changed in place after it was checked."""
        if type(names) is tuple and self._lists.get(id(names)) is names:
            return True
        if not all(map(nodes.__contains__, names)):
            return False
        if type(names) is tuple:
            lists = self._lists
            if len(lists) >= self._size:
                del lists[next(iter(lists))]  # the oldest
            lists[id(names)] = names
        return True

    def forget(self) -> None:
        """A node was removed: a list found all known may not be so any more."""
        self._lists.clear()

    def __len__(self) -> int:
        return len(self._lists)
