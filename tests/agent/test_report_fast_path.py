"""The report path's fast reads give exactly what the plain definitions give.

* Rings (compacting buffers, bisect on the times) against a list model that keeps the newest samples and finds
  windows with ``np.searchsorted``, NaN times included.
* Batched sums: NumPy sums each row of a stacked matrix exactly as it sums that window alone, so ``means`` and
  ``summaries`` equal ``ndarray.mean`` and ``common.percentile.aggregate`` of each window.
* ``build_nodemetric_status`` against a reference written with the copying ``History.window`` and
  ``common.percentile.aggregate``, JSON byte for byte, and ``UsageStore.record_usage`` against ``record``.
"""

from __future__ import annotations

import json
import math
from array import array
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.aggregate import AGGREGATIONS, aggregate, means, row_means, summaries, window_average, window_stats
from agent.history import History, Ring, gather_windows
from agent.nodemetric import (
    NODE_CPU,
    NODE_MEMORY,
    NODE_MEMORY_WITH_PAGE_CACHE,
    SYSTEM_CPU,
    SYSTEM_MEMORY,
    USAGE_WITH_PAGE_CACHE,
    USAGE_WITHOUT_PAGE_CACHE,
    MetricCollectPolicy,
    PodMeta,
    PodUsage,
    UsageSample,
    UsageStore,
    build_nodemetric_status,
    pod_series,
)
from common.clock import to_rfc3339
from common.duration import format_duration
from common.percentile import aggregate as aggregate_values
from common.quantity import format_bytes, format_milli

# -- rings ------------------------------------------------------------------------------------------------------


