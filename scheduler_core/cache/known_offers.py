"""Node-name lists kube-scheduler offered that the cache was found to hold every name of.

kube-scheduler offers the extender every feasible node for each pod (the rendered
configuration's ``percentageOfNodesToScore: 100``), and mostly the same list again: its
parallel filters only now and then finish in another order. Checking each of thousands of
freshly decoded names against the cache's node map was the largest single cost of a filter
call at 1,000 nodes. The verbs hand the engine a repeated list as the same immutable tuple
(``app.verbs.protocol.OfferedNames``), so a list found all known is remembered by identity
and not checked again: a node added since cannot make a known name unknown, and a node
removed forgets every list (``forget``).

A list offered for the first time is decoded by ``OfferedNameDecoder`` against the node
map's names: each name comes out as the map's own string (so every later lookup of it finds
the key by identity, with its hash already computed), and a list that decodes is known to
hold only names the map held when the decoder was built, so it is remembered without a
look, unless a node was removed since (``vouch``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, Protocol

import msgspec

#: Lists remembered at once: as many as the filter handler keeps decoded
#: (``OfferedNames``), whose tuples these are; a tuple kept here is kept alive.
DEFAULT_LISTS = 16


class KnownOffers:
    """Tuples of node names every one of which the cache held when they were checked, kept
    (so that their identity is not reused) until a node is removed."""

    __slots__ = ("_lists", "_removed_at", "_size", "names_version")

    def __init__(self, size: int = DEFAULT_LISTS) -> None:
        self._lists: dict[int, tuple[str, ...]] = {}
        self._size = size
        #: Moved whenever a name joins or leaves the node map: a decoder built from the
        #: names at one version is out of date at any other.
        self.names_version = 0
        #: The version the last removal moved it to: a list vouched for at an earlier
        #: version may name the removed node.
        self._removed_at = 0

    def all_known(self, names: Sequence[str], nodes: Mapping[str, object]) -> bool:
        """Whether ``nodes`` holds every name of ``names``. Only a tuple is remembered: a
        list may be changed in place after it was checked."""
        if type(names) is tuple and self._lists.get(id(names)) is names:
            return True
        if not all(map(nodes.__contains__, names)):
            return False
        if type(names) is tuple:
            self._remember(names)
        return True

    def vouch(self, names: tuple[str, ...], version: int) -> bool:
        """Remember ``names`` as all known: each was a name of the node map at ``version``
        (``OfferedNameDecoder`` decoded it so). Refused when a node was removed since."""
        if version < self._removed_at:
            return False
        self._remember(names)
        return True

    def _remember(self, names: tuple[str, ...]) -> None:
        lists = self._lists
        if len(lists) >= self._size:
            del lists[next(iter(lists))]  # the oldest
        lists[id(names)] = names

    def node_added(self) -> None:
        """A name joined the node map: known lists stay known, decoders are out of date."""
        self.names_version += 1

    def forget(self) -> None:
        """A node was removed: a list found all known may not be so any more."""
        self._lists.clear()
        self.names_version += 1
        self._removed_at = self.names_version

    def __len__(self) -> int:
        return len(self._lists)


#: A decoder out of date (a node added or removed) is built again at most this often, in
#: seconds: building one costs ~1 ms at 1,000 names and ~9 ms at 5,000, and one out of date
#: still decodes every list of names it knows (a list naming a newer node is decoded as any
#: JSON, and checked name by name).
REBUILD_INTERVAL = 1.0


class NameSource(Protocol):
    """The node map as ``OfferedNameDecoder`` reads it (the cache's views)."""

    def names_at(self) -> tuple[int, list[str]]:
        """The names version and the node map's names, read together (under the lock)."""
        ...

    def names_version(self) -> int:
        """The version alone, read without the lock: only to tell a decoder out of date."""
        ...

    def vouch_offered(self, names: tuple[str, ...], version: int) -> bool:
        """``KnownOffers.vouch``, under the lock."""
        ...


class OfferedNameDecoder:
    """Decodes a JSON array of node names into the node map's own name strings, refusing any
    name the map did not hold when the decoder was built; a list it decodes is vouched for
    (``KnownOffers.vouch``), so that the engine does not look its names up again.

    Why: at 1,000 nodes kube-scheduler offers most pods a list in a new order, and decoding
    it into fresh strings, then finding each in the node map, was a third of a filter call.
    msgspec matches each name against the map's names in C as it decodes (a ``Literal`` of
    them), and hands out the map's own objects, whose hashes are kept and which compare by
    identity in every later lookup. The source is passed to each call, not kept: the views
    that own a decoder are not kept alive by a cycle through it. Used from the verbs' thread
    only."""

    __slots__ = ("_built", "_built_at", "_clock")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        #: (names version, decoder), replaced whole; None until built, or for no nodes.
        self._built: tuple[int, msgspec.json.Decoder[tuple[str, ...]]] | None = None
        self._built_at = -REBUILD_INTERVAL - 1.0

    def decode(self, data: bytes, source: NameSource) -> tuple[str, ...] | None:
        """The names of ``data``, each the node map's own string, when ``data`` is an array
        of names the map held; None otherwise (not an array of strings, a name unknown, no
        decoder yet): the caller decodes it as it would any JSON."""
        built = self._current(source)
        if built is None:
            return None
        version, decoder = built
        try:
            names = decoder.decode(data)
        except (msgspec.MsgspecError, RecursionError):
            return None
        source.vouch_offered(names, version)
        return names

    def _current(
        self, source: NameSource
    ) -> tuple[int, msgspec.json.Decoder[tuple[str, ...]]] | None:
        built = self._built
        if built is not None and built[0] == source.names_version():
            return built
        now = self._clock()
        if now - self._built_at < REBUILD_INTERVAL:
            return built  # out of date, and still safe (see REBUILD_INTERVAL)
        self._built_at = now
        version, names = source.names_at()
        self._built = (version, _decoder_of(names)) if names else None
        return self._built


def _decoder_of(names: list[str]) -> msgspec.json.Decoder[tuple[str, ...]]:
    """A decoder of arrays of ``names`` that hands out these very string objects."""
    # (typing keeps its last 128 Literals: at 5,000 names, 40 KB of references each.)
    known = Literal.__getitem__(tuple(names))
    return msgspec.json.Decoder(tuple[known, ...])  # type: ignore[valid-type]
