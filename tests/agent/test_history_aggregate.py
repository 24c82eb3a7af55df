"""History ring buffers and window aggregation: hand-computed percentiles, cold windows, flat memory,
and every window × aggregation against a plain NumPy reference on a real Alibaba v2018 machine series."""

from __future__ import annotations

import csv
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from agent.aggregate import aggregate, is_warm, window_average, window_stats
from agent.history import History, Ring, capacity_for

TRACE = Path(__file__).resolve().parents[3] / "shared" / "traces" / "alibaba-v2018" / "machine_usage.csv"


def test_ring_wraps_and_keeps_the_newest_samples_in_order() -> None:
    r = Ring(5)
    for i in range(12):
        assert r.append(float(i), float(i * 10))
    t, v = r.ordered()
    assert t.tolist() == [7, 8, 9, 10, 11]
    assert v.tolist() == [70, 80, 90, 100, 110]
    assert r.last() == (11.0, 110.0)
    assert len(r) == 5
    # An older sample is refused; an equal timestamp is allowed.
    assert not r.append(10.5, 1.0)
    assert r.append(11.0, 111.0)


def test_window_is_inclusive_at_both_ends() -> None:
    h = History(retention_seconds=100, interval_seconds=1)
    for i in range(50):
        h.append("s", 1000.0 + i, float(i))
    t, v = h.window("s", 1010.0, 1020.0)
    assert t[0] == 1010.0 and t[-1] == 1020.0 and v.size == 11
    assert h.window("nope", 0, 1e12)[1].size == 0
    assert h.span("s", 1010.0, 1020.0) == 10.0
    assert h.count("s") == 50


def test_capacity_comes_from_the_longest_window_and_resizing_keeps_data() -> None:
    h = History(retention_seconds=1800, interval_seconds=1.0)
    assert h.capacity == capacity_for(1800, 1.0) >= 1801
    for i in range(3000):
        h.append("node/cpu", float(i), float(i))
    assert h.window("node/cpu", 2999 - 1800, 2999)[1].size == 1801
    h.set_retention(60)
    assert h.capacity < 100
    t, _ = h.window("node/cpu", 0, 1e9)
    assert t[-1] == 2999 and t.size == h.capacity
    h.set_retention(600)
    assert h.window("node/cpu", 0, 1e9)[0][-1] == 2999


def test_prune_forgets_series_of_pods_that_went_away() -> None:
    h = History(60, 1)
    h.append("pod/a/cpu", 10, 1)
    h.append("pod/b/cpu", 100, 1)
    assert h.prune(older_than=50) == ["pod/a/cpu"]
    assert list(h.series()) == ["pod/b/cpu"]


def test_memory_stays_flat_however_long_the_history_runs() -> None:
    h = History(retention_seconds=300, interval_seconds=1)
    series = [f"pod/{i}/cpu" for i in range(50)]
    t = 0.0
    for _ in range(400):  # fill past capacity once
        t += 1
        for s in series:
            h.append(s, t, 0.5)
    held = h.nbytes
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    for _ in range(3000):  # ten times the window more
        t += 1
        for s in series:
            h.append(s, t, 0.5)
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert h.nbytes == held
    assert after - before < 64 * 1024


def test_percentiles_match_a_hand_computation() -> None:
    # 300 samples 1..300 shuffled: lower nearest rank, index floor(n*p) - 1 (no interpolation).
    h = History(retention_seconds=600, interval_seconds=1)
    values = np.random.default_rng(7).permutation(np.arange(1, 301)).astype(float)
    for i, v in enumerate(values):
        h.append("s", 1000.0 + i, v)
    stats = window_stats(h, "s", 1299.0, 299.0)
    assert stats is not None and stats.count == 300
    assert stats.values == {"avg": 150.5, "p50": 150.0, "p90": 270.0, "p95": 285.0, "p99": 297.0}
    # Small window: n=3 gives p50 -> index max(0, 1 - 1) = 0 (the smallest), p99 -> index 1.
    h2 = History(60, 1)
    for i, v in enumerate([5.0, 1.0, 9.0]):
        h2.append("s", float(i), v)
    s2 = window_stats(h2, "s", 2.0, 2.0)
    assert s2 is not None
    assert (s2.values["p50"], s2.values["p90"], s2.values["p99"], s2.values["avg"]) == (1.0, 5.0, 5.0, 5.0)
    assert window_stats(h2, "s", 100.0, 10.0) is None
    assert window_average(h2, "s", 2.0, 2.0) == 5.0


def test_cold_windows_are_left_empty() -> None:
    h = History(retention_seconds=1800, interval_seconds=1)
    for i in range(401):  # 400 s of data
        h.append("node/cpu", float(i), 1.0)
        h.append("node/memory", float(i), 2.0)
    out = aggregate(h, 400.0, [300.0, 600.0, 1800.0])
    assert set(out[300.0]) == {"node/cpu", "node/memory"}
    assert out[600.0]["node/cpu"]["avg"] == 1.0  # span 400 >= 300: warm
    assert out[1800.0] == {}  # span 400 < 900: cold
    assert is_warm(h, "node/cpu", 400.0, 800.0) and not is_warm(h, "node/cpu", 400.0, 801.0)


def _machine_series(machine: str, step: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = []
    with TRACE.open(newline="") as f:
        for r in csv.reader(f):
            if r[0] == machine and r[2] and r[3]:
                rows.append((int(r[1]), float(r[2]), float(r[3])))
    rows.sort()
    ts = np.array([r[0] for r in rows])
    grid = np.arange(ts[0] - ts[0] % step + step, ts[-1], step)
    idx = np.searchsorted(ts, grid, side="right") - 1  # forward fill
    cpu_cores = np.array([r[1] for r in rows])[idx] / 100.0 * 96
    mem_bytes = np.array([r[2] for r in rows])[idx] / 100.0 * 384 * 2**30  # memory size unpublished: 384 GiB
    return grid.astype(float), cpu_cores, mem_bytes


def _reference(times: np.ndarray, values: np.ndarray, now: float, d: float) -> dict[str, float]:
    sel = values[(times >= now - d) & (times <= now)]
    s = np.sort(sel)
    n = s.size
    out = {"avg": float(np.mean(sel))}
    for name, pct in (("p50", 50), ("p90", 90), ("p95", 95), ("p99", 99)):
        out[name] = float(s[max(0, n * pct // 100 - 1)])
    return out


@pytest.mark.skipif(not TRACE.exists(), reason=f"Alibaba v2018 trace not present at {TRACE}")
def test_aggregation_matches_numpy_reference_on_alibaba_v2018_machine() -> None:
    times, cpu, mem = _machine_series("m_1933", step=10)
    durations = [300.0, 600.0, 1800.0]
    h = History(retention_seconds=max(durations), interval_seconds=10)
    checked = 0
    for i, t in enumerate(times):
        h.append("node/cpu", t, cpu[i])
        h.append("node/memory", t, mem[i])
        if i % 97 == 0 and t - times[0] >= 1800:
            out = aggregate(h, t, durations)
            for d in durations:
                for series, values in (("node/cpu", cpu), ("node/memory", mem)):
                    ref = _reference(times, values, t, d)
                    got = out[d][series]
                    assert got.keys() == ref.keys()
                    for k in ref:
                        assert got[k] == pytest.approx(ref[k], rel=1e-12), (t, d, series, k)
                    checked += 1
    assert checked > 300
