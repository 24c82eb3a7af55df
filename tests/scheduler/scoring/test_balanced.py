"""BalancedAllocation: upstream worked example, delta vs legacy, BestEffort skip, vector == scalar."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler.scoring.balanced import (
    ROW_BY_ROW,
    balance_ref,
    balance_score,
    balance_two_columns,
    balanced_allocation,
    balanced_allocation_ref,
)


def _run(items: list[tuple[int, int, int]], delta: bool) -> int | None:
    alloc = np.array([[a for a, _, _ in items]], dtype=np.int64)
    req = np.array([[r for _, r, _ in items]], dtype=np.int64)
    pod = np.array([p for _, _, p in items], dtype=np.int64)
    got = balanced_allocation(alloc, req, pod, np.ones(len(items), dtype=np.bool_), delta=delta)
    return None if got is None else int(got[0])


@pytest.mark.parametrize(
    ("items", "delta", "want"),
    [
        ([(4000, 0, 3000), (10000, 0, 5000)], False, 87),  # std 0.125 -> int(87.5)
        ([(4000, 0, 3000), (10000, 0, 5000)], True, 68),  # 50 + (50 + 87 - 100) // 2
        ([(4000, 0, 2000), (10000, 0, 5000)], True, 75),  # perfectly balanced: no change
        ([(4000, 4000, 3000), (10000, 0, 5000)], False, 75),  # over-commit capped at 1: |1 - .5| / 2
        ([(4000, 0, 0), (10000, 0, 0)], True, None),  # BestEffort skip
        ([(0, 0, 1000), (10000, 0, 5000)], False, 100),  # one kept resource: std 0
    ],
)
def test_balanced_table(items: list[tuple[int, int, int]], delta: bool, want: int | None) -> None:
    assert balanced_allocation_ref(items, delta=delta) == want
    assert _run(items, delta) == want


def test_three_resources_population_std() -> None:
    # fractions .5, .25, 0 -> mean .25, std sqrt(.125/3) = 0.2041 -> int(79.58) = 79
    assert balance_ref([(4, 2), (4, 1), (4, 0)]) == 79


def test_vector_matches_reference() -> None:
    rng = np.random.default_rng(3)
    alloc = rng.integers(0, 9, size=(400, 3)).astype(np.int64) * 1000
    req = rng.integers(0, 8000, size=(400, 3)).astype(np.int64)
    pod = np.array([1500, 700, 2500], dtype=np.int64)
    act = np.ones(3, dtype=np.bool_)
    for delta in (True, False):
        got = balanced_allocation(alloc, req, pod, act, delta=delta)
        assert got is not None
        for i in range(400):
            items = list(zip(alloc[i].tolist(), req[i].tolist(), pod.tolist(), strict=True))
            assert got[i] == balanced_allocation_ref(items, delta=delta)


@given(st.lists(st.tuples(st.lists(st.integers(-2, 9), min_size=4, max_size=4),
                          st.lists(st.integers(-1000, 12000), min_size=4, max_size=4)), min_size=1, max_size=ROW_BY_ROW),
       st.lists(st.booleans(), min_size=4, max_size=4))
def test_few_nodes_row_by_row_equal_the_vector_form(rows: list[tuple[list[int], list[int]]],
                                                    active: list[bool]) -> None:
    """balance_score of at most ROW_BY_ROW nodes (Python floats) equals the same nodes scored among more."""
    assert len(rows) <= ROW_BY_ROW
    alloc = np.array([[a * 1000 for a in r[0]] for r in rows], dtype=np.int64)
    req = np.array([r[1] for r in rows], dtype=np.int64)
    act = np.array(active, dtype=np.bool_)
    pad = ROW_BY_ROW + 1 - len(rows)   # the same rows among enough others to take the vector form
    wide = balance_score(np.vstack([alloc, np.full((pad, 4), 1000)]), np.vstack([req, np.zeros((pad, 4), dtype=np.int64)]), act)
    got = balance_score(alloc, req, act)
    assert got.dtype == np.int64 and got.tolist() == wide[:len(rows)].tolist()


@given(st.lists(st.tuples(st.integers(1, 64_000), st.integers(0, 80_000), st.integers(1, 64_000),
                          st.integers(0, 80_000)), min_size=ROW_BY_ROW + 1, max_size=40),
       st.sampled_from([(True, True, False), (True, False, True), (False, True, True), (True, False, False),
                        (False, False, False)]))
def test_two_or_fewer_kept_resources_match_the_reference(rows: list[tuple[int, int, int, int]],
                                                         active: tuple[bool, bool, bool]) -> None:
    """Past the row-by-row limit, nodes that all keep the same two resources (or at most one) take a shorter
    vector path: it must give the reference's scores (a third column, inactive, holds other values)."""
    alloc = np.array([[a, b, 7] for a, _, b, _ in rows], dtype=np.int64)
    req = np.array([[r, s, 9] for _, r, _, s in rows], dtype=np.int64)
    on = np.array(active, dtype=np.bool_)
    got = balance_score(alloc, req, on)
    for i in range(len(rows)):
        items = [(int(alloc[i, j]), int(req[i, j])) for j in range(3) if active[j]]
        assert got[i] == balance_ref(items)


@given(st.lists(st.tuples(st.integers(1, 64_000), st.integers(-100, 80_000), st.integers(1, 64 * 2**30),
                          st.integers(-100, 80 * 2**30)), min_size=1, max_size=40),
       st.tuples(st.integers(0, 9000), st.integers(0, 9 * 2**30)))
def test_one_vector_per_resource_equals_the_two_kept_form(rows: list[tuple[int, int, int, int]],
                                                          pod: tuple[int, int]) -> None:
    """balance_two_columns gives balance_score's scores of nodes that all keep the same two resources, the pod's
    request added (fractions past 1 capped; memory amounts in bytes)."""
    alloc = np.array([[a, b] for a, _, b, _ in rows], dtype=np.int64)
    req = np.array([[r, s] for _, r, _, s in rows], dtype=np.int64)
    with_pod = req + np.array(pod, dtype=np.int64)[None, :]
    want = balance_score(np.concatenate([alloc] * (ROW_BY_ROW + 1)), np.concatenate([with_pod] * (ROW_BY_ROW + 1)),
                         np.ones(2, dtype=np.bool_))[:len(rows)]
    got = balance_two_columns([alloc[:, 0], alloc[:, 1]], [req[:, 0], req[:, 1]], list(pod))
    assert got.dtype == np.int64 and got.tolist() == want.tolist()
