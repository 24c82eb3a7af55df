"""The measures on a hand-made tiny run, checked against hand computation."""

from __future__ import annotations

import numpy as np
import pytest

from sim.measures import comparison, measure, reduction, table
from sim.record import RunRecord


def _record(policy: str = "requests") -> RunRecord:
    # 2 nodes × 4 ticks of 30 s; node A has 2x the allocatable of node B.
    cpu = np.array([[0.50, 0.70, 0.80, 0.60], [0.20, 0.66, 0.64, 0.10]], dtype=np.float32)
    mem = np.array([[0.50, 0.50, 0.96, 0.50], [0.10, 0.10, 0.10, 0.97]], dtype=np.float32)
    return RunRecord(
        policy=policy,
        workload="tiny",
        tick_seconds=30.0,
        start_time=0.0,
        hotspot_cpu_percent=65.0,
        hotspot_memory_percent=95.0,
        node_names=["a", "b"],
        node_types=["big", "small"],
        cpu_allocatable=np.array([2000.0, 1000.0]),
        memory_allocatable=np.array([2e9, 1e9]),
        cpu_util=cpu,
        mem_util=mem,
        running=np.array([3, 3, 4, 4], dtype=np.int32),
        pending=np.array([1, 0, 0, 2], dtype=np.int32),
        throttled=np.array([0, 1, 2, 1], dtype=np.int32),
        placed=np.array([2, 1, 0, 0], dtype=np.int32),
        submitted=10,
        ran=8,
        bindings=9,
        waits=np.array([0.0, 30.0, 60.0, 0.0]),
        waterline_evictions=1,
        scheduler_evictions=1,
        session_seconds=np.array([0.010, 0.020, 0.030]),
        session_cpu_seconds=np.array([0.005, 0.010, 0.015]),
        session_placed=np.array([2, 1, 0], dtype=np.int32),
        pending_end=2,
        unschedulable_end=1,
        wall_seconds=1.234,
        cpu_seconds=1.0,
    )


def test_measures_match_hand_computation() -> None:
    m = measure(_record())
    # CPU hot (> 0.65): a at ticks 1, 2; b at tick 1 (0.66) -> 3 node-ticks; memory hot: a@2, b@3 -> 2;
    # either: a@1, a@2, b@1, b@3 -> 4 node-ticks; half a minute each.
    assert m.hotspot_cpu_node_minutes == 1.5
    assert m.hotspot_memory_node_minutes == 1.0
    assert m.hotspot_node_minutes == 2.0
    samples = np.array([0.5, 0.7, 0.8, 0.6, 0.2, 0.66, 0.64, 0.1])
    assert m.p99_cpu_percent == pytest.approx(100 * np.percentile(samples, 99), abs=0.01)
    spread = np.mean([np.std([0.5, 0.2]), np.std([0.7, 0.66]), np.std([0.8, 0.64]), np.std([0.6, 0.1])])
    assert m.spread_cpu_points == pytest.approx(100 * spread, abs=0.01)
    # Cluster utilisation weights nodes by allocatable: (2a + b) / 3 per tick, then the mean.
    cluster = [(2 * 0.5 + 0.2) / 3, (2 * 0.7 + 0.66) / 3, (2 * 0.8 + 0.64) / 3, (2 * 0.6 + 0.1) / 3]
    assert m.mean_cpu_percent == pytest.approx(100 * np.mean(cluster), abs=0.01)
    assert m.peak_cpu_percent == pytest.approx(100 * max(cluster), abs=0.01)
    assert m.throttle_minutes == 2.0  # 4 pod-ticks of 30 s
    assert (m.pods_submitted, m.pods_scheduled, m.bindings, m.pods_pending_end, m.pods_unschedulable) == (10, 8, 9, 2, 1)
    assert m.wait_mean_seconds == 22.5
    assert m.wait_p95_seconds == pytest.approx(np.percentile([0, 30, 60, 0], 95), abs=0.05)
    assert m.wait_p99_seconds == pytest.approx(np.percentile([0, 30, 60, 0], 99), abs=0.05)
    assert m.wait_max_seconds == 60.0
    assert m.waited_percent == 50.0  # two of the four bindings waited beyond their arrival tick
    assert m.evictions == 2 and m.eviction_rate_percent == 20.0
    assert m.sessions == 3 and m.session_mean_ms == 20.0 and m.session_cpu_mean_ms == 10.0
    assert m.per_pod_ms == 20.0  # 60 ms for 3 placed pods
    assert m.to_json()["evictions"] == 2


def test_comparison_and_table() -> None:
    base = measure(_record("requests"))
    better = _record("loadaware")
    better.cpu_util = better.cpu_util * 0.5
    better.mem_util = better.mem_util * 0.5
    other = measure(better)
    comp = comparison([base, other])
    assert comp["loadaware"]["hotspot_reduction_percent"] == 100.0
    assert comp["loadaware"]["scheduled_difference"] == 0
    rows = table([base, other])
    assert rows[0] == ["measure", "requests", "loadaware"]
    assert rows[1][0].startswith("hotspot node-minutes") and rows[1][1:] == ["2", "0"]
    assert reduction(0.0, 5.0) is None and reduction(10.0, 2.5) == 75.0
    assert comparison([other]) == {}


def test_report_lists_why_pods_still_wait() -> None:
    from sim.html import waiting_html

    rec = _record("loadaware")
    rec.unschedulable_reasons = {"node(s) had too high usage": 1}
    page = waiting_html([_record("requests"), rec])
    assert "Pods waiting at the end" in page
    assert "node(s) had too high usage</td><td>1</td>" in page
    done = _record()
    done.pending_end = 0
    assert "every submitted pod was placed" in waiting_html([done])


def test_report_says_who_waited_by_class_of_pod() -> None:
    from sim.html import waits_html

    rec = _record("loadaware")
    rec.wait_classes = ["service", "gang", "gang", "batch"]  # waits 0, 30, 60, 0
    page = waits_html([rec])
    assert "Who waited to be bound" in page
    # gang: 2 bindings, both waited, mean 45 s, longest 60 s; the others never waited
    assert "<td>gang</td><td>2</td><td>100.00%</td><td>45</td><td>60</td>" in page
    assert "<td>service</td><td>1</td><td>0.00%</td><td>0</td><td>0</td>" in page
    calm = _record()
    calm.waits = np.zeros(4)
    calm.wait_classes = ["service"] * 4
    assert "Nobody" in waits_html([calm])
    assert waits_html([_record()]) == ""   # no classes kept: no table rather than a wrong one
