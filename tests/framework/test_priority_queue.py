"""The priority queue pops exactly what a plain binary heap of (order, insertion) pops, keyed
(sorted once at the first pop after a push) or by ``less`` (one element pushed again while
it waits compared by insertion alone)."""

from __future__ import annotations

import heapq
import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework.priority_queue import PriorityQueue

#: push a value (an int drawn small so that ties are common) or pop (None)
operations = st.lists(st.one_of(st.integers(0, 5), st.none()), max_size=60)


def reference(initial: list[int], ops: list[int | None]) -> list[tuple[int, int]]:
    """What a heap of (value, insertion) pops, each element tagged by its insertion."""
    seq = itertools.count()
    heap = [(v, next(seq)) for v in initial]
    heapq.heapify(heap)
    popped = []
    for op in ops:
        if op is None:
            if heap:
                popped.append(heapq.heappop(heap))
        else:
            heapq.heappush(heap, (op, next(seq)))
    return popped


def run(queue: PriorityQueue[tuple[int, int]], ops: list[int | None], start: int) -> list[object]:
    seq = itertools.count(start)
    popped: list[object] = []
    for op in ops:
        if op is None:
            if not queue.empty():
                popped.append(queue.pop())
        else:
            queue.push((op, next(seq)))
    return popped


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=20), operations)
def test_a_keyed_queue_pops_as_a_heap_whatever_pushes_and_pops_interleave(
    initial: list[int], ops: list[int | None]
) -> None:
    items = [(v, i) for i, v in enumerate(initial)]
    queue = PriorityQueue(key=lambda item: item[0], items=items)
    assert run(queue, ops, len(initial)) == reference(initial, ops)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=20), operations, st.integers(0, 3))
def test_an_element_pushed_again_pops_in_insertion_order_among_its_copies(
    initial: list[int], ops: list[int | None], again: int
) -> None:
    """One element pushed ``again`` more times among the others: by ``less``, its copies
    compare as ties, so the pops are the heap's of (value, insertion)."""
    items = [(v, i) for i, v in enumerate(initial)]
    queue = PriorityQueue(lambda l, r: l[0] < r[0], items)
    if items:
        for _ in range(again):
            queue.push(items[0])
    expected = reference(initial + [initial[0]] * again if items else [], ops)
    popped = run(queue, ops, len(initial))
    assert [p[0] for p in popped] == [v for v, _ in expected]  # type: ignore[index]
