"""Pacing Python's cyclic garbage collector in the scheduler daemon.

The scheduler keeps every parsed object and what sessions derive from them (millions of objects at thousands of
nodes) alive from one session to the next.  Left to itself, the collector walks all of them in every full
collection, which the objects a session allocates trigger every few sessions.  Once the informers listed the
cluster and after each session, the objects still alive are frozen (``gc.freeze``): the automatic collections of
the sessions that follow walk only what those sessions allocate.  Freezing frees nothing early or late by itself (reference counting still frees what is no
longer referenced); only a reference cycle among frozen objects waits, until the periodic full collection, which
unfreezes everything and collects it once.

The young generation is collected every ``young`` allocations (Python's default is 700).  What a session allocates
per pod — the pod's API versions, views, task and group of one — mostly outlives the session: collected every 700
allocations, each such object is walked in the young collection, again in the middle one and once more in a full
one before the session's end freezes it.  Every 20,000 allocations walks it about once, while the cycles it may
hold wait a few megabytes of allocations longer.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

__all__ = ["CollectorPacing"]


class CollectorPacing:
    """At each :meth:`checkpoint` (the scheduler's start, and the end of each session it opens): a full collection
    when ``full_every_seconds`` passed since the last one (or there was none yet), then what is alive frozen."""

    def __init__(self, full_every_seconds: float = 600.0, clock: Callable[[], float] = time.monotonic,
                 young: int = 20_000) -> None:
        if not full_every_seconds > 0:
            raise ValueError(f"full_every_seconds: must be positive, got {full_every_seconds!r}")
        if young < 1:
            raise ValueError(f"young: must be at least 1 allocation, got {young!r}")
        self.full_every_seconds = full_every_seconds
        self._clock = clock
        self._last_full: float | None = None
        self.full_collections = 0
        self.young = young
        self._thresholds: tuple[int, ...] | None = None   # the collector's thresholds before the first checkpoint

    def checkpoint(self) -> None:
        if self._thresholds is None:
            self._thresholds = gc.get_threshold()
            gc.set_threshold(self.young, *self._thresholds[1:])
        now = self._clock()
        if self._last_full is None or now - self._last_full >= self.full_every_seconds:
            gc.unfreeze()
            gc.collect()
            self._last_full = now
            self.full_collections += 1
        gc.freeze()

    def stop(self) -> None:
        """Hand everything back to the collector (the daemon stopping, or a test ending), with its thresholds."""
        gc.unfreeze()
        if self._thresholds is not None:
            gc.set_threshold(*self._thresholds)
            self._thresholds = None
