"""Volcano usage plugin: argument fallbacks, strict thresholds, stale metrics, estimate clamp, score example."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.scoring.usage import (
    CPU_REASON,
    MEMORY_REASON,
    composite_load,
    parse_usage_arguments,
    risk_factors,
    task_estimate,
    usage_predicate,
    usage_score,
)


def test_argument_defaults_and_fallbacks() -> None:
    a = parse_usage_arguments({"usage.weight": -1, "cpu.weight": "x", "thresholds": {"cpu": 101, "mem": 70},
                               "estimator": {"risk_factor": 0.5, "be_cpu": "500m", "be_mem": 100}})
    assert (a.weight, a.cpu_weight, a.cpu_threshold, a.memory_threshold) == (5, 1, 80, 70)
    assert a.risk_factor == 1.2 and a.be_cpu_milli == 500 and a.be_memory_bytes == 100 * 1024 * 1024


def test_predicate_strict_and_stale_passes() -> None:
    a = parse_usage_arguments({})
    cpu = np.array([80.0, 80.1, 10.0, 99.0, 99.0])
    mem = np.array([10.0, 10.0, 85.0, 10.0, 10.0])
    t = np.array([1000.0, 1000.0, 1000.0, 1000.0 - 301, np.nan])
    ok, reasons = usage_predicate(a, cpu, mem, t, 1000.0)
    assert ok.tolist() == [True, False, False, True, True]
    assert reasons[1] == CPU_REASON and reasons[2] == MEMORY_REASON


def test_score_example_and_unavailable_zero() -> None:
    a = parse_usage_arguments({})
    u_cpu = composite_load(np.array([30.0, 30.0]), np.array([4000.0, 4000.0]), np.zeros(2))
    u_mem = composite_load(np.array([50.0, 50.0]), np.array([8.0, 8.0]), np.zeros(2))
    got = usage_score(a, u_cpu, u_mem, np.array([True, False]))
    assert got.tolist() == pytest.approx([300.0, 0.0])


def test_estimate_clamped_and_risk() -> None:
    a = parse_usage_arguments({"estimator": {"burst_ratio": 1.0}})
    risk = risk_factors(a, np.array([0.7, 0.1]), np.array([0.7, 0.1]))
    assert risk.tolist() == [1.2, 1.0]
    est = task_estimate(a, 1000.0, 2000.0, cpu=True, best_effort=False, risk=risk)
    assert est.tolist() == pytest.approx([2000.0, 1700.0])  # (700 + 1000) * 1.2 clamped to the 2000 limit
    be = task_estimate(a, 0.0, 0.0, cpu=True, best_effort=True, risk=risk)
    assert be.tolist() == pytest.approx([300.0, 250.0])
