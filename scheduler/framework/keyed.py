"""Job order read from keys instead of pairwise plugin callbacks, where that gives the same order.

A plugin's ``job_order`` compares two jobs; it may also give a *key* whose natural order is that comparison's
(``cmp(a, b) < 0`` exactly when ``key(a) < key(b)``, 0 exactly when they are equal).  When every enabled job-order
plugin gives one, the session's order is the tuple of those keys followed by the built-in tie-breakers, and a queue
whose jobs change only while they are out of it (allocate's: a job is popped, placed, and pushed again) may read
each job's key once per push: :class:`KeyedQueue` pops what :class:`~scheduler.framework.session.PriorityQueue`
under the callbacks would, with a heap of plain tuples (no Python comparison call per sift step).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["KeyedQueue", "OrderedQueue"]

T = TypeVar("T")


class OrderedQueue(Protocol[T]):
    """What actions use of a priority queue."""

    def push(self, item: T) -> None: ...

    def pop(self) -> T: ...

    def __len__(self) -> int: ...

    def empty(self) -> bool: ...


class KeyedQueue(Generic[T]):
    """A heap ordered by ``key(item)`` read when the item is pushed, ties broken by push order.  The items pushed
    before the first pop (every job, as actions fill their queues) are made a heap at once when it comes: no two
    entries compare equal (the push order breaks ties), so the pops are those of pushing each onto the heap."""

    def __init__(self, key: Callable[[T], Any], items: Iterable[T] = ()) -> None:
        self._key = key
        self._seq = itertools.count()
        self._heap: list[tuple[Any, int, T]] = []
        self._heaped = False
        for it in items:
            self.push(it)

    def push(self, item: T) -> None:
        entry = (self._key(item), next(self._seq), item)
        if self._heaped:
            heapq.heappush(self._heap, entry)
        else:
            self._heap.append(entry)

    def pop(self) -> T:
        if not self._heaped:
            heapq.heapify(self._heap)
            self._heaped = True
        return heapq.heappop(self._heap)[2]

    def __len__(self) -> int:
        return len(self._heap)

    def empty(self) -> bool:
        return not self._heap
