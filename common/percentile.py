"""Window aggregation exactly as koordlet's metric cache does it (docs/design/nodemetric.md §3).

``pXX``: sort ascending and take index ``max(0, int(float32(n) * float32(p)) - 1)`` — a lower
nearest-rank percentile with no interpolation.  ``avg`` is the plain mean of every raw sample in
the window (not time-weighted).  An empty window has no value.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["PERCENTILES", "nearest_rank_index", "nearest_rank", "aggregate", "aggregate_columns"]

PERCENTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}


def nearest_rank_index(n: int, p: float) -> int:
    """koordlet's index into the sorted samples, float32 arithmetic included."""
    if n <= 0:
        raise ValueError("no samples")
    return max(0, int(np.float32(n) * np.float32(p)) - 1)


def nearest_rank(values: Sequence[float] | npt.NDArray[np.float64], p: float) -> float:
    arr = np.sort(np.asarray(values, dtype=np.float64))
    return float(arr[nearest_rank_index(arr.size, p)])


def aggregate(values: Sequence[float] | npt.NDArray[np.float64]) -> dict[str, float]:
    """avg, p50, p90, p95, p99 of one window; ``{}`` when the window is empty."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return {}
    s = np.sort(arr)
    out = {"avg": float(arr.mean())}
    for name, p in PERCENTILES.items():
        out[name] = float(s[nearest_rank_index(s.size, p)])
    return out


def aggregate_columns(matrix: npt.NDArray[np.float64]) -> dict[str, npt.NDArray[np.float64]]:
    """The same over every column of an (n_samples × n_series) matrix at once."""
    if matrix.shape[0] == 0:
        return {}
    s = np.sort(matrix, axis=0)
    n = matrix.shape[0]
    out = {"avg": matrix.mean(axis=0)}
    for name, p in PERCENTILES.items():
        out[name] = s[nearest_rank_index(n, p)]
    return out
