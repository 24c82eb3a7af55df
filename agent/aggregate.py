"""Window aggregation over a :class:`agent.history.History`, as koordlet's metric cache does it.

Every raw sample in ``[now - duration, now]`` (inclusive) counts equally: ``avg`` is the plain mean,
``p50/p90/p95/p99`` the lower nearest-rank percentile of ``common.percentile`` (no interpolation).
A window is *cold* when the samples in it span less than half its duration (the agent has not been
up long enough); koordlet then leaves that window's usage maps empty rather than publishing a
percentile of a few seconds of data.  All functions are pure: the caller passes ``now``.

Windows are read from borrowed views of the ring buffers (no copies) and many windows are aggregated in one
NumPy call per group of equal length; the results are exactly those of ``common.percentile.aggregate`` over a
copy of each window.  The simulator calls these functions too.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate

import numpy as np
import numpy.typing as npt

from agent.history import FloatArray, History
from common.percentile import PERCENTILES, nearest_rank_index

__all__ = [
    "AGGREGATIONS",
    "COLD_START_FRACTION",
    "WindowStats",
    "SeriesWindows",
    "summaries",
    "means",
    "row_means",
    "row_means_array",
    "window_stats",
    "window_average",
    "is_warm",
    "aggregate",
]

AGGREGATIONS: tuple[str, ...] = ("avg", *PERCENTILES)
# A window is published only once its samples span at least this fraction of it (koordlet: 0.5).
COLD_START_FRACTION = 0.5

_sum = np.add.reduce
_EMPTY: FloatArray = np.empty(0, dtype=np.float64)
_EMPTY.flags.writeable = False


@lru_cache(maxsize=8192)
def _rank_indices(n: int) -> npt.NDArray[np.intp]:
    """The nearest-rank index of every percentile for ``n`` samples (float32 arithmetic: computed once per n)."""
    out = np.array([nearest_rank_index(n, p) for p in PERCENTILES.values()], dtype=np.intp)
    out.flags.writeable = False  # shared by every caller
    return out


def _by_length(windows: Sequence[FloatArray]) -> dict[int, list[int]]:
    """Indices of the non-empty windows, grouped by their number of samples."""
    return _group_lengths(w.size for w in windows)


def _group_lengths(lengths: Iterable[int]) -> dict[int, list[int]]:
    """Indices of the non-zero ``lengths``, grouped by length."""
    groups: dict[int, list[int]] = {}
    for k, n in enumerate(lengths):
        if n:
            group = groups.get(n)
            if group is None:
                groups[n] = [k]
            else:
                group.append(k)
    return groups


def summaries(windows: Sequence[FloatArray]) -> list[tuple[float, ...] | None]:
    """avg, p50, p90, p95, p99 (the order of :data:`AGGREGATIONS`) of each window; ``None`` for an empty one.

    Windows with the same number of samples are stacked into one matrix and summed and sorted row by row in
    one call each.  NumPy sums each row of a C-contiguous matrix exactly as it sums that row alone, so every
    value equals ``common.percentile.aggregate`` of the window.
    """
    out: list[tuple[float, ...] | None] = [None] * len(windows)
    for n, group in _by_length(windows).items():
        rows = np.array([windows[k] for k in group])
        sums = _sum(rows, axis=1).tolist()
        rows.sort(axis=1)
        picked = rows.take(_rank_indices(n), axis=1).tolist()
        for k, total, pct in zip(group, sums, picked, strict=True):
            out[k] = (total / n, *pct)
    return out


def means(windows: Sequence[FloatArray]) -> list[float | None]:
    """The mean of each window (``None`` for an empty one); windows of one length are summed in one call."""
    out: list[float | None] = [None] * len(windows)
    for n, group in _by_length(windows).items():
        if len(group) == 1:
            out[group[0]] = float(_sum(windows[group[0]])) / n
            continue
        sums = _sum(np.array([windows[k] for k in group]), axis=1).tolist()
        for k, total in zip(group, sums, strict=True):
            out[k] = total / n
    return out


def row_means(values: array[float], counts: Sequence[int]) -> list[float | None]:
    """:func:`means` of the windows laid end to end in ``values``: window ``i`` is the next ``counts[i]`` values.

    The same NumPy sums as :func:`means` on the same layouts (one row alone, or the rows of one length stacked
    into a C-contiguous matrix), so the same results; when every window has the same length, the buffer already
    is that matrix and nothing is copied.
    """
    out: list[float | None] = [None] * len(counts)
    if not values:
        return out
    flat: FloatArray = np.frombuffer(values, dtype=np.float64)
    n = counts[0]
    if n and counts.count(n) == len(counts):  # the usual report: every window of one length (the loop's result)
        if len(counts) == 1:
            return [float(_sum(flat)) / n]
        return [total / n for total in _sum(flat.reshape(len(counts), n), axis=1).tolist()]
    offsets = list(accumulate(counts, initial=0))
    for n, group in _group_lengths(counts).items():
        if len(group) == 1:
            start = offsets[group[0]]
            out[group[0]] = float(_sum(flat[start : start + n])) / n
            continue
        if len(group) * n == flat.size:  # every window: the buffer is the matrix
            rows = flat.reshape(len(group), n)
        else:
            rows = np.array([flat[offsets[k] : offsets[k] + n] for k in group])
        sums = _sum(rows, axis=1).tolist()
        for k, total in zip(group, sums, strict=True):
            out[k] = total / n
    return out



def row_means_array(values: array[float], counts: Sequence[int]) -> FloatArray:
    """:func:`row_means` as an array, for many windows at once: window ``i``'s mean at ``i``, 0.0 for an empty one.

    The rows of each length are gathered into one C-contiguous matrix with one fancy index and summed in one call:
    the sums, and so the means, are those of :func:`row_means`, however many windows there are.
    """
    lengths = np.array(counts, dtype=np.intp)
    out: FloatArray = np.zeros(lengths.size)
    if not values:
        return out
    flat: FloatArray = np.frombuffer(values, dtype=np.float64)
    starts = np.cumsum(lengths) - lengths
    for n in np.unique(lengths).tolist():
        if n:
            rows = np.flatnonzero(lengths == n)
            out[rows] = _sum(flat[starts[rows, None] + np.arange(n)], axis=1) / n
    return out

class SeriesWindows:
    """One series over several windows that all end at ``now``: window ``i`` is ``[starts[i], now]``.

    Holds borrowed views of the ring (see :meth:`agent.history.Ring.view`): use it before the series is
    appended to again.  An unknown series has no samples in any window.
    """

    __slots__ = ("times", "values", "_bounds")

    def __init__(self, history: History, series: str, now: float, starts: Sequence[float]) -> None:
        ring = history.ring(series)
        if ring is None:
            self.times, self.values = _EMPTY, _EMPTY
            self._bounds = [(0, 0)] * len(starts)
        else:
            self.times, self.values = ring.view()
            self._bounds = [ring.locate(start, now) for start in starts]

    def window(self, i: int) -> FloatArray:
        """The samples of window ``i`` (a borrowed view; empty when it has none)."""
        lo, hi = self._bounds[i]
        return self.values[lo:hi] if hi > lo else _EMPTY

    def count(self, i: int) -> int:
        lo, hi = self._bounds[i]
        return max(0, hi - lo)

    def span(self, i: int) -> float:
        """Last minus first sample time in window ``i`` (0 with fewer than two samples)."""
        lo, hi = self._bounds[i]
        return self.times.item(hi - 1) - self.times.item(lo) if hi - lo >= 2 else 0.0


@dataclass(frozen=True, slots=True)
class WindowStats:
    """One series over one window: sample count, time span and avg/p50/p90/p95/p99."""

    duration: float
    count: int
    span: float
    values: Mapping[str, float]

    @property
    def warm(self) -> bool:
        return self.span >= COLD_START_FRACTION * self.duration


def window_stats(history: History, series: str, now: float, duration: float) -> WindowStats | None:
    """Aggregates of ``series`` over ``[now - duration, now]``; ``None`` when the window is empty."""
    read = SeriesWindows(history, series, now, [now - duration])
    stats = summaries([read.window(0)])[0]
    if stats is None:
        return None
    values = dict(zip(AGGREGATIONS, stats, strict=True))
    return WindowStats(duration=float(duration), count=read.count(0), span=read.span(0), values=values)


def window_average(history: History, series: str, now: float, duration: float) -> float | None:
    """Mean of the samples in ``[now - duration, now]``; ``None`` when there are none."""
    values = history.values_view(series, now - duration, now)
    return float(_sum(values)) / values.size if values.size else None


def is_warm(history: History, series: str, now: float, duration: float) -> bool:
    """Whether the samples of ``series`` in the window span at least half of it."""
    return history.span(series, now - duration, now) >= COLD_START_FRACTION * duration


def aggregate(
    history: History,
    now: float,
    durations: Iterable[float],
    *,
    series: Sequence[str] = ("node/cpu", "node/memory"),
    span_series: str | None = None,
) -> dict[float, dict[str, dict[str, float]]]:
    """avg/p50/p90/p95/p99 of each series for each duration.

    Coldness is judged on ``span_series`` (default: the first series, koordlet uses the cpu series)
    and applies to the whole window: a cold window maps to ``{}``, and so does a series with no
    samples in an otherwise warm window.
    """
    judge = span_series if span_series is not None else (series[0] if series else "")
    lengths = [float(d) for d in durations]
    starts = [now - d for d in lengths]
    judged = SeriesWindows(history, judge, now, starts)
    read = [SeriesWindows(history, s, now, starts) for s in series]
    warm = [judged.span(i) >= COLD_START_FRACTION * d for i, d in enumerate(lengths)]
    stats = iter(summaries([r.window(i) for i, ok in enumerate(warm) if ok for r in read]))
    out: dict[float, dict[str, dict[str, float]]] = {}
    for d, ok in zip(lengths, warm, strict=True):
        per: dict[str, dict[str, float]] = {}
        if ok:
            for s in series:
                st = next(stats)
                if st is not None:
                    per[s] = dict(zip(AGGREGATIONS, st, strict=True))
        out[d] = per
    return out
