from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.resources import Resources as R
from scheduler.batch.quota import (
    dominant_share,
    exceeded_part,
    exceeding_requested,
    is_empty,
    less_equal,
    min_dimension,
    share,
)


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [(0, 0, 0.0), (5, 0, 1.0), (1, 4, 0.25), (8, 4, 2.0)],
)
def test_share(left: int, right: int, expected: float) -> None:
    assert share(left, right) == expected


def test_exceeded_part_keeps_positive_differences() -> None:
    assert exceeded_part(R(cpu=5, memory=3), R(cpu=2, memory=7, gpu=1)) == R(cpu=3)


def test_min_dimension_zero_and_infinity() -> None:
    left = R(cpu=5, memory=3)
    right = R(cpu=2)
    assert min_dimension(left, right, missing_unlimited=True) == R(cpu=2, memory=3)
    assert min_dimension(left, right, missing_unlimited=False) == R(cpu=2)


def test_less_equal() -> None:
    assert less_equal(R(cpu=2), R(cpu=2, memory=1))
    assert not less_equal(R(cpu=3), R(cpu=2))
    assert not less_equal(R(gpu=1), R(cpu=2))
    assert less_equal(R(gpu=1), R(cpu=2), missing_unlimited=True)


def test_exceeding_requested_ignores_pods_and_unrequested() -> None:
    used = R(cpu=5, memory=9, pods=100)
    bound = R(cpu=4, memory=1, pods=1)
    assert exceeding_requested(used, bound, R(cpu=1, pods=1)) == ["cpu"]
    assert exceeding_requested(used, bound, R(pods=1)) == []
    assert exceeding_requested(R(gpu=1), R(), R(gpu=1)) == ["gpu"]


def test_dominant_share_and_empty() -> None:
    assert dominant_share(R(cpu=500, memory=10), R(cpu=1000, memory=100, pods=10)) == (0.5, "cpu")
    assert dominant_share(R(), R(cpu=1)) == (0.0, "cpu")
    assert is_empty(R(pods=3))
    assert not is_empty(R(cpu=1))


_AMOUNTS = st.dictionaries(st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu"]), st.integers(-4, 9),
                           max_size=4)


@given(_AMOUNTS, _AMOUNTS)
def test_dominant_share_is_the_largest_share_first_by_name(allocated: dict[str, int], total: dict[str, int]) -> None:
    """Volcano's definition, share by share in name order over the total's positive dimensions."""
    best, best_name = 0.0, ""
    for name in sorted(total):
        if total[name] > 0:
            value = share(allocated.get(name, 0), total[name])
            if value > best or not best_name:
                best, best_name = value, name
    assert dominant_share(R(allocated), R(total)) == (best, best_name)
    assert dominant_share(allocated, total) == (best, best_name)
