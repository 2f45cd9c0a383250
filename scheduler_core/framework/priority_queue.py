"""A binary heap ordered by a Volcano-style ``less(l, r)`` function.

Volcano's ``util.PriorityQueue`` pops the element that is "less"; actions express their
orders (queues, jobs, tasks, victims) as such functions, so we keep that shape.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class _Entry(Generic[T]):
    __slots__ = ("item", "less", "seq")

    def __init__(self, item: T, less: Callable[[T, T], bool], seq: int) -> None:
        self.item = item
        self.less = less
        self.seq = seq

    def __lt__(self, other: _Entry[T]) -> bool:
        if self.less(self.item, other.item):
            return True
        if self.less(other.item, self.item):
            return False
        return self.seq < other.seq  # ties pop in insertion order: deterministic output


class PriorityQueue(Generic[T]):
    def __init__(self, less: Callable[[T, T], bool], items: Iterable[T] = ()) -> None:
        self._less = less
        self._seq = itertools.count()
        self._heap: list[_Entry[T]] = [_Entry(i, less, next(self._seq)) for i in items]
        heapq.heapify(self._heap)

    def push(self, item: T) -> None:
        heapq.heappush(self._heap, _Entry(item, self._less, next(self._seq)))

    def pop(self) -> T:
        return heapq.heappop(self._heap).item

    def empty(self) -> bool:
        return not self._heap

    def __len__(self) -> int:
        return len(self._heap)
