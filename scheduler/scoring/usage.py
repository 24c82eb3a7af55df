"""Volcano's ``usage`` plugin (docs/design/scheduler.md §4.12), vectorised: a threshold predicate on measured cpu/memory
percent and a score on the composite (measured + shadow-estimated) load.

The node's "weighted composite load" that switches on ``risk_factor`` is taken as the cpu/memory-weighted mean of
the per-dimension composite ``U`` before the task's own estimate is added.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from common.quantity import QuantityError, milli_value, parse_quantity, value
from scheduler.lenient import float_arg, int_arg

__all__ = ["CPU_REASON", "MEMORY_REASON", "METRICS_STALE_SECONDS", "UsageArgs", "parse_usage_arguments",
           "usage_predicate", "composite_load", "task_estimate", "usage_score", "risk_factors", "available"]

CPU_REASON = "the CPU load of the node exceeds the upper limit."
MEMORY_REASON = "the memory load of the node exceeds the upper limit."
METRICS_STALE_SECONDS = 300.0
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class UsageArgs:
    weight: int = 5
    cpu_weight: int = 1
    memory_weight: int = 1
    cpu_threshold: int = 80
    memory_threshold: int = 80
    request_ratio: float = 0.7
    burst_ratio: float = 0.0
    risk_threshold: float = 0.6
    risk_factor: float = 1.2
    be_cpu_milli: int = 250
    be_memory_bytes: int = 200 * 1024 * 1024


def _weight(raw: Mapping[str, Any], key: str, default: int) -> int:
    v = int_arg(raw, key, default)
    return default if v < 0 else v


def _threshold(raw: Any, default: int) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= 100:
        return default
    return raw




def _be(raw: Any, default: int, *, cpu: bool) -> int:
    """Quantity string, or an int meaning millicores (cpu) / MiB (memory)."""
    if isinstance(raw, bool) or raw is None:
        return default
    if isinstance(raw, int):
        return raw if cpu else raw * 1024 * 1024
    try:
        q = parse_quantity(str(raw))
    except QuantityError:
        return default
    return milli_value(q) if cpu else value(q)


def parse_usage_arguments(raw: Mapping[str, Any]) -> UsageArgs:
    thresholds = raw.get("thresholds") or {}
    est = raw.get("estimator") or {}
    if not isinstance(thresholds, Mapping):
        thresholds = {}
    if not isinstance(est, Mapping):
        est = {}
    d = UsageArgs()
    risk = float_arg(est, "risk_factor", d.risk_factor)
    return UsageArgs(
        weight=_weight(raw, "usage.weight", d.weight),
        cpu_weight=_weight(raw, "cpu.weight", d.cpu_weight),
        memory_weight=_weight(raw, "memory.weight", d.memory_weight),
        cpu_threshold=_threshold(thresholds.get("cpu"), d.cpu_threshold),
        memory_threshold=_threshold(thresholds.get("mem"), d.memory_threshold),
        request_ratio=float_arg(est, "request_ratio", d.request_ratio),
        burst_ratio=float_arg(est, "burst_ratio", d.burst_ratio),
        risk_threshold=float_arg(est, "risk_threshold", d.risk_threshold),
        risk_factor=risk if risk >= 1.0 else d.risk_factor,
        be_cpu_milli=_be(est.get("be_cpu"), d.be_cpu_milli, cpu=True),
        be_memory_bytes=_be(est.get("be_mem"), d.be_memory_bytes, cpu=False),
    )


def available(metrics_time: FloatArray, now: float) -> BoolArray:
    """Metrics with no time (NaN/0) or older than 5 minutes are unavailable."""
    t = np.nan_to_num(metrics_time, nan=0.0)
    return (t > 0) & (now - t <= METRICS_STALE_SECONDS)


def usage_predicate(args: UsageArgs, cpu_pct: FloatArray, mem_pct: FloatArray, metrics_time: FloatArray,
                    now: float) -> tuple[BoolArray, list[str]]:
    """(passes, reason per node — "" when passing); strictly greater fails; unavailable metrics pass."""
    ok = available(metrics_time, now)
    cpu_bad = ok & (cpu_pct > args.cpu_threshold)
    mem_bad = ok & ~cpu_bad & (mem_pct > args.memory_threshold)
    reasons = np.where(cpu_bad, CPU_REASON, np.where(mem_bad, MEMORY_REASON, "")).tolist()
    return ~(cpu_bad | mem_bad), [str(r) for r in reasons]


def composite_load(pct: FloatArray, capacity: FloatArray, shadow: FloatArray) -> FloatArray:
    cap = np.where(capacity > 0, capacity, 1.0)
    return np.where(capacity > 0, np.clip((pct / 100.0 * capacity + shadow) / cap, 0.0, 1.0), 1.0)


def task_estimate(args: UsageArgs, request: float, limit: float, *, cpu: bool, best_effort: bool,
                  risk: FloatArray) -> FloatArray:
    """Per node (``risk`` = the factor applied on each node): the shadow estimate of one task in one dimension."""
    if best_effort:
        return (args.be_cpu_milli if cpu else args.be_memory_bytes) * risk
    effective_limit = limit if limit >= request else request
    raw = (request * args.request_ratio + max(limit - request, 0.0) * args.burst_ratio) * risk
    return np.clip(raw, 0.0, effective_limit)


def usage_score(args: UsageArgs, u_cpu: FloatArray, u_mem: FloatArray, ok: BoolArray) -> FloatArray:
    wsum = args.cpu_weight + args.memory_weight
    if wsum == 0:
        return np.zeros(len(u_cpu), dtype=np.float64)
    s = ((1.0 - u_cpu) * args.cpu_weight + (1.0 - u_mem) * args.memory_weight) / wsum * 100.0 * args.weight
    return np.where(ok, s, 0.0)


def risk_factors(args: UsageArgs, u_cpu: FloatArray, u_mem: FloatArray) -> FloatArray:
    wsum = args.cpu_weight + args.memory_weight
    load = (u_cpu * args.cpu_weight + u_mem * args.memory_weight) / wsum if wsum else np.zeros(len(u_cpu))
    return np.where(load >= args.risk_threshold, args.risk_factor, 1.0)
