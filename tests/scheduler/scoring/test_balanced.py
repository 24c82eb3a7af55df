"""BalancedAllocation: upstream worked example, delta vs legacy, BestEffort skip, vector == scalar."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.scoring.balanced import balance_ref, balanced_allocation, balanced_allocation_ref


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
