"""Volcano binpack: weights, overflow zeroing, unlisted resources, argument fallbacks."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.scoring.binpack import binpack_ref, binpack_score, parse_binpack_arguments

COLS = ("cpu", "memory", "pods", "nvidia.com/gpu")


def test_arguments_and_fallbacks() -> None:
    w = parse_binpack_arguments({"binpack.weight": 10, "binpack.cpu": -3, "binpack.memory": 2,
                                 "binpack.resources": "nvidia.com/gpu, example.com/foo",
                                 "binpack.resources.nvidia.com/gpu": 5})
    assert w.weight == 10
    assert dict(w.per_resource) == {"cpu": 1, "memory": 2, "nvidia.com/gpu": 5, "example.com/foo": 1}


@pytest.mark.parametrize(
    ("task", "used", "want"),
    [
        ({"cpu": 1000, "memory": 2, "pods": 1}, {"cpu": 1000, "memory": 2}, 100 * (0.5 + 2 * 1.0) / 3),  # memory exactly full: no overflow
        ({"cpu": 1000, "memory": 0, "pods": 1}, {"cpu": 0, "memory": 0}, 100 * 0.25),  # zero request skipped
        ({"cpu": 1000, "memory": 4}, {"cpu": 0, "memory": 4}, 0.0),  # memory overflows: whole score 0
        ({"cpu": 1000, "nvidia.com/gpu": 1}, {"cpu": 0}, 100 * 0.25),  # unlisted scalar ignored
    ],
)
def test_binpack(task: dict[str, int], used: dict[str, int], want: float) -> None:
    w = parse_binpack_arguments({"binpack.memory": 2})
    alloc = {"cpu": 4000, "memory": 4, "pods": 110, "nvidia.com/gpu": 2}
    assert binpack_ref(task, alloc, used, w) == pytest.approx(want)
    a = np.array([[alloc.get(c, 0) for c in COLS]], dtype=np.int64)
    u = np.array([[used.get(c, 0) for c in COLS]], dtype=np.int64)
    assert binpack_score(task, COLS, a, u, w)[0] == pytest.approx(want)


def test_zero_capacity_keeps_weight_in_sum() -> None:
    w = parse_binpack_arguments({})
    alloc = np.array([[4000, 0, 10, 0]], dtype=np.int64)
    used = np.zeros((1, 4), dtype=np.int64)
    got = binpack_score({"cpu": 2000, "memory": 5}, COLS, alloc, used, w)
    assert got[0] == pytest.approx(100 * 0.5 / 2)

