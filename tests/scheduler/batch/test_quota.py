from __future__ import annotations

import pytest

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
