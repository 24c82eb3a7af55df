"""Bounded in-memory time series: one NumPy ring buffer per series.

The agent keeps only what its longest aggregation window needs, so memory stays flat however long it
runs: each series owns two preallocated float64 arrays (timestamps, values) a little larger than a fixed
capacity and drops its oldest sample once it holds ``capacity`` of them; the samples always sit in one
contiguous slice, so a window is read without copying.  Nothing here reads a clock or a file; callers pass the
sample time explicitly, which is what lets the simulator drive the same code on simulated time.

The simulator uses :class:`History` and :class:`Ring` directly, so their public methods are a stable interface.
Series names are free strings; ``agent.nodemetric`` defines the ones the agent uses
(``node/cpu``, ``pod/<uid>/memory``, ...).
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

__all__ = ["History", "Ring", "capacity_for", "gather_windows"]

FloatArray = npt.NDArray[np.float64]

_EMPTY: FloatArray = np.empty(0, dtype=np.float64)
_EMPTY.flags.writeable = False

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


def _buffer_size(capacity: int) -> int:
    """Slots in a ring's buffers: the capacity plus half as much again (at least 64), so that moving the samples
    back to the front, a copy of at most ``capacity`` values, happens once every that many appends."""
    return capacity + max(capacity // 2, 64)


class Ring:
    """One series: the newest ``capacity`` samples of (time, value), times non-decreasing.

    The samples live in two float64 buffers with room to spare (:func:`_buffer_size`) and always occupy one
    contiguous slice ``[end - count, end)``: an append writes at ``end``, and once ``end`` reaches the end of
    the buffers the newest samples are moved back to the front (once every "spare" appends).  Reading a window
    is therefore a slice, never a gather.  Both buffers are ``array.array`` objects with NumPy views of the same
    memory: appends write through the arrays and windows are found with :mod:`bisect` on the times (what
    ``np.searchsorted`` finds, without NumPy's call overhead), while readers get slices of the views.
    """

    __slots__ = ("_times", "_values", "_t", "_v", "_cap", "_size", "_end", "_count", "_last_t", "_bisectable")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._cap = capacity
        size = self._size = _buffer_size(capacity)
        # Written through the arrays, read through the NumPy views of the same memory (so never resized).
        self._times = array("d", bytes(8 * size))
        self._values = array("d", bytes(8 * size))
        self._t: FloatArray = np.frombuffer(self._times, dtype=np.float64)
        self._v: FloatArray = np.frombuffer(self._values, dtype=np.float64)
        self._end = 0  # one past the newest sample
        self._count = 0
        self._last_t = -math.inf  # the newest time, as a Python float (the append check reads it)
        self._bisectable = True  # no NaN time: bisect and np.searchsorted agree

    @property
    def capacity(self) -> int:
        return self._cap

    def __len__(self) -> int:
        return self._count

    @property
    def nbytes(self) -> int:
        return int(self._t.nbytes + self._v.nbytes)

    def append(self, t: float, value: float) -> bool:
        if not t >= self._last_t:  # older than the last sample, or a NaN time (now or before)
            if t < self._last_t:
                return False
            self._bisectable = False
        end = self._end
        if end == self._size:
            # Move the samples that stay to the front; the oldest one is dropped below if the ring is full.
            keep = min(self._count, self._cap - 1)
            self._t[:keep] = self._t[end - keep : end]
            self._v[:keep] = self._v[end - keep : end]
            end = keep
            self._count = keep
        self._times[end] = t
        self._values[end] = value
        self._end = end + 1
        if self._count < self._cap:
            self._count += 1
        self._last_t = t
        return True

    def last(self) -> tuple[float, float] | None:
        if not self._count:
            return None
        return float(self._last_t), float(self._v[self._end - 1])

    @property
    def last_time(self) -> float:
        """The newest sample's time; ``-inf`` when empty."""
        return self._last_t

    def view(self) -> tuple[FloatArray, FloatArray]:
        """All samples, oldest first, as views into the ring's buffers (no copy).

        Borrowed: the next :meth:`append` may overwrite what they show, so read them before appending again
        and never write through them.
        """
        start = self._end - self._count
        return self._t[start : self._end], self._v[start : self._end]

    def _bounds(self, start: float, end: float) -> tuple[int, int]:
        """Buffer positions ``[lo, hi)`` of the samples with ``start <= t <= end`` (``hi <= lo``: none)."""
        last = self._end
        first = last - self._count
        start, end = float(start), float(end)
        if self._bisectable and start == start and end == end:
            lo = bisect_left(self._times, start, first, last)
            # Every sample is at or before ``end`` when the window ends at the newest sample or later.
            hi = last if self._last_t <= end else bisect_right(self._times, end, first, last)
            return lo, hi
        times = self._t[first:last]
        return first + int(times.searchsorted(start)), first + int(times.searchsorted(end, side="right"))

    def locate(self, start: float, end: float) -> tuple[int, int]:
        """Positions in :meth:`view` of the samples with ``start <= t <= end``: ``view()[lo:hi]``."""
        first = self._end - self._count
        lo, hi = self._bounds(start, end)
        return lo - first, hi - first

    def values_between(self, start: float, end: float) -> FloatArray:
        """The values of samples with ``start <= t <= end``: a borrowed view, like :meth:`view`."""
        last = self._end
        start, end = float(start), float(end)
        if self._bisectable and start == start and end == end:  # the common case of _bounds, inline: it is hot
            first = last - self._count
            lo = bisect_left(self._times, start, first, last)
            hi = last if self._last_t <= end else bisect_right(self._times, end, first, last)
        else:
            lo, hi = self._bounds(start, end)
        return self._v[lo:hi] if hi > lo else _EMPTY

    def extend_values_between(self, start: float, end: float, out: array[float]) -> int:
        """Append the values of :meth:`values_between` to ``out`` (an ``array("d")``, a copy); returns how many.

        For a reader that gathers many windows into one buffer: no NumPy view per window.
        """
        last = self._end
        start, end = float(start), float(end)
        if self._bisectable and start == start and end == end:  # as in values_between
            first = last - self._count
            lo = bisect_left(self._times, start, first, last)
            hi = last if self._last_t <= end else bisect_right(self._times, end, first, last)
        else:
            lo, hi = self._bounds(start, end)
        if hi <= lo:
            return 0
        out += self._values[lo:hi]
        return hi - lo

    def ordered(self) -> tuple[FloatArray, FloatArray]:
        """All samples, oldest first (copies)."""
        times, values = self.view()
        return times.copy(), values.copy()

    def window(self, start: float, end: float) -> tuple[FloatArray, FloatArray]:
        """Samples with ``start <= t <= end``, oldest first (copies)."""
        lo, hi = self._bounds(start, end)
        return self._t[lo:hi].copy(), self._v[lo:hi].copy()

    def resized(self, capacity: int) -> Ring:
        """A ring of another capacity holding the newest samples of this one."""
        out = Ring(capacity)
        times, values = self.view()
        keep = min(len(times), capacity)
        if keep:
            out._t[:keep] = times[len(times) - keep :]
            out._v[:keep] = values[len(times) - keep :]
            out._last_t = self._last_t
            out._bisectable = self._bisectable
        out._count = keep
        out._end = keep
        return out


def gather_windows(rings: Iterable[Ring | None], start: float, end: float, out: array[float]) -> list[int]:
    """``[ring.extend_values_between(start, end, out) for ring in rings]``, 0 for a ``None`` ring, in one call.

    The windows of a report all share their bounds: they are converted and checked once, and the common case of
    :meth:`Ring.extend_values_between` runs inline for each ring.
    """
    start, end = float(start), float(end)
    if not (start == start and end == end):  # a NaN bound: each ring's own general path
        return [0 if ring is None else ring.extend_values_between(start, end, out) for ring in rings]
    counts: list[int] = []
    for ring in rings:
        if ring is None:
            counts.append(0)
            continue
        last = ring._end
        if ring._bisectable:
            first = last - ring._count
            lo = bisect_left(ring._times, start, first, last)
            hi = last if ring._last_t <= end else bisect_right(ring._times, end, first, last)
        else:
            lo, hi = ring._bounds(start, end)
        if hi > lo:
            out += ring._values[lo:hi]
            counts.append(hi - lo)
        else:
            counts.append(0)
    return counts


class History:
    """Ring buffers by series name, all of the capacity the longest window needs."""

    def __init__(self, retention_seconds: float, interval_seconds: float) -> None:
        self._interval = float(interval_seconds)
        self._retention = float(retention_seconds)
        self._capacity = capacity_for(retention_seconds, interval_seconds)
        self._rings: dict[str, Ring] = {}
        self._generation = 0

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

    @property
    def generation(self) -> int:
        """Changes whenever a ring leaves the history or is replaced (:meth:`drop`, :meth:`prune`,
        :meth:`set_retention`, :meth:`set_interval`): a writer that keeps rings from :meth:`ring_for` holds this
        history's rings for as long as the generation is the one it got them in."""
        return self._generation

    def __contains__(self, series: object) -> bool:
        return series in self._rings

    def __len__(self) -> int:
        return len(self._rings)

    def series(self) -> Iterator[str]:
        return iter(list(self._rings))

    def set_retention(self, retention_seconds: float) -> None:
        """Resize every ring for a new longest window; the newest samples are kept."""
        self._resize(retention_seconds, self._interval)

    def set_interval(self, interval_seconds: float) -> None:
        """Resize every ring for a new sampling period (a reloaded config); the newest samples are kept."""
        self._resize(self._retention, interval_seconds)

    def _resize(self, retention_seconds: float, interval_seconds: float) -> None:
        capacity = capacity_for(retention_seconds, interval_seconds)
        self._retention = float(retention_seconds)
        self._interval = float(interval_seconds)
        if capacity == self._capacity:
            return
        self._capacity = capacity
        self._rings = {k: r.resized(capacity) for k, r in self._rings.items()}
        self._generation += 1

    def append(self, series: str, t: float, value: float) -> bool:
        """Record one sample; a sample older than the series' last one is ignored (returns False)."""
        ring = self._rings.get(series)
        if ring is None:
            ring = self._rings[series] = Ring(self._capacity)
        return ring.append(float(t), float(value))

    def extend(self, t: float, samples: Iterable[tuple[str, float]]) -> None:
        """:meth:`append` of each ``(series, value)`` at the same time ``t`` (one call for a whole tick).

        Values are numbers (the buffer converts them as ``float()`` does).
        """
        t = float(t)
        rings = self._rings
        for series, value in samples:
            ring = rings.get(series)
            if ring is None:
                ring = rings[series] = Ring(self._capacity)
            ring.append(t, value)

    def ring(self, series: str) -> Ring | None:
        """The ring of ``series``, for readers that take borrowed views (:meth:`Ring.view`)."""
        return self._rings.get(series)

    def ring_for(self, series: str) -> Ring:
        """The ring of ``series``, created empty if there is none, for a writer that appends to it directly
        (``ring_for(s).append(t, v)`` is ``extend(t, [(s, v)])``); see :attr:`generation`."""
        ring = self._rings.get(series)
        if ring is None:
            ring = self._rings[series] = Ring(self._capacity)
        return ring

    def window(self, series: str, start: float, end: float) -> tuple[FloatArray, FloatArray]:
        """Samples with ``start <= t <= end``, oldest first (copies); empty arrays for an unknown series."""
        ring = self._rings.get(series)
        if ring is None:
            return np.empty(0, dtype=np.float64), np.empty(0, dtype=np.float64)
        return ring.window(start, end)

    def values(self, series: str, start: float, end: float) -> FloatArray:
        return self.window(series, start, end)[1]

    def values_view(self, series: str, start: float, end: float) -> FloatArray:
        """The values of :meth:`values` as a borrowed view of the ring (see :meth:`Ring.view`), not a copy."""
        ring = self._rings.get(series)
        return _EMPTY if ring is None else ring.values_between(start, end)

    def span(self, series: str, start: float, end: float) -> float:
        """Last minus first sample time inside the window (0 with fewer than two samples)."""
        ring = self._rings.get(series)
        if ring is None:
            return 0.0
        lo, hi = ring.locate(start, end)
        times, _ = ring.view()
        return float(times[hi - 1] - times[lo]) if hi - lo >= 2 else 0.0

    def last(self, series: str) -> tuple[float, float] | None:
        ring = self._rings.get(series)
        return ring.last() if ring is not None else None

    def count(self, series: str) -> int:
        ring = self._rings.get(series)
        return len(ring) if ring is not None else 0

    def drop(self, series: str) -> None:
        if self._rings.pop(series, None) is not None:
            self._generation += 1

    def prune(self, older_than: float) -> list[str]:
        """Forget every series whose newest sample is older than ``older_than``; returns their names."""
        gone = [k for k, r in self._rings.items() if not len(r) or r.last_time < older_than]
        for k in gone:
            del self._rings[k]
        if gone:
            self._generation += 1
        return gone
