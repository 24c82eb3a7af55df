"""Load-aware Filter/Score (docs/design/loadaware.md §5-§8): worked numbers, strict comparisons, rounding,
expiry, annotations, prod and aggregated profiles, DaemonSet skip and burst safety."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from common.objects import NodeMetricView
from scheduler.loadaware.args import parse_loadaware_args
from scheduler.loadaware.cache import AssignedPodCache, assigned_pod
from scheduler.loadaware.estimator import estimate_pod, estimate_vector
from scheduler.loadaware.evaluate import ROW_BY_ROW, LoadAwareState
from scheduler.loadaware.profile import USAGE_THRESHOLDS_ANNOTATION
from tests.scheduler.loadaware.helpers import GI, metric, pod, state

BIG = {"n1": (96000, 512 * GI)}
INCOMING = pod("in", requests={"cpu": "16", "memory": "32Gi"}, limits={"cpu": "16", "memory": "32Gi"})


def _est(args_raw: dict[str, object] | None = None, p: object = INCOMING) -> np.ndarray:
    args = parse_loadaware_args(args_raw)
    return estimate_vector(estimate_pod(p, args.estimated_scaling_factors), args.resource_names)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("raw", "usage", "assigned", "incoming", "want"),
    [
        (None, (0, 0), False, INCOMING, 90),  # cpu 85, mem 95
        (None, (32000, 10 * GI), False, INCOMING, 72),  # 52 & 93
        (None, (32000, 10 * GI), True, INCOMING, 63),  # + unreported 16/32Gi assigned pod: 38 & 89
        ({"dominantResourceWeight": 10}, (0, 0), False, INCOMING, 85),  # min(85, 95)
        (None, (0, 0), False, pod("be"), 99),  # empty BestEffort pod
    ],
)
def test_score_worked_numbers(raw: dict[str, object] | None, usage: tuple[int, int], assigned: bool,
                              incoming: object, want: int) -> None:
    args = parse_loadaware_args(raw)
    cache = AssignedPodCache()
    if assigned:
        other = pod("old", requests={"cpu": "16", "memory": "32Gi"}, limits={"cpu": "16", "memory": "32Gi"})
        cache.add(assigned_pod(other, "n1", 1005.0, args))
    st = state(args, BIG, [metric("n1", cpu_milli=usage[0], memory=usage[1])], cache=cache)
    assert st.score(_est(raw, incoming), is_prod=True).tolist() == [want]


def test_score_zero_without_metric_expired_or_no_status() -> None:
    args = parse_loadaware_args({"filterExpiredNodeMetrics": False})
    nodes = {"none": (96000, 512 * GI), "old": (96000, 512 * GI), "nostatus": (96000, 512 * GI),
             "ok": (96000, 512 * GI)}
    metrics = [metric("old", update=1010.0 - 180), metric("nostatus", status=False), metric("ok")]
    st = state(args, nodes, metrics)
    assert st.score(_est(), is_prod=False).tolist() == [0, 0, 0, 90]


def test_filter_rounding_is_half_away_and_comparison_strict() -> None:
    args = parse_loadaware_args({"usageThresholds": {"cpu": 65}})
    # estimate of a 1-cpu pod = 850m; node 100 cpu
    nodes = {"a": (100000, 512 * GI), "b": (100000, 512 * GI), "c": (100000, 512 * GI)}
    one = pod("x", requests={"cpu": "1"}, limits={"cpu": "1"})
    metrics = [metric("a", cpu_milli=64150 + 40), metric("b", cpu_milli=64650), metric("c", cpu_milli=64000)]
    st = state(args, nodes, metrics)
    # a: 65.04% -> 65 passes; b: 65.5% -> 66 fails; c: 64.85% -> 65 passes
    e = estimate_vector(estimate_pod(one, args.estimated_scaling_factors), args.resource_names)
    res = st.filter(e, is_prod=False, is_daemonset=False)
    assert res.mask.tolist() == [True, False, True]
    assert st.reasons(res) == {1: ["node(s) cpu usage exceed threshold"]}
    assert st.filter(e, is_prod=False, is_daemonset=True).mask.all()
    # node by node (a few rows), the same rounding: b fails on cpu, a and c pass
    assert st.filter_packed(e, is_prod=False, rows=np.array([0, 1, 2])).tolist() == st.packed(res).tolist()
    assert st.packed(res).tolist()[1] != 0
    # and as a vector, over every node and over more rows than node by node
    assert st.filter_packed(e, is_prod=False).tolist() == st.packed(res).tolist()
    many = np.array([2, 1, 0] * ROW_BY_ROW)
    assert st.filter_packed(e, is_prod=False, rows=many).tolist() == st.packed(res)[many].tolist()


@pytest.mark.parametrize(
    ("raw", "age", "want_pass", "reason"),
    [
        (None, 179.9, False, "node(s) cpu usage exceed threshold"),  # still fresh: thresholds checked
        (None, 180.0, False, "node(s) nodeMetric expired"),  # >= expires
        ({"enableScheduleWhenNodeMetricsExpired": True}, 10_000.0, True, None),
        ({"filterExpiredNodeMetrics": False}, 10_000.0, False, "node(s) cpu usage exceed threshold"),  # stale data
        ({"usageThresholds": {"cpu": 0, "memory": 0}}, 10_000.0, True, None),  # all-zero thresholds pass first
    ],
)
def test_filter_expiry(raw: dict[str, object] | None, age: float, want_pass: bool, reason: str | None) -> None:
    args = parse_loadaware_args(raw)
    st = state(args, {"n": (10000, 64 * GI)}, [metric("n", cpu_milli=9000, update=1000.0)], now=1000.0 + age)
    res = st.filter(_est(raw), is_prod=False, is_daemonset=False)
    assert bool(res.mask[0]) is want_pass
    if reason:
        assert st.reasons(res) == {0: [reason]}


def test_no_metric_or_no_status_passes() -> None:
    args = parse_loadaware_args(None)
    st = state(args, {"a": (1000, GI), "b": (1000, GI)}, [metric("b", status=False)])
    assert st.filter(_est(), is_prod=False, is_daemonset=False).mask.tolist() == [True, True]


def test_node_annotation_replaces_part_wholesale() -> None:
    args = parse_loadaware_args(None)
    ann = {"a": {USAGE_THRESHOLDS_ANNOTATION: json.dumps({"usageThresholds": {"memory": 60}})},
           "b": {USAGE_THRESHOLDS_ANNOTATION: "{broken"}}
    nodes = {"a": (100000, 100 * GI), "b": (100000, 100 * GI)}
    metrics = [metric("a", cpu_milli=90000, memory=55 * GI), metric("b", cpu_milli=90000, memory=55 * GI)]
    st = state(args, nodes, metrics, annotations=ann)
    small = pod("s", requests={"cpu": "100m", "memory": "1Gi"}, limits={"cpu": "100m", "memory": "1Gi"})
    e = estimate_vector(estimate_pod(small, args.estimated_scaling_factors), args.resource_names)
    res = st.filter(e, is_prod=False, is_daemonset=False)
    assert res.mask.tolist() == [True, False]  # a: cpu unchecked, mem 56% <= 60; b: plugin cpu 65 applies
    detail = st.thresholds_for(0, e, is_prod=False)
    assert detail.source == "node annotation" and detail.thresholds == {"memory": 60}


def test_prod_thresholds_use_reported_prod_usage_only() -> None:
    args = parse_loadaware_args({"prodUsageThresholds": {"cpu": 50}})
    cache = AssignedPodCache()
    known = pod("known", requests={"cpu": "1"}, limits={"cpu": "1"})
    cache.add(assigned_pod(known, "n", 0.0, args))  # old: reported, not re-estimated
    pods = [{"namespace": "default", "name": "known", "priority": "koord-prod",
             "podUsage": {"resources": {"cpu": "40"}}},
            {"namespace": "default", "name": "stranger", "priority": "koord-prod",
             "podUsage": {"resources": {"cpu": "30"}}}]
    st = state(args, {"n": (100000, 100 * GI)}, [metric("n", cpu_milli=80000, pods=pods)], cache=cache)
    e = _est({"prodUsageThresholds": {"cpu": 50}})  # 13.6 cpu
    prod = st.filter(e, is_prod=True, is_daemonset=False)
    assert prod.mask.tolist() == [False]  # 40 + 13.6 = 53.6 -> 54 > 50 (stranger's 30 not counted)
    batch = st.filter(e, is_prod=False, is_daemonset=False)
    assert batch.mask.tolist() == [False]  # 80 + 13.6 > 65 on node usage
    small = estimate_vector({"cpu": 5000}, args.resource_names)
    assert st.filter(small, is_prod=True, is_daemonset=False).mask.tolist() == [True]  # 45 <= 50


def test_aggregated_profile_replaces_plain_thresholds_and_missing_window_uses_estimates() -> None:
    raw = {"aggregated": {"usageThresholds": {"cpu": 50}, "usageAggregationType": "p95",
                          "usageAggregatedDuration": "10m"}}
    args = parse_loadaware_args(raw)
    agg5 = [{"duration": "5m", "usage": {"p95": {"resources": {"cpu": "70"}}}}]
    agg10 = [{"duration": "10m", "usage": {"p95": {"resources": {"cpu": "40"}}}}]
    nodes = {"cold": (100000, 100 * GI), "warm": (100000, 100 * GI)}
    metrics = [metric("cold", cpu_milli=90000, aggregated=agg5), metric("warm", cpu_milli=90000, aggregated=agg10)]
    st = state(args, nodes, metrics)
    e = estimate_vector({"cpu": 5000}, args.resource_names)
    res = st.filter(e, is_prod=False, is_daemonset=False)
    # cold: 10m window missing -> sum of assigned estimates (0) + 5 = 5%; warm: p95 40 + 5 = 45% (plain 65 unused)
    assert res.mask.tolist() == [True, True]
    e2 = estimate_vector({"cpu": 11000}, args.resource_names)
    res2 = st.filter(e2, is_prod=False, is_daemonset=False)
    assert res2.mask.tolist() == [True, False]
    assert st.reasons(res2) == {1: ["node(s) cpu aggregated usage exceed threshold"]}


def test_waterline_cap_with_margin() -> None:
    args = parse_loadaware_args({"usageThresholds": {"cpu": 90}})
    caps = np.array([[70, 0], [70, 0]], dtype=np.int64)
    st = state(args, {"a": (100000, 100 * GI), "b": (100000, 100 * GI)},
               [metric("a", cpu_milli=60000), metric("b", cpu_milli=66000)], waterline=caps)
    e = estimate_vector({"cpu": 4000}, args.resource_names)
    res = st.filter(e, is_prod=False, is_daemonset=False)
    assert res.mask.tolist() == [True, False]  # 64 <= 65, 70 > 70-5
    assert st.reasons(res) == {1: ["node(s) cpu usage exceed waterline"]}
    off = state(parse_loadaware_args({"usageThresholds": {"cpu": 90}, "respectWaterlines": False}),
                {"b": (100000, 100 * GI)}, [metric("b", cpu_milli=66000)], waterline=caps[:1])
    assert off.filter(e, is_prod=False, is_daemonset=False).mask.tolist() == [True]


def test_burst_is_spread_by_assigned_pod_estimates() -> None:
    """50 identical pods in one session onto 10 idle nodes whose metrics predate the session."""
    args = parse_loadaware_args(None)
    nodes = {f"n{i}": (16000, 64 * GI) for i in range(10)}
    st = state(args, nodes, [metric(n, update=1000.0) for n in nodes], now=1100.0)
    placed: dict[str, int] = {}
    for j in range(50):
        p = pod(f"b{j}", requests={"cpu": "1", "memory": "2Gi"}, limits={"cpu": "1", "memory": "2Gi"})
        e = estimate_vector(estimate_pod(p, args.estimated_scaling_factors), args.resource_names)
        feasible = st.filter(e, is_prod=True, is_daemonset=False).mask
        scores = np.where(feasible, st.score(e, is_prod=True), -1)
        best = int(np.argmax(scores))
        assert feasible[best]
        st.reserve(assigned_pod(p, st.node_names[best], 1100.0, args))
        placed[st.node_names[best]] = placed.get(st.node_names[best], 0) + 1
    assert sorted(placed.values()) == [5] * 10
    # and unreserve gives the node back its score
    before = st.score(e, is_prod=True)[0]
    st.unreserve("default/b0")
    assert st.score(e, is_prod=True)[0] >= before


@pytest.mark.parametrize("value", ["1e30", "NaN", "Infinity", "-Infinity", "1e400"])
def test_node_annotation_threshold_beyond_int64_is_ignored(value: str) -> None:
    # such a node annotation used to fail every session; now that part falls back to the plugin's thresholds
    args = parse_loadaware_args(None)
    ann = {"a": {USAGE_THRESHOLDS_ANNOTATION: f'{{"usageThresholds": {{"cpu": {value}}}}}'}}
    st = state(args, {"a": (100000, 100 * GI)}, [metric("a", cpu_milli=90000, memory=10 * GI)], annotations=ann)
    small = pod("s", requests={"cpu": "100m", "memory": "1Gi"}, limits={"cpu": "100m", "memory": "1Gi"})
    e = estimate_vector(estimate_pod(small, args.estimated_scaling_factors), args.resource_names)
    assert st.filter(e, is_prod=False, is_daemonset=False).mask.tolist() == [False]  # the plugin's 65% applies
    assert st.thresholds_for(0, e, is_prod=False).source == "plugin"


def test_filter_and_score_on_rows_equal_the_whole_on_those_rows_and_the_filter_packs_losslessly() -> None:
    """The row caches rely on it: any node's filter outcome and score depend on that node alone."""
    args = parse_loadaware_args({"usageThresholds": {"cpu": 65, "memory": 80},
                                 "prodUsageThresholds": {"cpu": 55}, "filterExpiredNodeMetrics": True})
    rng = np.random.default_rng(5)
    names = [f"n{i}" for i in range(24)]
    nodes = {nm: (100000, 512 * GI) for nm in names}
    metrics = [metric(nm, cpu_milli=int(rng.integers(0, 90000)), memory=int(rng.integers(0, 500)) * GI,
                      update=1010.0 - (400 if i % 7 == 3 else 0), status=i % 11 != 5)
               for i, nm in enumerate(names) if i % 9 != 4]
    st = state(args, nodes, metrics)
    rows = np.array([0, 3, 4, 5, 17, 23], dtype=np.int64)
    for cpu in ("1", "8", "30"):
        e = _est(None, pod("x", requests={"cpu": cpu, "memory": "8Gi"}, limits={"cpu": cpu, "memory": "8Gi"}))
        for is_prod in (False, True):
            whole = st.filter(e, is_prod=is_prod, is_daemonset=False)
            part = st.filter(e, is_prod=is_prod, is_daemonset=False, rows=rows)
            for field in ("mask", "failed_resource", "reason_code", "prod_pod"):
                assert getattr(part, field).tolist() == getattr(whole, field)[rows].tolist(), (cpu, field)
            back = st.unpacked(st.packed(whole), is_prod=is_prod)
            assert st.reasons(back) == st.reasons(whole) and back.mask.tolist() == whole.mask.tolist()
            assert st.score(e, is_prod=is_prod, rows=rows).tolist() == st.score(e, is_prod=is_prod)[rows].tolist()
    assert len({code for code in st.filter(_est(), is_prod=False, is_daemonset=False).reason_code.tolist()}) > 2


