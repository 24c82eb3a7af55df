"""The resource checks kept per task vector must equal a fresh check of every node after any sequence of changes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework.api import TaskStatus
from scheduler.framework.arrays import NodeArrays
from scheduler.framework.evaluate import FITS_FUTURE, FITS_IDLE, ROW_BY_ROW, FitChecks, _fit_bits

COLUMNS = ["cpu", "memory", "pods", "nvidia.com/gpu"]
STATUSES = [TaskStatus.ALLOCATED, TaskStatus.PIPELINED, TaskStatus.RELEASING, TaskStatus.RUNNING]
VECTORS = [np.array(v, dtype=np.int64) for v in ([500, 1 << 30, 1, 0], [2000, 4 << 30, 1, 1], [0, 0, 1, 0])]


def _arrays(n: int) -> NodeArrays:
    return NodeArrays(COLUMNS, [{"cpu": 2500, "memory": 5 << 30, "pods": 110, "nvidia.com/gpu": i % 2}
                                for i in range(n)])


def _fresh(arr: NodeArrays, vec: np.ndarray) -> tuple[list[bool], list[bool]]:
    return arr.fits(vec, arr.idle).tolist(), arr.fits(vec, arr.future_idle()).tolist()


# one step: a task of a vector added to or removed from a node with a status, or a check of a vector
step = st.tuples(st.sampled_from(["add", "remove", "check"]), st.integers(0, 9), st.integers(0, len(VECTORS) - 1),
                 st.integers(0, len(STATUSES) - 1), st.integers(1, 2 * ROW_BY_ROW))


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(step, max_size=40), ignore_gpu=st.booleans())
def test_kept_checks_match_fresh_ones(steps: list[tuple[str, int, int, int, int]], ignore_gpu: bool) -> None:
    """Vectors take turns; between two checks of one vector, one node or many changed (both update paths)."""
    arr = _arrays(10)
    if ignore_gpu:
        arr.fit_ignored = np.array([c == "nvidia.com/gpu" for c in COLUMNS])
    checks = FitChecks(arr, slots=2)   # three vectors in two slots: the least recently used one is dropped
    placed: list[tuple[int, np.ndarray, TaskStatus]] = []
    for kind, i, v, s, repeat in steps:
        vec = VECTORS[v]
        if kind == "add":
            for k in range(repeat):   # many rows changed at once takes the vector path
                row = (i + k) % 10
                arr.add(row, vec, STATUSES[s], (int(vec[0]), int(vec[1])))
                placed.append((row, vec, STATUSES[s]))
        elif kind == "remove" and placed:
            row, pvec, status = placed.pop(i % len(placed))
            arr.remove(row, pvec, status, (int(pvec[0]), int(pvec[1])))
        else:
            fits_idle, fits_future = checks.get(vec)
            assert (fits_idle.tolist(), fits_future.tolist()) == _fresh(arr, vec)


def test_answers_are_copies_and_only_changed_rows_are_redone(monkeypatch: pytest.MonkeyPatch) -> None:
    arr = _arrays(6)
    checks = FitChecks(arr)
    vec = VECTORS[1]
    fits_idle, _ = checks.get(vec)
    fits_idle[:] = False   # a caller narrowing its mask must not change what is kept
    arr.add(3, vec, TaskStatus.ALLOCATED, (2000, 4 << 30))
    seen: list[int] = []
    import scheduler.framework.evaluate as evaluate

    real = evaluate._fit_rows

    def spy(a: NodeArrays, v: np.ndarray, rows: np.ndarray) -> list[int]:
        seen.extend(rows.tolist())
        return real(a, v, rows)
    monkeypatch.setattr(evaluate, "_fit_rows", spy)
    again, future = checks.get(vec)
    assert seen == [3]
    assert (again.tolist(), future.tolist()) == _fresh(arr, vec)


@pytest.mark.parametrize("ignore_gpu", [False, True])
@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("many", [False, True])
def test_each_status_on_both_update_paths(status: TaskStatus, ignore_gpu: bool, many: bool) -> None:
    """A big task of each status placed on one node (or on every node, past the row-by-row limit) between two
    checks of a small task that needs the gpu: the kept answers follow what idle and future idle became."""
    arr = _arrays(2 * ROW_BY_ROW)
    if ignore_gpu:
        arr.fit_ignored = np.array([c == "nvidia.com/gpu" for c in COLUMNS])
    small = np.array([1000, 1 << 30, 1, 1], dtype=np.int64)
    big = np.array([2000, 4 << 30, 1, 0], dtype=np.int64)
    checks = FitChecks(arr)
    checks.get(small)
    for row in range(len(arr)) if many else [2]:   # an even node has no gpu
        arr.add(row, big, status, (2000, 4 << 30))
    fits_idle, fits_future = checks.get(small)
    assert (fits_idle.tolist(), fits_future.tolist()) == _fresh(arr, small)


def _matrix_bits(arr: NodeArrays, vec: np.ndarray, rows: np.ndarray | None) -> list[int]:
    """The check as the [nodes, columns] form made it: NodeArrays.fits on the rows' idle and future idle."""
    idle = arr.idle if rows is None else arr.idle[rows]
    future = arr.future_idle() if rows is None else arr.future_idle()[rows]
    bits = arr.fits(vec, idle).astype(np.int64) * FITS_IDLE + arr.fits(vec, future) * FITS_FUTURE
    out: list[int] = bits.tolist()
    return out