class ListRing:
    """The definition: accept a sample unless it is older than the last one, keep the newest ``capacity``."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.samples: list[tuple[float, float]] = []

    def append(self, t: float, v: float) -> bool:
        if self.samples and t < self.samples[-1][0]:
            return False
        self.samples = [*self.samples, (t, v)][-self.capacity :]
        return True

    def window(self, start: float, end: float) -> tuple[list[float], list[float]]:
        times = np.array([t for t, _ in self.samples], dtype=np.float64)
        lo = int(np.searchsorted(times, start, side="left"))
        hi = int(np.searchsorted(times, end, side="right"))
        return [t for t, _ in self.samples[lo:hi]], [v for _, v in self.samples[lo:hi]]


def _same(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and all(x == y or (math.isnan(x) and math.isnan(y)) for x, y in zip(a, b, strict=True))


STEP = st.one_of(st.just(1.0), st.just(0.0), st.just(-1.0), st.floats(-3, 5), st.just(math.nan))


@pytest.mark.slow
@settings(max_examples=300)
@given(st.integers(1, 9), st.lists(st.tuples(STEP, st.floats(-1e6, 1e6)), max_size=60), st.data())
def test_ring_matches_the_list_definition(capacity: int, steps: list[tuple[float, float]], data: st.DataObject) -> None:
    ring, model = Ring(capacity), ListRing(capacity)
    base = 0.0
    for step, v in steps:
        if not math.isnan(step):
            base += step
        t = step if math.isnan(step) else base  # a NaN time now and then
        assert ring.append(t, v) == model.append(t, v)
        assert len(ring) == len(model.samples)
        times, values = ring.ordered()
        assert _same(times.tolist(), [x for x, _ in model.samples]) and values.tolist() == [y for _, y in model.samples]
        start = data.draw(st.one_of(st.floats(-5, 200), st.just(math.nan)))
        end = data.draw(st.floats(-5, 200))
        got_t, got_v = ring.window(start, end)
        want_t, want_v = model.window(start, end)
        assert _same(got_t.tolist(), want_t) and got_v.tolist() == want_v
        assert ring.values_between(start, end).tolist() == want_v
    if model.samples:
        last = ring.last()
        assert last is not None and _same([last[0]], [model.samples[-1][0]]) and last[1] == model.samples[-1][1]
    bigger = ring.resized(capacity + 3)
    assert bigger.ordered()[1].tolist() == [y for _, y in model.samples]


def test_large_rings_move_their_samples_back_without_losing_any() -> None:
    # Capacity 200 has 100 spare slots: the samples kept overlap the ones they are moved over.
    for capacity in (1, 2, 127, 128, 200, 1001):
        ring, model = Ring(capacity), ListRing(capacity)
        for i in range(3 * capacity + 150):
            ring.append(float(i), float(i) * 0.5)
            model.append(float(i), float(i) * 0.5)
            if i % 37 == 0 or i > 3 * capacity + 140:
                assert ring.ordered()[1].tolist() == [v for _, v in model.samples]
                assert ring.values_between(i - 10.5, i).tolist() == model.window(i - 10.5, i)[1]


def test_history_windows_after_resizing_and_pruning() -> None:
    h = History(retention_seconds=10, interval_seconds=1)
    for i in range(100):
        h.append("a", float(i), float(i))
    assert h.values_view("a", 95, 99).tolist() == [95, 96, 97, 98, 99]
    assert h.values_view("a", 95, 97.5).tolist() == [95, 96, 97]
    assert h.values_view("missing", 0, 1).size == 0
    h.set_retention(3)
    assert h.window("a", 0, 1e9)[1].tolist() == list(range(100 - h.capacity, 100))
    assert h.span("a", 97, 99) == 2.0


# -- batched sums -----------------------------------------------------------------------------------------------

WINDOW = st.lists(st.floats(-1e12, 1e12, allow_nan=False), min_size=0, max_size=150).map(
    lambda xs: np.array(xs, dtype=np.float64)
)


@settings(max_examples=300)
@given(st.lists(WINDOW, max_size=8), st.integers(0, 3))
def test_batched_means_and_summaries_equal_each_window_alone(windows: list[np.ndarray], offset: int) -> None:
    # Views at an offset into a larger buffer, as the rings hand them out.
    views = []
    for w in windows:
        buf = np.concatenate([np.zeros(offset), w, np.zeros(2)])
        views.append(buf[offset : offset + w.size])
    got_means = means(views)
    got_stats = summaries(views)
    for w, m, s in zip(windows, got_means, got_stats, strict=True):
        if w.size == 0:
            assert m is None and s is None
            continue
        assert m == float(w.copy().mean())
        assert s is not None and dict(zip(AGGREGATIONS, s, strict=True)) == aggregate_values(w.copy())


@settings(max_examples=300)
@given(st.lists(WINDOW, max_size=8))
def test_row_means_of_windows_end_to_end_equal_means(windows: list[np.ndarray]) -> None:
    values = array("d")
    for w in windows:
        values.extend(w.tolist())
    got = row_means(values, [w.size for w in windows])
    assert got == means(windows)
    assert got == [float(w.copy().mean()) if w.size else None for w in windows]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.lists(st.floats(0, 200), max_size=120).map(sorted),
       st.floats(-10, 210), st.floats(-10, 210))
def test_ring_extend_values_between_appends_values_between(capacity: int, times: list[float], a: float, b: float) -> None:
    ring = Ring(capacity)
    for k, t in enumerate(times):
        ring.append(t, float(k))
    out = array("d", [-1.0])
    n = ring.extend_values_between(a, b, out)
    assert out.tolist() == [-1.0, *ring.values_between(a, b).tolist()] and n == len(out) - 1
    gathered = array("d")
    counts = gather_windows([ring, None, ring], a, b, gathered)
    assert counts == [n, 0, n] and gathered.tolist() == out.tolist()[1:] * 2
    assert gather_windows([ring], math.nan, b, gathered) == [ring.extend_values_between(math.nan, b, array("d"))]


# -- the status -------------------------------------------------------------------------------------------------


def _resource_map(cpu: float | None, memory: float | None) -> dict[str, Any]:
    out: dict[str, str] = {}
    if cpu is not None:
        out["cpu"] = format_milli(int(cpu * 1000))
    if memory is not None:
        out["memory"] = format_bytes(int(memory))
    return {"resources": out}


def reference_status(store: UsageStore, now: float, policy: MetricCollectPolicy, pods: list[PodMeta]) -> dict[str, Any]:
    """NodeMetric status by the definitions: copies of every window, NumPy mean, ``common.percentile``."""
    w = float(policy.window_seconds)

    def values(h: History, series: str, length: float) -> np.ndarray:
        return h.window(series, now - length, now)[1]

    def mean(h: History, series: str) -> float | None:
        v = values(h, series, w)
        return float(v.mean()) if v.size else None

    def aggregated(cpu: str, memory: str) -> list[dict[str, Any]]:
        out = []
        for d in policy.durations:
            times = store.node.window(cpu, now - float(d), now)[0]
            span = float(times[-1] - times[0]) if times.size >= 2 else 0.0
            usage: dict[str, Any] = {}
            if span >= 0.5 * float(d):
                c = aggregate_values(values(store.node, cpu, float(d)))
                m = aggregate_values(values(store.node, memory, float(d)))
                for agg in AGGREGATIONS:
                    if agg in c or agg in m:
                        usage[agg] = _resource_map(c.get(agg), m.get(agg))
            out.append({"duration": format_duration(d), "usage": usage})
        return out

    memory = store.node_memory_series()
    pods_metric = []
    for p in sorted(pods, key=lambda p: (p.namespace, p.name)):
        cpu, mem = mean(store.pods, pod_series(p.uid, "cpu")), mean(store.pods, pod_series(p.uid, "memory"))
        if cpu is not None or mem is not None:
            pods_metric.append({"namespace": p.namespace, "name": p.name, "podUsage": _resource_map(cpu, mem),
                                "priority": p.priority, "qos": p.qos})
    return {
        "updateTime": to_rfc3339(now),
        "nodeMetric": {
            "nodeUsage": _resource_map(mean(store.node, NODE_CPU), mean(store.node, memory)),
            "aggregatedNodeUsages": aggregated(NODE_CPU, memory),
            "systemUsage": _resource_map(mean(store.node, SYSTEM_CPU), mean(store.node, SYSTEM_MEMORY)),
            "aggregatedSystemUsages": aggregated(SYSTEM_CPU, SYSTEM_MEMORY),
        },
        "podsMetric": pods_metric,
    }


MAYBE = st.one_of(st.none(), st.floats(0, 64))
TICK = st.tuples(
    st.sampled_from([1.0, 1.0, 1.0, 0.5, 2.0, 0.0, -0.5]),  # tick length, in intervals
    MAYBE,
    st.one_of(st.none(), st.floats(0, 2.0**38)),
    st.one_of(st.none(), st.floats(0, 2.0**38)),
    st.lists(st.tuples(st.sampled_from("abcdef"), MAYBE, st.one_of(st.none(), st.floats(0, 2.0**34))), max_size=5),
)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([10, 60, 120, 300]),
    st.sampled_from([(), (300.0, 600.0, 1800.0), (60.0, 60.0), (120, 3600), (30.0, 90.0)]),
    st.sampled_from([USAGE_WITHOUT_PAGE_CACHE, USAGE_WITH_PAGE_CACHE]),
    st.sampled_from([1.0, 10.0, 30.0]),
    st.lists(TICK, min_size=1, max_size=150),
    st.sampled_from([0.0, -45.0, 0.25]),
)
def test_status_equals_the_reference_byte_for_byte(
    window: int, durations: tuple[float, ...], memory_policy: str, interval: float, ticks: list[Any], late: float
) -> None:
    policy = MetricCollectPolicy(aggregate_duration_seconds=window, durations=durations,
                                 node_memory_collect_policy=memory_policy)
    store = UsageStore(policy, interval)
    metas = [PodMeta("ns" if u < "d" else "other", f"pod-{u}", u, "koord-prod", "LS") for u in "fedcba"]
    t = 1.7e9
    for k, (step, cpu, mem, mem_cache, pods) in enumerate(ticks):
        t += step * interval
        sample = UsageSample(cpu, mem, mem_cache, {u: PodUsage(c, m) for u, c, m in pods})
        store.record(t, sample)
        if k % 7 == 0 or k == len(ticks) - 1:
            now = t + late
            got = build_nodemetric_status(store, now, policy, metas)
            assert json.dumps(got) == json.dumps(reference_status(store, now, policy, metas))
            for d in (*durations, window):
                for series in (NODE_CPU, SYSTEM_MEMORY):
                    ref = store.node.window(series, now - float(d), now)[1]
                    assert window_average(store.node, series, now, float(d)) == (float(ref.mean()) if ref.size else None)
                    stats = window_stats(store.node, series, now, float(d))
                    assert (stats.values if stats else {}) == aggregate_values(ref)
            agg = aggregate(store.node, now, durations, series=(NODE_CPU, SYSTEM_MEMORY))
            assert set(agg) == {float(d) for d in durations}


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 64), st.floats(0, 2.0**38),
                          st.lists(st.tuples(st.sampled_from("abcd"), st.floats(0, 8), st.floats(0, 2.0**34)),
                                   max_size=4, unique_by=lambda p: p[0])), max_size=40),
       st.sampled_from([USAGE_WITHOUT_PAGE_CACHE, USAGE_WITH_PAGE_CACHE]))
def test_record_usage_is_record_of_the_same_sample(ticks: list[Any], memory_policy: str) -> None:
    policy = MetricCollectPolicy(aggregate_duration_seconds=60, node_memory_collect_policy=memory_policy)
    a, b = UsageStore(policy, 10.0), UsageStore(policy, 10.0)
    for k, (cpu, mem, pods) in enumerate(ticks):
        t = 1000.0 + 10 * k
        a.record(t, UsageSample(cpu, mem, pods={u: PodUsage(c, m) for u, c, m in pods}))
        b.record_usage(t, cpu, mem, pods)
    for ha, hb in ((a.node, b.node), (a.pods, b.pods)):
        assert list(ha.series()) == list(hb.series())
        for s in ha.series():
            assert [x.tolist() for x in ha.window(s, -1e18, 1e18)] == [x.tolist() for x in hb.window(s, -1e18, 1e18)]


class ReferenceStore:
    """What ``UsageStore.record`` is defined to do, one ``History.append`` per sample, in the documented order."""

    def __init__(self, policy: MetricCollectPolicy, interval: float) -> None:
        self.policy = policy
        self.node = History(policy.node_retention_seconds, interval)
        self.pods = History(float(policy.window_seconds), interval)
        self.last_prune = -math.inf

    def record(self, t: float, cpu: float | None, mem: float | None, mem_cache: float | None,
               pods: list[tuple[str, float | None, float | None]]) -> None:
        pod_cpu = pod_mem = 0.0
        for uid, c, m in pods:
            if c is not None:
                self.pods.append(pod_series(uid, "cpu"), t, c)
                pod_cpu += c
            if m is not None:
                self.pods.append(pod_series(uid, "memory"), t, m)
                pod_mem += m
        if cpu is not None:
            self.node.append(NODE_CPU, t, cpu)
            self.node.append(SYSTEM_CPU, t, max(0.0, cpu - pod_cpu))
        if mem is not None:
            self.node.append(NODE_MEMORY, t, mem)
        if mem_cache is not None:
            self.node.append(NODE_MEMORY_WITH_PAGE_CACHE, t, mem_cache)
        node_mem = mem_cache if mem_cache is not None and self.policy.node_memory_collect_policy == USAGE_WITH_PAGE_CACHE else mem
        if node_mem is not None:
            self.node.append(SYSTEM_MEMORY, t, max(0.0, node_mem - pod_mem))
        if t - self.last_prune >= self.pods.retention_seconds:
            self.pods.prune(t - self.pods.retention_seconds)
            self.last_prune = t


_MAYBE = st.one_of(st.none(), st.floats(0, 8))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.floats(0, 64)), st.one_of(st.none(), st.floats(0, 2.0**38)),
                          st.one_of(st.none(), st.floats(0, 2.0**38)),
                          st.lists(st.tuples(st.sampled_from("abcd"), _MAYBE, _MAYBE), max_size=4,
                                   unique_by=lambda p: p[0]),
                          st.sampled_from(["", "", "", "drop", "retention", "prune"])), max_size=40),
       st.sampled_from([USAGE_WITHOUT_PAGE_CACHE, USAGE_WITH_PAGE_CACHE]))
def test_recording_appends_what_one_append_per_sample_would(ticks: list[Any], memory_policy: str) -> None:
    """The kept rings of the common ticks never outlive their series: drops, prunes and resizes in between
    (from outside the store too) leave the store's histories equal to the per-sample definition."""
    policy = MetricCollectPolicy(aggregate_duration_seconds=60, node_memory_collect_policy=memory_policy)
    longer = MetricCollectPolicy(aggregate_duration_seconds=120, node_memory_collect_policy=memory_policy,
                                 durations=(60.0, 240.0))
    store, ref = UsageStore(policy, 10.0), ReferenceStore(policy, 10.0)
    for k, (cpu, mem, mem_cache, pods, disturb) in enumerate(ticks):
        t = 1000.0 + 10 * k
        if mem_cache is None and cpu is not None and mem is not None:
            store.record_usage(t, cpu, mem, [(u, c, m) for u, c, m in pods if c is not None and m is not None])
            pods = [(u, c, m) for u, c, m in pods if c is not None and m is not None]
        else:
            store.record(t, UsageSample(cpu, mem, mem_cache, pods={u: PodUsage(c, m) for u, c, m in pods}))
        ref.record(t, cpu, mem, mem_cache, pods)
        if disturb == "drop" and pods:
            for h in (store.pods, ref.pods):
                h.drop(pod_series(pods[0][0], "cpu"))
            for h in (store.node, ref.node):
                h.drop(SYSTEM_CPU)
        elif disturb == "retention":
            policy, longer = longer, policy
            store.set_policy(policy)
            ref.policy = policy
            ref.node.set_retention(policy.node_retention_seconds)
            ref.pods.set_retention(float(policy.window_seconds))
        elif disturb == "prune":
            for h in (store.pods, ref.pods):
                h.prune(t)
    for got, want in ((store.node, ref.node), (store.pods, ref.pods)):
        assert list(got.series()) == list(want.series())
        for s in want.series():
            assert [x.tolist() for x in got.window(s, -1e18, 1e18)] == [x.tolist() for x in want.window(s, -1e18, 1e18)]
