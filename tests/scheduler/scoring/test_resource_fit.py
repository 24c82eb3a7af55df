"""NodeResourcesFit strategies: table-driven against docs/design/kube-scoring.md §3-§4 (incl. Go rounding pitfalls)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from common.config import ConfigError
from scheduler.scoring.gomath import go_div, go_round
from scheduler.scoring.resource_fit import (
    ROW_BY_ROW,
    ShapePoint,
    active_resources,
    allocated_columns,
    least_allocated,
    least_allocated_ref,
    most_allocated,
    most_allocated_ref,
    parse_scoring_strategy,
    requested_to_capacity_ratio,
    rtcr_ref,
    shape_score,
)

GI = 1024**3
MI = 1024**2


def _arr(rows: list[list[int]]) -> np.ndarray:
    return np.array(rows, dtype=np.int64)


@pytest.mark.parametrize(("a", "b", "want"), [(7, 2, 3), (-7, 2, -3), (-1000, 30, -33), (1000, -30, -33), (0, 5, 0)])
def test_go_div_truncates_toward_zero(a: int, b: int, want: int) -> None:
    assert go_div(a, b) == want


@pytest.mark.parametrize(("x", "want"), [(22.5, 23), (22.4999, 22), (-22.5, -23), (59.555, 60), (69.44, 69), (0.5, 1)])
def test_go_round_half_away_from_zero(x: float, want: int) -> None:
    assert go_round(x) == want


@pytest.mark.parametrize(
    ("items", "want"),
    [
        ([(4000, 3000, 1), (10000, 5000, 1)], 37),  # 25, 50 -> 75 // 2
        ([(4000, 3000, 1), (10000, 0, 2)], 75),  # (25 + 200) // 3
        ([(4000, 3000, 1), (10000, 5000, 2)], 41),  # (25 + 100) // 3
        ([(4000, 5000, 1), (10000, 0, 1)], 50),  # over-commit scores 0
        ([(0, 5000, 1), (10000, 0, 1)], 100),  # allocatable 0 skipped
        ([(0, 0, 1)], 0),
    ],
)
def test_least_allocated(items: list[tuple[int, int, int]], want: int) -> None:
    assert least_allocated_ref(items) == want
    alloc = _arr([[a for a, _, _ in items]])
    req = _arr([[r for _, r, _ in items]])
    w = np.array([x for _, _, x in items], dtype=np.int64)
    assert least_allocated(alloc, req, w, np.ones(len(items), dtype=np.bool_)).tolist() == [want]


@pytest.mark.parametrize(
    ("items", "want"),
    [
        ([(250, 300, 1)], 100),  # clamped, not 0
        ([(4000, 3000, 1), (10000, 5000, 1)], 62),  # 75, 50
        ([(8, 3, 1)], 37),
        ([(0, 3, 1)], 0),
    ],
)
def test_most_allocated(items: list[tuple[int, int, int]], want: int) -> None:
    assert most_allocated_ref(items) == want
    alloc = _arr([[a for a, _, _ in items]])
    req = _arr([[r for _, r, _ in items]])
    w = np.array([x for _, _, x in items], dtype=np.int64)
    assert most_allocated(alloc, req, w, np.ones(len(items), dtype=np.bool_)).tolist() == [want]


def test_shape_scaled_and_truncated_toward_zero() -> None:
    shape = (ShapePoint(0, 10), ShapePoint(30, 0))
    assert shape_score(10, shape) == 67  # 100 + trunc(-1000/30) = 67, floor would give 66
    assert shape_score(0, shape) == 100
    assert shape_score(50, shape) == 0  # beyond last point
    up = (ShapePoint(0, 0), ShapePoint(100, 10))
    assert [shape_score(p, up) for p in (0, 37, 100)] == [0, 37, 100]


def test_bin_packing_docs_example_gives_60_and_69() -> None:
    """Resource Bin Packing docs: weights foo 5, memory 1, cpu 3; shape {0:0, 100:10}."""
    strategy = parse_scoring_strategy(
        {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "intel.com/foo", "weight": 5}, {"name": "memory", "weight": 1},
                          {"name": "cpu", "weight": 3}],
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
        }
    )
    pod = {"intel.com/foo": 2, "memory": 256 * MI, "cpu": 2000}
    alloc = _arr([[4, 1 * GI, 8000], [8, 1 * GI, 4000]])
    used = _arr([[1, 256 * MI, 1000], [2, 512 * MI, 2000]])
    requested = used + _arr([[pod[n] for n in strategy.names]])
    active = active_resources(strategy.names, pod)
    got = requested_to_capacity_ratio(alloc, requested, strategy.weights, active, strategy.shape)
    assert got.tolist() == [60, 69]
    for i, want in enumerate((60, 69)):
        items = list(zip(alloc[i].tolist(), requested[i].tolist(), strategy.weights.tolist(), strict=True))
        assert rtcr_ref(items, strategy.shape) == want


def test_rtcr_drops_zero_scored_resources() -> None:
    shape = (ShapePoint(0, 10), ShapePoint(100, 0))
    # resource 0 over capacity -> f(100) = 0 -> dropped; resource 1 empty -> 100 => node scores 100 (not 50)
    alloc, req = _arr([[100, 100]]), _arr([[200, 0]])
    w = np.array([1, 1], dtype=np.int64)
    assert requested_to_capacity_ratio(alloc, req, w, np.ones(2, dtype=np.bool_), shape).tolist() == [100]
    assert rtcr_ref([(100, 200, 1), (100, 0, 1)], shape) == 100


def test_scalar_resource_not_requested_is_skipped() -> None:
    names = ("cpu", "memory", "nvidia.com/gpu")
    active = active_resources(names, {"cpu": 1000, "memory": GI})
    assert active.tolist() == [True, True, False]
    alloc, req = _arr([[4000, 4 * GI, 8]]), _arr([[1000, GI, 0]])
    w = np.array([1, 1, 1], dtype=np.int64)
    assert least_allocated(alloc, req, w, active).tolist() == [75]  # not (75+75+100)//3


def test_vector_matches_reference_on_random_nodes() -> None:
    rng = np.random.default_rng(7)
    alloc = rng.integers(0, 5000, size=(300, 3)).astype(np.int64)
    req = rng.integers(0, 6000, size=(300, 3)).astype(np.int64)
    w = np.array([1, 3, 5], dtype=np.int64)
    act = np.ones(3, dtype=np.bool_)
    shape = (ShapePoint(0, 10), ShapePoint(30, 2), ShapePoint(70, 9), ShapePoint(100, 0))
    la = least_allocated(alloc, req, w, act)
    ma = most_allocated(alloc, req, w, act)
    rt = requested_to_capacity_ratio(alloc, req, w, act, shape)
    for i in range(300):
        items = list(zip(alloc[i].tolist(), req[i].tolist(), w.tolist(), strict=True))
        assert la[i] == least_allocated_ref(items)
        assert ma[i] == most_allocated_ref(items)
        assert rt[i] == rtcr_ref(items, shape)


@pytest.mark.parametrize("weights", [(1, 3, 5), (0, 0, 0)])
def test_least_allocated_with_every_resource_kept_matches_reference(weights: tuple[int, int, int]) -> None:
    """Every node keeping every resource (allocatable > 0, all active) takes the unmasked vector form."""
    rng = np.random.default_rng(11)
    alloc = rng.integers(1, 5000, size=(300, 3)).astype(np.int64)
    req = rng.integers(0, 6000, size=(300, 3)).astype(np.int64)
    w = np.array(weights, dtype=np.int64)
    la = least_allocated(alloc, req, w, np.ones(3, dtype=np.bool_))
    for i in range(300):
        assert la[i] == least_allocated_ref(list(zip(alloc[i].tolist(), req[i].tolist(), weights, strict=True)))


def test_strategy_defaults() -> None:
    s = parse_scoring_strategy(None)
    assert s.type == "LeastAllocated" and s.names == ("cpu", "memory") and s.weights.tolist() == [1, 1]
    s = parse_scoring_strategy({"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 0}]})
    assert s.weights.tolist() == [1]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"resources": [{"name": "cpu", "weight": 101}]}, "scoringStrategy.resources[0].weight"),
        ({"resources": [{"name": "cpu", "weight": -1}]}, "scoringStrategy.resources[0].weight"),
        ({"type": "Nope"}, "scoringStrategy.type"),
        ({"type": "RequestedToCapacityRatio"}, "scoringStrategy.requestedToCapacityRatio.shape"),
        ({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
            "shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]}},
         "scoringStrategy.requestedToCapacityRatio.shape[1].utilization"),
        ({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
            "shape": [{"utilization": 0, "score": 11}]}}, "scoringStrategy.requestedToCapacityRatio.shape[0].score"),
    ],
)
def test_strategy_validation_names_field(raw: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_scoring_strategy(raw)
    assert e.value.field == field


@given(st.lists(st.tuples(st.lists(st.integers(-1, 5000), min_size=3, max_size=3),
                          st.lists(st.integers(0, 6000), min_size=3, max_size=3)), min_size=1, max_size=ROW_BY_ROW),
       st.lists(st.booleans(), min_size=3, max_size=3), st.lists(st.integers(1, 5), min_size=3, max_size=3))
def test_few_nodes_row_by_row_equal_the_vector_form(rows: list[tuple[list[int], list[int]]], active: list[bool],
                                                    weights: list[int]) -> None:
    """Least and most allocated on at most ROW_BY_ROW nodes (scalar) equal the same nodes scored among more."""
    alloc, req = _arr([r[0] for r in rows]), _arr([r[1] for r in rows])
    w, act = np.array(weights, dtype=np.int64), np.array(active, dtype=np.bool_)
    pad = ROW_BY_ROW + 1 - len(rows)   # enough other nodes to take the vector form
    wide_alloc, wide_req = np.vstack([alloc, np.full((pad, 3), 1000)]), np.vstack([req, np.zeros((pad, 3), np.int64)])
    for fn in (least_allocated, most_allocated):
        got = fn(alloc, req, w, act)
        assert got.dtype == np.int64 and got.tolist() == fn(wide_alloc, wide_req, w, act)[:len(rows)].tolist()


@given(st.lists(st.tuples(st.integers(1, 64_000), st.integers(-100, 80_000), st.integers(1, 64_000),
                          st.integers(-100, 80_000)), min_size=1, max_size=40),
       st.tuples(st.integers(0, 9000), st.integers(0, 9000)), st.tuples(st.integers(1, 100), st.integers(1, 100)),
       st.sampled_from(["LeastAllocated", "MostAllocated"]))
def test_one_vector_per_resource_equals_the_matrix_form(rows: list[tuple[int, int, int, int]], pod: tuple[int, int],
                                                        weights: tuple[int, int], kind: str) -> None:
    """allocated_columns (every resource kept on every node) gives least_allocated's and most_allocated's scores
    of the same nodes, the pod's request added to the node's (requests above the allocatable included)."""
    alloc = np.array([[a, b] for a, _, b, _ in rows], dtype=np.int64)
    req = np.array([[r, s] for _, r, _, s in rows], dtype=np.int64)
    w = np.array(weights, dtype=np.int64)
    on = np.ones(2, dtype=np.bool_)
    wide = np.concatenate([alloc] * (ROW_BY_ROW + 1)), np.concatenate([req] * (ROW_BY_ROW + 1))   # the vector form
    want = (least_allocated if kind == "LeastAllocated" else most_allocated)(
        wide[0], wide[1] + np.array(pod, dtype=np.int64)[None, :], w, on)[:len(rows)]
    got = allocated_columns(kind, [alloc[:, 0], alloc[:, 1]], [req[:, 0], req[:, 1]], list(pod), list(weights))
    assert got.dtype == np.int64 and got.tolist() == want.tolist()
