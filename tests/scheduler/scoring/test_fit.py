"""NodeResourcesFit filter: reason strings/order, strict comparison, unresolvable, ignored extended resources."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.scoring.fit import fit_filter, fit_reasons_ref, is_extended_resource

COLS = ("cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu")


def _run(pod: dict[str, int], alloc: dict[str, int], used: dict[str, int], count: int, **kw: object) -> tuple[
        list[str], bool]:
    a = np.array([[alloc.get(c, 0) for c in COLS]], dtype=np.int64)
    u = np.array([[used.get(c, 0) for c in COLS]], dtype=np.int64)
    res = fit_filter(pod, COLS, a, u, np.array([count], dtype=np.int64), **kw)  # type: ignore[arg-type]
    assert bool(res.mask[0]) == (not res.reasons(0))
    return res.reasons(0), bool(res.unresolvable[0])


NODE = {"cpu": 2000, "memory": 4096, "pods": 3, "ephemeral-storage": 100}


@pytest.mark.parametrize(
    ("pod", "used", "count", "reasons", "unresolvable"),
    [
        ({"cpu": 1000}, {"cpu": 1000}, 0, [], False),  # request == free fits (strict >)
        ({"cpu": 1001}, {"cpu": 1000}, 0, ["Insufficient cpu"], False),
        ({"cpu": 3000, "memory": 5000}, {}, 0, ["Insufficient cpu", "Insufficient memory"], True),
        ({}, {}, 3, ["Too many pods"], False),  # checked even for zero-request pods
        ({"memory": 10, "cpu": 10, "ephemeral-storage": 200}, {}, 3,
         ["Too many pods", "Insufficient ephemeral-storage"], True),
        ({"nvidia.com/gpu": 1}, {}, 0, ["Insufficient nvidia.com/gpu"], True),  # node lacks it: alloc 0
        ({"example.com/aaa": 1}, {}, 0, ["Insufficient example.com/aaa"], True),  # unknown column
    ],
)
def test_fit_reasons(pod: dict[str, int], used: dict[str, int], count: int, reasons: list[str],
                     unresolvable: bool) -> None:
    assert _run(pod, NODE, used, count) == (reasons, unresolvable)
    assert fit_reasons_ref(pod, NODE, used, count) == (reasons, unresolvable)


def test_ignored_extended_resources() -> None:
    assert _run({"nvidia.com/gpu": 1}, NODE, {}, 0, ignored_resources={"nvidia.com/gpu"}) == ([], False)
    assert _run({"nvidia.com/gpu": 1}, NODE, {}, 0, ignored_groups={"nvidia.com"}) == ([], False)
    assert is_extended_resource("nvidia.com/gpu") and not is_extended_resource("kubernetes.io/batch-cpu")
    assert not is_extended_resource("hugepages-2Mi")