_node = hst.tuples(hst.sampled_from([0, 4000, 96000]), hst.sampled_from([0, 8 * GI, 512 * GI]),   # allocatable
                  hst.integers(0, 120_000), hst.integers(0, 600).map(lambda g: g * GI),           # reported usage
                  hst.sampled_from(["fresh", "expired", "no status", "no metric"]),
                  hst.integers(0, 100), hst.integers(0, 100))                                    # waterline caps


@settings(max_examples=150, deadline=None)
@given(hst.lists(_node, min_size=1, max_size=7), hst.integers(0, 40_000), hst.integers(0, 64).map(lambda g: g * GI),
       hst.integers(0, 100), hst.integers(0, 100), hst.integers(0, 100), hst.booleans(), hst.booleans(), hst.booleans(),
       hst.booleans(), hst.data())
def test_a_few_rows_node_by_node_equal_the_vector_form(
        nodes: list[tuple[int, int, int, int, str, int, int]], est_cpu: int, est_mem: int, cpu_thr: int, prod_thr: int,
        dominant: int, is_prod: bool, score_prod: bool, schedule_expired: bool, waterline: bool,
        data: hst.DataObject) -> None:
    """filter_packed and score on at most ROW_BY_ROW rows (Python, node by node) equal the vector form's rows, and
    filter_packed's own vector form equals filter's outcome packed."""
    args = parse_loadaware_args({"usageThresholds": {"cpu": cpu_thr, "memory": 90},
                                 "prodUsageThresholds": {"cpu": prod_thr}, "dominantResourceWeight": dominant,
                                 "scoreAccordingProdUsage": score_prod,
                                 "enableScheduleWhenNodeMetricsExpired": schedule_expired})
    names = [f"n{i}" for i in range(len(nodes))]
    metrics = [metric(n, cpu_milli=cpu, memory=mem, update=1010.0 - (200 if kind == "expired" else 5),
                      status=kind != "no status")
               for n, (_, _, cpu, mem, kind, _, _) in zip(names, nodes, strict=True) if kind != "no metric"]
    caps = np.array([[c, m] for *_, c, m in nodes], dtype=np.int64) if waterline else None
    s = state(args, {n: (a, m) for n, (a, m, *_) in zip(names, nodes, strict=True)}, metrics, waterline=caps)
    est = np.array([est_cpu, est_mem], dtype=np.int64)
    rows = np.array(data.draw(hst.lists(hst.integers(0, len(nodes) - 1), min_size=1, max_size=ROW_BY_ROW)))
    full = s.packed(s.filter(est, is_prod=is_prod, is_daemonset=False))
    assert s.filter_packed(est, is_prod=is_prod, rows=rows).tolist() == full[rows].tolist()
    # and the packed vector form (every node, or more rows than node by node) equals filter's outcome
    assert s.filter_packed(est, is_prod=is_prod).tolist() == full.tolist()
    every = np.arange(len(nodes))
    assert s.filter_packed(est, is_prod=is_prod, rows=np.concatenate([every] * 2)).tolist() == full[
        np.concatenate([every] * 2)].tolist()
    assert s.score(est, is_prod=is_prod, rows=rows).tolist() == s.score(est, is_prod=is_prod)[rows].tolist()
    # a run's forms (Python values in and out), on a few rows and on more than node by node
    passes, scores = s.passes_rows_of(est, is_prod=is_prod), s.score_rows_of(est, is_prod=is_prod, weight=3)
    for at in (rows.tolist(), [*every.tolist()] * 2):
        assert passes(at) == (full[at] == 0).tolist()
        assert scores(at) == (s.score(est, is_prod=is_prod)[at] * 3).tolist()


