"""Node arrays: resource-major matrices and the fit check over their columns."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scheduler.framework.api import TaskStatus
from scheduler.framework.arrays import NodeArrays

COLUMNS = ["cpu", "memory", "pods", "nvidia.com/gpu"]


def test_matrices_are_resource_major_and_stay_so_after_accounting() -> None:
    """Each resource is one contiguous vector over the nodes, from a list of mappings or a (C-ordered) matrix."""
    for alloc in ([{"cpu": 4000, "memory": 8, "pods": 110}] * 5, np.full((5, 4), 7, dtype=np.int64)):
        arr = NodeArrays(COLUMNS, alloc)
        arr.add(2, np.array([100, 1, 1, 0]), TaskStatus.RUNNING, (100, 1))
        arr.add_many([0, 0, 4], [np.array([1, 1, 1, 0, 1, 1])] * 3, [TaskStatus.RUNNING] * 3)
        for m in (arr.allocatable, arr.idle, arr.used, arr.releasing, arr.pipelined, arr.nonzero_requested):
            assert m.flags.f_contiguous and m[:, 0].flags.c_contiguous


@given(st.lists(st.tuples(st.integers(-5, 5), st.integers(-5, 5), st.integers(-5, 5), st.integers(-5, 5)),
                min_size=1, max_size=6),
       st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 4), st.integers(0, 4)),
       st.lists(st.booleans(), min_size=4, max_size=4) | st.none())
def test_fits_is_every_requested_column_within_free(free: list[tuple[int, ...]], want: tuple[int, ...],
                                                    ignored: list[bool] | None) -> None:
    """Row by row: a column counts when the task requests it (> 0) and it is not ignored; a zero request never
    fails, even on negative free."""
    arr = NodeArrays(COLUMNS, np.zeros((len(free), 4), dtype=np.int64))
    if ignored is not None:
        arr.fit_ignored = np.array(ignored)
    vec = np.array(want, dtype=np.int64)
    got = arr.fits(vec, np.asfortranarray(np.array(free, dtype=np.int64)))
    skip = ignored or [False] * 4
    expect = [all(v <= f or v <= 0 or skip[j] for j, (v, f) in enumerate(zip(want, row, strict=True)))
              for row in free]
    assert got.dtype == np.bool_ and got.tolist() == expect
