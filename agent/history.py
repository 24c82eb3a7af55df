"""Bounded in-memory time series: one NumPy ring buffer per series.

The agent keeps only what its longest aggregation window needs, so memory stays flat however long it
runs: each series owns two preallocated float64 arrays (timestamps, values) of a fixed capacity and
overwrites its oldest sample once full.  Nothing here reads a clock or a file; callers pass the
sample time explicitly, which is what lets the simulator drive the same code on simulated time.

Signatures (stable; the simulator uses them)::

    h = History(retention_seconds=1800, interval_seconds=1.0)   # capacity from the longest window
    h.append(series: str, t: float, value: float) -> bool       # False: sample older than the last one
    h.window(series, start: float, end: float) -> (times, values)   # inclusive, oldest first, copies
    h.last(series) -> (t, value) | None
    h.span(series, start, end) -> float                         # last - first time inside the window
    h.drop(series) / h.prune(older_than: float) -> list[str]     # forget pods that went away
    h.set_retention(seconds)                                     # a longer window keeps existing data
    h.nbytes                                                     # bytes held by the buffers

Series names are free strings; ``agent.nodemetric`` defines the ones the agent uses
(``node/cpu``, ``pod/<uid>/memory``, ...).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

__all__ = ["History", "Ring", "capacity_for"]

FloatArray = npt.NDArray[np.float64]

# Extra slots beyond retention/interval: jittery ticks must not push the window's oldest sample out.
_SLACK_FRACTION = 0.1
_MIN_SLACK = 4


def capacity_for(retention_seconds: float, interval_seconds: float) -> int:
    """Slots needed to hold ``retention_seconds`` of samples taken every ``interval_seconds``."""
    if interval_seconds <= 0:
        raise ValueError("interval_seconds must be positive")
    if retention_seconds < 0:
        raise ValueError("retention_seconds must not be negative")
    base = math.ceil(retention_seconds / interval_seconds) + 1
    return base + max(_MIN_SLACK, math.ceil(base * _SLACK_FRACTION))


class Ring:
    """One series: a fixed-size circular buffer of (time, value), times non-decreasing."""

    __slots__ = ("_t", "_v", "_head", "_count")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._t: FloatArray = np.empty(capacity, dtype=np.float64)
        self._v: FloatArray = np.empty(capacity, dtype=np.float64)
        self._head = 0  # next slot to write
        self._count = 0

    @property
    def capacity(self) -> int:
        return int(self._t.size)

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        return int(self._t.nbytes + self._v.nbytes)

    def append(self, t: float, value: float) -> bool:
        if self._count and t < self._t[(self._head - 1) % self.capacity]:
            return False
        self._t[self._head] = t
        self._v[self._head] = value
        self._head = (self._head + 1) % self.capacity
        if self._count < self.capacity:
            self._count += 1
        return True

    def last(self) -> tuple[float, float] | None:
        if not self._count:
            return None
        i = (self._head - 1) % self.capacity
        return float(self._t[i]), float(self._v[i])

    def ordered(self) -> tuple[FloatArray, FloatArray]:
        """All samples, oldest first (copies)."""
        n, cap = self._count, self.capacity
        start = (self._head - n) % cap
        if start + n <= cap:
            return self._t[start : start + n].copy(), self._v[start : start + n].copy()
        idx = (np.arange(n) + start) % cap
        return self._t[idx], self._v[idx]

    def window(self, start: float, end: float) -> tuple[FloatArray, FloatArray]:
        times, values = self.ordered()
        lo = int(np.searchsorted(times, start, side="left"))
        hi = int(np.searchsorted(times, end, side="right"))
        return times[lo:hi], values[lo:hi]

    def resized(self, capacity: int) -> Ring:
        """A ring of another capacity holding the newest samples of this one."""
        out = Ring(capacity)
        times, values = self.ordered()
        keep = min(len(times), capacity)
        if keep:
            out._t[:keep] = times[-keep:]
            out._v[:keep] = values[-keep:]
        out._count = keep
        out._head = keep % capacity
        return out


class History:
    """Ring buffers by series name, all of the capacity the longest window needs."""

    def __init__(self, retention_seconds: float, interval_seconds: float) -> None:
        self._interval = float(interval_seconds)
        self._retention = float(retention_seconds)
        self._capacity = capacity_for(retention_seconds, interval_seconds)
        self._rings: dict[str, Ring] = {}

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def retention_seconds(self) -> float:
        return self._retention

    @property
    def interval_seconds(self) -> float:
        return self._interval

    @property
    def nbytes(self) -> int:
        return sum(r.nbytes for r in self._rings.values())

    def __contains__(self, series: object) -> bool:
        return series in self._rings

    def __len__(self) -> int:
        return len(self._rings)

    def series(self) -> Iterator[str]:
        return iter(list(self._rings))

    def set_retention(self, retention_seconds: float) -> None:
        """Resize every ring for a new longest window; the newest samples are kept."""
        capacity = capacity_for(retention_seconds, self._interval)
        self._retention = float(retention_seconds)
        if capacity == self._capacity:
            return
        self._capacity = capacity
        self._rings = {k: r.resized(capacity) for k, r in self._rings.items()}

    def append(self, series: str, t: float, value: float) -> bool:
        """Record one sample; a sample older than the series' last one is ignored (returns False)."""
        ring = self._rings.get(series)
        if ring is None:
            ring = self._rings[series] = Ring(self._capacity)
        return ring.append(float(t), float(value))

    def window(self, series: str, start: float, end: float) -> tuple[FloatArray, FloatArray]:
        """Samples with ``start <= t <= end``, oldest first; empty arrays for an unknown series."""
        ring = self._rings.get(series)
        if ring is None:
            empty: FloatArray = np.empty(0, dtype=np.float64)
            return empty, empty.copy()
        return ring.window(start, end)

    def values(self, series: str, start: float, end: float) -> FloatArray:
        return self.window(series, start, end)[1]

    def span(self, series: str, start: float, end: float) -> float:
        """Last minus first sample time inside the window (0 with fewer than two samples)."""
        times, _ = self.window(series, start, end)
        return float(times[-1] - times[0]) if times.size >= 2 else 0.0

    def last(self, series: str) -> tuple[float, float] | None:
        ring = self._rings.get(series)
        return ring.last() if ring is not None else None

    def count(self, series: str) -> int:
        ring = self._rings.get(series)
        return len(ring) if ring is not None else 0

    def drop(self, series: str) -> None:
        self._rings.pop(series, None)

    def prune(self, older_than: float) -> list[str]:
        """Forget every series whose newest sample is older than ``older_than``; returns their names."""
        gone = [k for k, r in self._rings.items() if (last := r.last()) is None or last[0] < older_than]
        for k in gone:
            del self._rings[k]
        return gone
