"""Scoring inputs: non-zero defaults for Least/Most/RTCR only, real requests for BalancedAllocation."""

from __future__ import annotations

import numpy as np

from common.objects import PodView
from scheduler.scoring.inputs import scoring_inputs
from scheduler.scoring.resource_fit import least_allocated

COLS = ("cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu")
MI = 1024**2


def test_non_zero_defaults_only_when_asked() -> None:
    empty = PodView.parse({"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": [{"name": "c"}]}})
    alloc = np.array([[1000, 1000 * MI, 110, 0, 0]], dtype=np.int64)
    requested = np.zeros((1, 5), dtype=np.int64)
    nonzero = np.array([[100, 200 * MI]], dtype=np.int64)  # one request-less pod already bound
    names = ("cpu", "memory", "nvidia.com/gpu")
    a, r, p, act = scoring_inputs(names, empty, COLS, alloc, requested, nonzero, non_zero=True)
    assert p.tolist() == [100, 200 * MI, 0] and r.tolist() == [[100, 200 * MI, 0]]
    assert act.tolist() == [True, True, False]
    # (1000-200)*100//1000 = 80 for cpu, (1000-400)*100//1000 = 60 for memory -> 70; gpu skipped
    assert least_allocated(a, r + p, np.array([1, 1, 1], dtype=np.int64), act).tolist() == [70]
    _, r2, p2, _ = scoring_inputs(names, empty, COLS, alloc, requested, nonzero, non_zero=False)
    assert p2.tolist() == [0, 0, 0] and r2.tolist() == [[0, 0, 0]]
