import numpy as np
import pytest

from common.percentile import aggregate, aggregate_columns, nearest_rank, nearest_rank_index


def test_koordlet_indices() -> None:
    # docs/design/nodemetric.md §3: n=300 -> p95 is the 285th smallest, p99 the 297th, p50 the 150th
    assert nearest_rank_index(300, 0.95) == 284
    assert nearest_rank_index(300, 0.99) == 296
    assert nearest_rank_index(300, 0.5) == 149
    assert nearest_rank_index(1, 0.5) == 0


def test_no_interpolation() -> None:
    assert nearest_rank([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0
    assert nearest_rank([4.0, 3.0, 2.0, 1.0], 0.99) == 3.0


def test_aggregate_and_columns_agree() -> None:
    rng = np.random.default_rng(1)
    m = rng.random((301, 3))
    cols = aggregate_columns(m)
    for j in range(3):
        single = aggregate(m[:, j])
        for k, v in single.items():
            assert cols[k][j] == pytest.approx(v)
    assert aggregate([]) == {}
