"""Many nodes' statuses built in one batch are, node by node, exactly what one node's builder gives: the same
API data (JSON byte for byte, so every float truncated alike) and, typed, the same parsed views."""

from __future__ import annotations

import json
import math
from array import array
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.aggregate import row_means, row_means_array
from agent.nodemetric import (
    USAGE_WITH_PAGE_CACHE,
    USAGE_WITHOUT_PAGE_CACHE,
    MetricCollectPolicy,
    PodMeta,
    PodUsage,
    UsageSample,
    UsageStore,
    build_nodemetric_status,
    reported_quantities,
)
from agent.statuses import build_nodemetric_statuses, reported_pairs, status_layout
from common.cluster import layout
from common.objects import PodsMetric

# Usage values that take every branch of the truncation: fractions, whole cores and KiB, zeros, the quantity
# bounds, beyond int64, NaN and infinities.
AWKWARD = st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.0004, 0.9999, 1024.0, 3 * 1024.0 + 0.5, 2.0**53 / 1000,
                           2.0**53 + 4096, 2.0**63, 1e300, -7.25, math.nan, math.inf, -math.inf])
CORES = st.one_of(st.none(), st.floats(0, 64), AWKWARD)
BYTES = st.one_of(st.none(), st.floats(0, 2.0**38), AWKWARD)
TICK = st.tuples(
    st.sampled_from([1.0, 1.0, 1.0, 0.5, 2.0, 0.0]),  # tick length, in intervals
    CORES,
    BYTES,
    st.one_of(st.none(), st.floats(0, 2.0**38)),
    st.lists(st.tuples(st.sampled_from("abcdef"), CORES, BYTES), max_size=5, unique_by=lambda p: p[0]),
)
METAS = [PodMeta("ns" if u < "d" else "other", f"pod-{u}", u, "koord-prod", "LS") for u in "fedcba"]


def _outcome(build: Any) -> tuple[str, Any]:
    """What a build gives: its statuses as JSON and the typed views, or that it raised (a NaN or infinite usage
    cannot be truncated; with several such reports, the batch may meet another one first)."""
    try:
        statuses = build()
    except (ValueError, OverflowError):
        return "raised", None
    views = [(tuple(s["podsMetric"].pods), s["podsMetric"].node_usage) if type(s["podsMetric"]) is PodsMetric else None
             for s in statuses]
    return json.dumps(statuses), views


# AWKWARD puts infinities of both signs in one window, whose sum is NaN and warned of by NumPy: the test compares
# what the batch and the per-node builds make of such windows, so the warning is expected
@pytest.mark.filterwarnings("ignore:invalid value encountered in reduce:RuntimeWarning")
@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([10, 60, 120, 300]),
    st.sampled_from([(), (300.0, 600.0, 1800.0), (60.0, 90.0)]),
    st.sampled_from([USAGE_WITHOUT_PAGE_CACHE, USAGE_WITH_PAGE_CACHE]),
    st.sampled_from([1.0, 10.0, 60.0]),
    st.lists(st.lists(TICK, min_size=1, max_size=40), min_size=1, max_size=5),
    st.lists(st.sampled_from([0.0, -45.0, 0.25, -600.0]), min_size=1, max_size=5),
    st.booleans(),
    st.booleans(),
)
def test_a_batch_is_each_node_built_alone(
    window: int, durations: tuple[float, ...], memory_policy: str, interval: float, nodes: list[list[Any]],
    lates: list[float], typed: bool, together: bool,
) -> None:
    """``together``: every report at one time (as the simulator's agents report each minute), else each at its
    own."""
    policy = MetricCollectPolicy(aggregate_duration_seconds=window, durations=durations,
                                 node_memory_collect_policy=memory_policy)
    reports: list[tuple[UsageStore, float, list[PodMeta]]] = []
    for k, ticks in enumerate(nodes):
        store = UsageStore(policy, interval)
        t = 1.7e9
        for step, cpu, mem, mem_cache, pods in ticks:
            t += step * interval
            store.record(t, UsageSample(cpu, mem, mem_cache, {u: PodUsage(c, m) for u, c, m in pods}))
        reports.append((store, t + lates[k % len(lates)], METAS[k % 3 :]))
    if together:
        now = max(r[1] for r in reports)
        reports = [(store, now, metas) for store, _, metas in reports]
    alone = _outcome(lambda: [build_nodemetric_status(s, now, policy, metas, typed=typed) for s, now, metas in reports])
    batch = _outcome(lambda: build_nodemetric_statuses(reports, policy, typed=typed))
    assert batch == alone
    if batch[0] != "raised":   # the layout a writer hands over with each status is the status's own
        assert [status_layout(s) for s in json.loads(batch[0])] == [layout(s) for s in json.loads(batch[0])]
        built = build_nodemetric_statuses(reports, policy, typed=typed)
        assert [status_layout(s) for s in built] == [layout(s) for s in built]


# windows of many lengths (past NumPy's blocks of 8 and 128) and of values whose sum depends on its order
WINDOWS = st.lists(st.one_of(st.lists(st.floats(-1e15, 1e15), max_size=10),
                             st.integers(0, 300).flatmap(lambda n: st.lists(st.floats(0, 2.0**38), min_size=n,
                                                                            max_size=n))), max_size=12)


@settings(max_examples=200, deadline=None)
@given(WINDOWS)
def test_the_means_of_a_batch_are_those_of_one_report_float_for_float(windows: list[list[float]]) -> None:
    values = array("d", [v for w in windows for v in w])
    counts = [len(w) for w in windows]
    got = row_means_array(values, counts).tolist()
    assert got == [0.0 if m is None else m for m in row_means(values, counts)]
    assert got == [float(np.array(w).mean()) if w else 0.0 for w in windows]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(CORES, BYTES), max_size=12))
def test_reported_pairs_are_the_scalar_function_of_each_pair(pairs: list[tuple[float | None, float | None]]) -> None:
    means = np.array([0.0 if v is None else v for pair in pairs for v in pair], dtype=np.float64)
    counts = [0 if v is None else 1 for pair in pairs for v in pair]
    try:
        expected: Any = [None if c is None and m is None else reported_quantities(c, m) for c, m in pairs]
    except (ValueError, OverflowError) as exc:
        expected = type(exc)
    try:
        got: Any = reported_pairs(means, counts)
    except (ValueError, OverflowError) as exc:
        got = type(exc)
    assert got == expected