def _matrix_score(s: LoadAwareState, est: np.ndarray, *, is_prod: bool) -> list[int]:
    """The score over every node as the masked [nodes, resources] form computes it (a node with an allocatable of
    0 leaves that resource at 0)."""
    dominant = s.args.dominant_resource_weight
    load = s.load_prod if s.args.score_according_prod_usage and is_prod else s.load_score
    used = load + est[None, :]
    safe = np.where(s.allocatable > 0, s.allocatable, 1)
    free = np.where((s.allocatable == 0) | (used > s.allocatable), 0, (s.allocatable - used) * 100 // safe)
    total = (free * s.weights[None, :]).sum(axis=1)
    if dominant:
        total = total + dominant * np.minimum(free.min(axis=1, initial=100), 100)
    wsum = int(s.weights.sum()) + dominant
    out = total // wsum if wsum > 0 else np.zeros(len(total), dtype=np.int64)
    valid = s.has_metric & ~s.expired & s.has_status
    scores: list[int] = np.where(valid, out, 0).tolist()
    return scores


_near = hst.tuples(hst.integers(1, 40), hst.booleans(), hst.integers(1, 4000), hst.integers(-3, 3),   # see below
                  hst.sampled_from(["fresh", "fresh", "expired", "no status", "no metric"]))


@settings(max_examples=200, deadline=None)
@given(hst.lists(_near, min_size=ROW_BY_ROW + 1, max_size=12), hst.integers(1, 99), hst.integers(0, 300),
       hst.booleans(), hst.randoms())
def test_a_runs_plain_filter_compares_unrounded_percents_with_half_above_the_thresholds(
        nodes: list[tuple[int, bool, int, int, str]], cpu_thr: int, est_cpu: int, schedule_expired: bool,
        order: random.Random) -> None:
    """A run's filter on more rows than node by node, where no node takes prod thresholds or caps, compares the
    unrounded percents with each threshold plus one half: filter's outcome on every node, with the cpu percents
    drawn on the half points above the threshold (an allocatable of a multiple of 200 millicores) and a few
    millicores around them, or around the threshold plus one half over any allocatable (rounding in between)."""
    args = parse_loadaware_args({"usageThresholds": {"cpu": cpu_thr, "memory": 90},
                                 "filterExpiredNodeMetrics": True,
                                 "enableScheduleWhenNodeMetricsExpired": schedule_expired})
    names = [f"n{i}" for i in range(len(nodes))]
    alloc = {n: (200 * m if on_half else any_alloc, 64 * GI)
             for n, (m, on_half, any_alloc, _, _) in zip(names, nodes, strict=True)}
    metrics = []
    for n, (_, _, _, delta, kind) in zip(names, nodes, strict=True):
        cpu = alloc[n][0]
        # the load at which the percent is the threshold plus one half (exactly, on a multiple of 200), moved
        used = max(0, (cpu * (2 * cpu_thr + 1)) // 200 + delta - est_cpu)
        if kind != "no metric":
            metrics.append(metric(n, cpu_milli=used, memory=GI, update=1010.0 - (200 if kind == "expired" else 5),
                                  status=kind != "no status"))
    s = state(args, alloc, metrics)
    est = np.array([est_cpu, 0], dtype=np.int64)
    full = s.filter_packed(est, is_prod=False, rows=np.arange(len(nodes)))
    assert full.tolist() == s.packed(s.filter(est, is_prod=False, is_daemonset=False)).tolist()
    at = list(range(len(nodes))) * 2
    order.shuffle(at)
    assert s.passes_rows_of(est, is_prod=False)(at) == (full[at] == 0).tolist()


_sized = hst.tuples(hst.integers(1, 128_000), hst.integers(1, 1024).map(lambda g: g * GI),          # allocatable
                    hst.integers(0, 160_000), hst.integers(0, 1200).map(lambda g: g * GI),          # reported usage
                    hst.sampled_from(["fresh", "expired", "no status", "no metric"]))


@settings(max_examples=150, deadline=None)
@given(hst.lists(_sized, min_size=1, max_size=9), hst.integers(0, 40_000), hst.integers(0, 64).map(lambda g: g * GI),
       hst.integers(0, 100), hst.integers(0, 100), hst.integers(1, 100), hst.integers(1, 100), hst.booleans(),
       hst.booleans(), hst.data())
def test_every_allocatable_positive_takes_the_unmasked_forms(
        nodes: list[tuple[int, int, int, int, str]], est_cpu: int, est_mem: int, cpu_thr: int, dominant: int,
        cpu_weight: int, mem_weight: int, is_prod: bool, score_prod: bool, data: hst.DataObject) -> None:
    """With no node's allocatable 0 the score computes what is free in place and the plain filter compares a
    percent only where a threshold is checked: the masked form's scores, and filter's outcome packed, on every
    node and on more rows than node by node (unsorted, repeated)."""
    args = parse_loadaware_args({"usageThresholds": {"cpu": cpu_thr, "memory": 90},
                                 "resourceWeights": {"cpu": cpu_weight, "memory": mem_weight},
                                 "dominantResourceWeight": dominant, "scoreAccordingProdUsage": score_prod})
    names = [f"n{i}" for i in range(len(nodes))]
    metrics = [metric(n, cpu_milli=cpu, memory=mem, update=1010.0 - (200 if kind == "expired" else 5),
                      status=kind != "no status")
               for n, (_, _, cpu, mem, kind) in zip(names, nodes, strict=True) if kind != "no metric"]
    s = state(args, {n: (a, m) for n, (a, m, *_) in zip(names, nodes, strict=True)}, metrics)
    est = np.array([est_cpu, est_mem], dtype=np.int64)
    want = _matrix_score(s, est, is_prod=is_prod)
    rows = np.array(data.draw(hst.lists(hst.integers(0, len(nodes) - 1), min_size=ROW_BY_ROW + 1,
                                        max_size=3 * ROW_BY_ROW)))
    assert s.score(est, is_prod=is_prod).tolist() == want
    assert s.score(est, is_prod=is_prod, rows=rows).tolist() == [want[i] for i in rows.tolist()]
    full = s.packed(s.filter(est, is_prod=is_prod, is_daemonset=False))
    assert s.filter_packed(est, is_prod=is_prod).tolist() == full.tolist()
    assert s.filter_packed(est, is_prod=is_prod, rows=rows).tolist() == full[rows].tolist()


_NODES = {f"r{i}": (8000, 32 * GI) for i in range(3)}


def _row_metrics(seed: hst.DataObject) -> list[NodeMetricView]:
    """A NodeMetric per node of ``_NODES``: with or without a status, an old or a recent update, some of the test's
    pods reported (as prod or not)."""
    out = []
    for n in _NODES:
        reported = [{"namespace": "default", "name": f"q{j}",
                     "priority": seed.draw(hst.sampled_from(["koord-prod", ""])),
                     "podUsage": {"resources": {"cpu": f"{seed.draw(hst.integers(0, 900))}m", "memory": "1Gi"}}}
                    for j in seed.draw(hst.sets(hst.integers(0, 5), max_size=3))]
        out.append(metric(n, cpu_milli=seed.draw(hst.integers(0, 4000)), memory=2 * GI,
                          update=seed.draw(hst.sampled_from([900.0, 1005.0])), pods=reported,
                          status=seed.draw(hst.booleans())))
    return out


@settings(max_examples=60, deadline=None)
@given(hst.data())
def test_reserving_and_unreserving_keep_every_row_as_a_fresh_state_makes_it(data: hst.DataObject) -> None:
    """``reserve``/``unreserve`` recompute only the node touched, written value by value: after every step each
    node's has-status flag and filter, prod and score rows are those of a state made afresh from the same assigned
    pods (prod and not, reported in a NodeMetric or not, with and without an aggregated profile).  A pod placed
    again is unreserved first, as a session unplaces it: ``reserve`` refreshes only the node it reserves on."""
    aggregated = {"usageThresholds": {"cpu": 70}, "usageAggregationType": "p95", "scoreAggregationType": "p95"}
    raw = data.draw(hst.sampled_from([None, {"aggregated": aggregated}]))
    args = parse_loadaware_args(raw)
    metrics = _row_metrics(data)
    st = state(args, _NODES, metrics)
    names = list(_NODES)
    for _ in range(data.draw(hst.integers(1, 8))):
        j = data.draw(hst.integers(0, 5))
        if data.draw(hst.booleans()):
            p = pod(f"q{j}", requests={"cpu": f"{data.draw(hst.integers(0, 2000))}m", "memory": "1Gi"},
                    priority=data.draw(hst.sampled_from([None, 9500])))
            st.unreserve(p.key)   # as a session places a pod again: unplaced (and unreserved) first
            st.reserve(assigned_pod(p, data.draw(hst.sampled_from(names)), 1010.0, args))
        else:
            st.unreserve(f"default/q{j}")
        fresh_cache = AssignedPodCache()
        fresh_cache.add_all([e for n in names for e in st.cache.pods_on(n)])
        fresh = state(args, _NODES, metrics, cache=fresh_cache)
        for rows in ("has_status", "load_filter", "load_prod", "load_score"):
            assert getattr(st, rows).tolist() == getattr(fresh, rows).tolist(), rows
