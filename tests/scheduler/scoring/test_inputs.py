"""Scoring inputs: non-zero defaults for Least/Most/RTCR only, real requests for BalancedAllocation."""

from __future__ import annotations

import numpy as np
import pytest

from common.objects import PodView
from scheduler.scoring.inputs import ColumnInputs, scoring_inputs, scoring_rows
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


def _pod(cpu: str | None, memory: str | None, gpu: str | None) -> PodView:
    req = {k: v for k, v in (("cpu", cpu), ("memory", memory), ("nvidia.com/gpu", gpu)) if v is not None}
    return PodView.parse({"metadata": {"name": "p", "namespace": "d"},
                          "spec": {"containers": [{"name": "c", "resources": {"requests": req}}]}})


@pytest.mark.parametrize("non_zero", [True, False])
@pytest.mark.parametrize("names", [("cpu", "memory"), ("cpu", "memory", "nvidia.com/gpu"), ("memory", "hugepages-2Mi")])
def test_rows_read_what_the_matrices_hold(non_zero: bool, names: tuple[str, ...]) -> None:
    """scoring_rows on a few nodes gives scoring_inputs' rows for them, value for value (a name missing from the
    columns reads 0), for pods with and without requests."""
    rng = np.random.default_rng(5)
    alloc = rng.integers(0, 5000, (9, len(COLS))).astype(np.int64)
    requested = rng.integers(0, 5000, (9, len(COLS))).astype(np.int64)
    nonzero = rng.integers(0, 5000, (9, 2)).astype(np.int64)
    rows = [7, 2, 5]
    for pod in (_pod("300m", "1Gi", "1"), _pod(None, None, None), _pod("1", None, None)):
        a, r, p, act = scoring_inputs(names, pod, COLS, alloc[rows], requested[rows], nonzero[rows], non_zero=non_zero)
        got = scoring_rows(names, pod, COLS, alloc, requested, nonzero, rows, non_zero=non_zero)
        assert (got.allocatable, got.requested, got.pod_request, got.active) == (
            a.tolist(), r.tolist(), p.tolist(), act.tolist())


@pytest.mark.parametrize("non_zero", [True, False])
@pytest.mark.parametrize("names", [("cpu", "memory"), ("memory", "pods", "cpu"), ("cpu", "nvidia.com/gpu")])
def test_column_inputs_read_what_scoring_inputs_reads(non_zero: bool, names: tuple[str, ...]) -> None:
    """ColumnInputs.read gives, per configured resource, scoring_inputs' allocatable and requested columns for
    some rows (unsorted, repeated) or every node; its pod request and whether every resource counts too."""
    rng = np.random.default_rng(8)
    alloc = np.asfortranarray(rng.integers(1, 5000, (9, len(COLS))).astype(np.int64))
    requested = np.asfortranarray(rng.integers(0, 5000, (9, len(COLS))).astype(np.int64))
    nonzero = np.asfortranarray(rng.integers(0, 5000, (9, 2)).astype(np.int64))
    inputs = ColumnInputs(names, COLS, alloc, non_zero=non_zero)
    assert inputs.usable
    for rows in (np.array([7, 2, 5, 2]), None):
        sel = slice(None) if rows is None else rows
        for pod in (_pod("300m", "1Gi", "1"), _pod(None, None, None)):
            a, r, p, act = scoring_inputs(names, pod, COLS, alloc[sel], requested[sel], nonzero[sel],
                                          non_zero=non_zero)
            got_a, got_r = inputs.read(alloc, requested, nonzero, rows)
            assert [c.tolist() for c in got_a] == a.T.tolist() and [c.tolist() for c in got_r] == r.T.tolist()
            assert inputs.pod_request(pod) == p.tolist() and inputs.active(pod) == bool(act.all())


def test_column_inputs_not_usable_where_a_node_would_leave_a_resource_out() -> None:
    alloc = np.array([[1000, 10, 5, 1, 0], [1000, 10, 5, 1, 3]], dtype=np.int64)
    assert ColumnInputs(("cpu", "memory"), COLS, alloc, non_zero=True).usable
    assert not ColumnInputs(("cpu", "nvidia.com/gpu"), COLS, alloc, non_zero=True).usable   # one node has none
    assert not ColumnInputs(("cpu", "hugepages-2Mi"), COLS, alloc, non_zero=True).usable   # no column
