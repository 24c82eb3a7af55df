"""NodeResourcesBalancedAllocation (docs/design/kube-scoring.md §5): std-based balance on real requests, float64 with
Go truncation; v1.36 scores the change in balance, ≤ v1.35 (Volcano/Koordinator) the balance with the pod.

Inputs per node and resource (int64): ``allocatable[n, k]``, ``node_requested[n, k]`` (real requests of bound pods)
and the pod's real request ``pod_request[k]``; ``active[k]`` False for scalar resources the pod does not request.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["balance_score", "balance_two_columns", "balanced_allocation", "balance_ref",
           "balanced_allocation_ref"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


# up to this many nodes (about where both forms cost the same), balance_score works row by row in Python floats
# (the same IEEE operations in the same order): the few nodes a placement changed cost less that way than
# through the vector form (a dozen NumPy calls for the usual two kept resources)
ROW_BY_ROW = 6


def _balance_row(allocatable: Sequence[int], requested: Sequence[int], active: Sequence[bool]) -> int:
    """balance_score of one node, operation for operation (a column left out adds 0.0, which changes no sum)."""
    frac = [min(float(r) / float(a), 1.0) for a, r, on in zip(allocatable, requested, active, strict=True)
            if on and a > 0]
    count = len(frac)
    if count <= 1:
        std = 0.0
    elif count == 2:
        std = abs((frac[0] - frac[1]) / 2.0)
    else:
        total = 0.0
        for f in frac:
            total = total + f
        mean = total / float(count)
        var = 0.0
        for f in frac:
            d = f - mean
            var = var + d * d
        std = math.sqrt(var / float(count))
    return math.trunc((1.0 - std) * 100.0)


def balance_score(allocatable: IntArray, requested: IntArray, active: BoolArray) -> IntArray:
    """B(req, alloc) per node: int((1 - std) * 100) over kept resources (alloc > 0, active)."""
    n, k = allocatable.shape
    if n <= ROW_BY_ROW:
        on = active.tolist()
        return np.array([_balance_row(a, r, on) for a, r in zip(allocatable.tolist(), requested.tolist(),
                                                                   strict=True)], dtype=np.int64)
    on = np.flatnonzero(active)
    if len(on) <= 1:   # at most one kept resource on any node: std 0
        return np.full(n, 100, dtype=np.int64)
    if len(on) == 2 and bool((allocatable[:, on] > 0).all()):
        return _balance_two(allocatable[:, on], requested[:, on])
    kept = (allocatable > 0) & active[np.newaxis, :]
    safe = np.where(kept, allocatable, 1).astype(np.float64)
    frac = np.where(kept, np.minimum(requested.astype(np.float64) / safe, 1.0), 0.0)
    count = kept.sum(axis=1)
    # mean and variance summed sequentially in resource order, as Go does
    total = np.zeros(n, dtype=np.float64)
    for j in range(k):
        total = total + frac[:, j]
    mean = total / np.maximum(count, 1).astype(np.float64)
    var = np.zeros(n, dtype=np.float64)
    for j in range(k):
        d = np.where(kept[:, j], frac[:, j] - mean, 0.0)
        var = var + d * d
    std = np.sqrt(var / np.maximum(count, 1).astype(np.float64))
    if k:
        rows = np.arange(n)
        first = frac[rows, np.argmax(kept, axis=1)]
        last = frac[rows, k - 1 - np.argmax(kept[:, ::-1], axis=1)]
        std = np.where(count == 2, np.abs((first - last) / 2.0), std)
    std = np.where(count <= 1, 0.0, std)
    return np.trunc((1.0 - std) * 100.0).astype(np.int64)


def _balance_two(allocatable: IntArray, requested: IntArray) -> IntArray:
    """balance_score where every node keeps the same two resources (the usual cpu and memory): the count-2 branch
    of the general form, the same IEEE operations in the same order, without its per-resource passes."""
    frac = np.minimum(requested.astype(np.float64) / allocatable.astype(np.float64), 1.0)
    std = np.abs((frac[:, 0] - frac[:, 1]) / 2.0)
    out: IntArray = np.trunc((1.0 - std) * 100.0).astype(np.int64)
    return out


def balance_two_columns(allocatable: Sequence[IntArray], requested: Sequence[IntArray], pod: Sequence[int]) -> IntArray:
    """:func:`balance_score` where every node keeps the same two resources, from one vector per resource
    (``scoring.inputs.ColumnInputs``) and the pod's request added: :func:`_balance_two`'s IEEE operations in the
    same order (an int64 divisor is converted to float64 as ``astype`` converts it), in fewer NumPy calls."""
    (a0, a1), (r0, r1), (p0, p1) = allocatable, requested, pod
    f0 = (r0 + p0).astype(np.float64)
    f0 /= a0
    np.minimum(f0, 1.0, out=f0)
    f1 = (r1 + p1).astype(np.float64)
    f1 /= a1
    np.minimum(f1, 1.0, out=f1)
    f0 -= f1
    f0 /= 2.0
    np.abs(f0, out=f0)
    np.subtract(1.0, f0, out=f0)
    f0 *= 100.0
    np.trunc(f0, out=f0)
    out: IntArray = f0.astype(np.int64)
    return out


def balanced_allocation(
    allocatable: IntArray, node_requested: IntArray, pod_request: IntArray, active: BoolArray, *, delta: bool = True
) -> IntArray | None:
    """Scores per node, or None when the pod requests none of the configured resources (BestEffort skip, v1.33+)."""
    if not np.any(pod_request[active] != 0):
        return None
    with_pod = balance_score(allocatable, node_requested + pod_request[np.newaxis, :], active)
    if not delta:
        return with_pod
    without = balance_score(allocatable, node_requested, active)
    return (50 + (50 + with_pod - without) // 2).astype(np.int64)


def balance_ref(items: Sequence[tuple[int, int]]) -> int:
    """Scalar B over (allocatable, requested) pairs, skipping allocatable 0: the row-by-row form on one node."""
    return _balance_row([a for a, _ in items], [r for _, r in items], [True] * len(items))


def balanced_allocation_ref(items: Sequence[tuple[int, int, int]], *, delta: bool = True) -> int | None:
    """Scalar version over (allocatable, node_requested, pod_request) of the active resources."""
    if all(p == 0 for _, _, p in items):
        return None
    b_with = balance_ref([(a, r + p) for a, r, p in items])
    if not delta:
        return b_with
    b_without = balance_ref([(a, r) for a, r, _ in items])
    return 50 + (50 + b_with - b_without) // 2
