"""Go integer/float semantics the kube formulas depend on (docs/design/kube-scoring.md §10.1), scalar and NumPy."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = ["go_div", "go_div_array", "go_round", "go_round_array"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's ``/`` on int64 (Python's ``//`` floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_div_array(a: IntArray, b: IntArray | int) -> IntArray:
    """Element-wise :func:`go_div`; ``b`` must be non-zero where the result is used."""
    q = np.abs(a) // np.abs(b)
    return np.where((a >= 0) == (np.asarray(b) > 0), q, -q).astype(np.int64)


def go_round(x: float) -> int:
    """``math.Round``: half away from zero (22.5 -> 23, -22.5 -> -23), unlike Python's banker's ``round``."""
    f = math.floor(abs(x))
    r = f + 1 if abs(x) - f >= 0.5 else f
    return int(r if x >= 0 else -r)


def go_round_array(x: FloatArray) -> IntArray:
    a = np.abs(x)
    f = np.floor(a)
    r = np.where(a - f >= 0.5, f + 1.0, f)
    return np.where(x >= 0, r, -r).astype(np.int64)
