"""Job order read from keys instead of pairwise plugin callbacks, where that gives the same order.

A plugin's ``job_order`` compares two jobs; it may also give a *key* whose natural order is that comparison's
(``cmp(a, b) < 0`` exactly when ``key(a) < key(b)``, 0 exactly when they are equal).  When every enabled job-order
plugin gives one, the session's order is the tuple of those keys followed by the built-in tie-breakers, and a queue
whose jobs change only while they are out of it (allocate's: a job is popped, placed, and pushed again) may read
each job's key once per push: :class:`KeyedQueue` pops what :class:`~scheduler.framework.session.PriorityQueue`
under the callbacks would, with plain tuples kept sorted (no Python comparison call per step).
"""

from __future__ import annotations

import bisect
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
    """A queue popping the item of the lowest ``key(item)`` (read when the item is pushed), ties broken by push
    order.  No two entries (key, push order, item) compare equal, so the pops are determined by the entries alone:
    the items pushed before the first pop (every job, as actions fill their queues) are sorted once, then popped
    from the front of the sorted entries, and an item pushed later is inserted at its place among them."""

    def __init__(self, key: Callable[[T], Any], items: Iterable[T] = ()) -> None:
        self._key = key
        self._seq = itertools.count()
        self._entries: list[tuple[Any, int, T]] = []
        self._head = -1   # the next entry to pop, once sorted (-1: not sorted yet)
        for it in items:
            self.push(it)

    def push(self, item: T) -> None:
        entry = (self._key(item), next(self._seq), item)
        if self._head < 0:
            self._entries.append(entry)
        else:
            bisect.insort(self._entries, entry, lo=self._head)

    def pop(self) -> T:
        entries = self._entries
        if self._head < 0:
            entries.sort()
            self._head = 0
        if self._head >= len(entries):
            raise IndexError("pop from an empty queue")
        item = entries[self._head][2]
        self._head += 1
        if self._head > 1024 and 2 * self._head > len(entries):   # drop the popped entries now and then
            del entries[:self._head]
            self._head = 0
        return item

    def __len__(self) -> int:
        return len(self._entries) - max(self._head, 0)

    def empty(self) -> bool:
        return len(self) == 0
