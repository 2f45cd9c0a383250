"""A binary heap ordered by a Volcano-style ``less(l, r)`` function, or by a sort key.

Volcano's ``util.PriorityQueue`` pops the element that is "less"; actions express their
orders (queues, jobs, tasks, victims) as such functions, so we keep that shape. A heap of
thousands of waiting jobs makes tens of thousands of comparisons, each a walk through the
plugins' order functions in Python; when the plugins can say where an element goes as one
value (``Session.job_order_key``), the heap holds ``(key, seq, item)`` tuples instead, and
the comparisons are the interpreter's own tuple comparisons. Both give the same pop order
for the same elements.
"""

from __future__ import annotations

import heapq
import itertools
import operator
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class _Entry(Generic[T]):
    __slots__ = ("item", "less", "seq")

    def __init__(self, item: T, less: Callable[[T, T], bool], seq: int) -> None:
        self.item = item
        self.less = less
        self.seq = seq

    def __lt__(self, other: _Entry[T]) -> bool:
        if self.item is other.item:
            # One element pushed again while it waits (reclaim pushes a queue back once per
            # job it takes): ``less`` is a strict order, so neither comes first but by seq.
            return self.seq < other.seq
        if self.less(self.item, other.item):
            return True
        if self.less(other.item, self.item):
            return False
        return self.seq < other.seq  # ties pop in insertion order: deterministic output


#: The forms of a keyed queue's entries: in push order (nothing popped yet), sorted
#: greatest first (popped off the end), or a heap (pushed to after a pop).
_BAG, _SORTED, _HEAP = "bag", "sorted", "heap"


#: An entry's key, for the sort (its seq is its place until then).
_entry_key = operator.itemgetter(0)


class PriorityQueue(Generic[T]):
    """Pops the least element first: by ``less`` or, when ``key`` is given, by ``key``
    (ties in either case in insertion order).

    With ``key``, an element's key is taken once, when it is pushed: an element whose
    order changes while it waits keeps the place it had then. With ``less``, such an element
    is compared by what it is now, which leaves the heap's invariant broken where it sits;
    an action that wants a changed element placed anew pops and pushes it again."""

    def __init__(
        self,
        less: Callable[[T, T], bool] | None = None,
        items: Iterable[T] = (),
        *,
        key: Callable[[T], Any] | None = None,
    ) -> None:
        if (less is None) == (key is None):
            raise ValueError("a priority queue is ordered by exactly one of less and key")
        self._seq = itertools.count()
        self._key = key
        #: keyed only: how ``_keyed`` is kept (``_BAG``, ``_SORTED`` or ``_HEAP``)
        self._form = _BAG
        if key is not None:
            self._keyed: list[tuple[Any, int, T]] = [(key(i), next(self._seq), i) for i in items]
            self._heap: list[_Entry[T]] = []
            return
        assert less is not None
        self._less = less
        self._keyed = []
        self._heap = [_Entry(i, less, next(self._seq)) for i in items]
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        if self._key is not None:
            entry = (self._key(item), next(self._seq), item)
            if self._form is _BAG:
                self._keyed.append(entry)
                return
            if self._form is _SORTED:
                # Least first, a sorted list is a heap as it stands.
                self._keyed.reverse()
                self._form = _HEAP
            heapq.heappush(self._keyed, entry)
        else:
            heapq.heappush(self._heap, _Entry(item, self._less, next(self._seq)))

    def pop(self) -> T:
        """The least element. Keyed, what was pushed before the first pop is sorted then,
        once, and popped off the end (an action pushes its thousands of jobs, then pops
        them all): in one sort, not a sift per push and per pop. (key, seq) orders the
        entries totally (no two share a seq), so that is the heap's own order; the entries
        lie in seq order until that sort, so a stable sort by key alone gives it, each
        comparison a walk over two keys and not over the (key, seq) pairs around them."""
        if self._key is not None:
            if self._form is _BAG:
                self._keyed.sort(key=_entry_key)
                self._keyed.reverse()
                self._form = _SORTED
            elif self._form is _HEAP:
                return heapq.heappop(self._keyed)[2]
            return self._keyed.pop()[2]
        return heapq.heappop(self._heap).item

    def empty(self) -> bool:
        return not (self._keyed if self._key is not None else self._heap)

    def __len__(self) -> int:
        return len(self._keyed if self._key is not None else self._heap)
