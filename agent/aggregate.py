"""Window aggregation over a :class:`agent.history.History`, as koordlet's metric cache does it.

Every raw sample in ``[now - duration, now]`` (inclusive) counts equally: ``avg`` is the plain mean,
``p50/p90/p95/p99`` the lower nearest-rank percentile of ``common.percentile`` (no interpolation).
A window is *cold* when the samples in it span less than half its duration (the agent has not been
up long enough); koordlet then leaves that window's usage maps empty rather than publishing a
percentile of a few seconds of data.  All functions are pure: the caller passes ``now``.

Signatures (stable; the simulator uses them)::

    window_stats(history, series, now, duration) -> WindowStats | None
    window_average(history, series, now, duration) -> float | None
    aggregate(history, now, durations, *, series=(...), span_series=None) -> dict[float, dict[str, dict[str, float]]]
        # duration -> series -> {"avg", "p50", "p90", "p95", "p99"}; a cold window maps to {}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from agent.history import History
from common.percentile import PERCENTILES
from common.percentile import aggregate as aggregate_values

__all__ = [
    "AGGREGATIONS",
    "COLD_START_FRACTION",
    "WindowStats",
    "window_stats",
    "window_average",
    "is_warm",
    "aggregate",
]

AGGREGATIONS: tuple[str, ...] = ("avg", *PERCENTILES)
# A window is published only once its samples span at least this fraction of it (koordlet: 0.5).
COLD_START_FRACTION = 0.5


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
    times, values = history.window(series, now - duration, now)
    if values.size == 0:
        return None
    span = float(times[-1] - times[0])
    return WindowStats(duration=float(duration), count=int(values.size), span=span, values=aggregate_values(values))


def window_average(history: History, series: str, now: float, duration: float) -> float | None:
    """Mean of the samples in ``[now - duration, now]``; ``None`` when there are none."""
    values = history.values(series, now - duration, now)
    return float(values.mean()) if values.size else None


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
    out: dict[float, dict[str, dict[str, float]]] = {}
    for d in durations:
        d = float(d)
        if not is_warm(history, judge, now, d):
            out[d] = {}
            continue
        per: dict[str, dict[str, float]] = {}
        for s in series:
            stats = window_stats(history, s, now, d)
            if stats is not None:
                per[s] = dict(stats.values)
        out[d] = per
    return out