amounts = st.integers(-3000, 3000)


@settings(max_examples=150, deadline=None)
@given(n=st.integers(ROW_BY_ROW + 1, 24), seed=st.integers(0, 2**31), vec=st.lists(st.integers(0, 2500), min_size=4,
       max_size=4), ignored=st.lists(st.booleans(), min_size=4, max_size=4) | st.none(), every=st.booleans())
def test_the_column_form_equals_the_matrix_check(n: int, seed: int, vec: list[int], ignored: list[bool] | None,
                                                 every: bool) -> None:
    """Past the row-by-row limit the rows are gathered at once and compared as whole rows (a column not compared
    asks for the least int64): the same bits as ``NodeArrays.fits`` on the gathered rows (negative idle, releasing
    and pipelined amounts, skipped columns, a vector requesting nothing), for every node or for repeated, unsorted
    rows."""
    rng = np.random.default_rng(seed)
    arr = _arrays(n)
    for m in (arr.idle, arr.releasing, arr.pipelined):
        m[:] = rng.integers(-3000, 3000, m.shape)
    if ignored is not None:
        arr.fit_ignored = np.array(ignored, dtype=np.bool_)
    v = np.array(vec, dtype=np.int64)
    rows = None if every else rng.integers(0, n, ROW_BY_ROW + 1 + int(rng.integers(0, 2 * n)))
    got = _fit_bits(arr, v, rows)
    assert got.dtype == np.uint8 and got.tolist() == _matrix_bits(arr, v, rows)


def test_answers_read_as_booleans_from_the_kept_bits() -> None:
    """The kept bits are bytes; the answers are boolean arrays of their own (a caller may narrow them)."""
    arr = _arrays(ROW_BY_ROW + 3)
    arr.idle[:, 0] = np.arange(len(arr)) * 300
    arr.pipelined[:, 0] = 600
    checks = FitChecks(arr)
    fits_idle, fits_future = checks.get(VECTORS[0])
    assert fits_idle.dtype == np.bool_ and fits_future.dtype == np.bool_
    assert (fits_idle.tolist(), fits_future.tolist()) == _fresh(arr, VECTORS[0])
    fits_idle[:] = False
    fits_future[:] = False
    assert (checks.get(VECTORS[0])[0].tolist(), checks.get(VECTORS[0])[1].tolist()) == _fresh(arr, VECTORS[0])
