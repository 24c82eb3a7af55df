"""Koordinator's default pod estimator (docs/design/loadaware.md §4): what a pod will use before it is measured."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from common.objects import PodView
from common.qos import PriorityClass
from common.resources import CPU, MEMORY, cap_quantity

from .args import go_int64

__all__ = ["SCALING_FACTORS_ANNOTATION", "DEFAULT_CPU_MILLI", "DEFAULT_MEMORY_BYTES", "estimate_pod",
           "estimate_vector", "custom_scaling_factors"]

SCALING_FACTORS_ANNOTATION = "scheduling.koordinator.sh/load-estimated-scaling-factors"
DEFAULT_CPU_MILLI = 250
DEFAULT_MEMORY_BYTES = 200 * 1024 * 1024
BATCH_CPU = "kubernetes.io/batch-cpu"
BATCH_MEMORY = "kubernetes.io/batch-memory"
MID_CPU = "kubernetes.io/mid-cpu"
MID_MEMORY = "kubernetes.io/mid-memory"

_REAL_NAME = {
    PriorityClass.BATCH: {CPU: BATCH_CPU, MEMORY: BATCH_MEMORY},
    PriorityClass.MID: {CPU: MID_CPU, MEMORY: MID_MEMORY},
}


def _round_half_away(x: float) -> int:
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)


def _real_name(name: str, pc: PriorityClass) -> str:
    if pc in (PriorityClass.PROD, PriorityClass.NONE):
        return name
    return _REAL_NAME.get(pc, {}).get(name, "")


def custom_scaling_factors(pod: PodView, factors: Mapping[str, int]) -> Mapping[str, int]:
    """The pod annotation's factors (missing keys from ``factors``), or ``factors`` if absent/invalid/empty."""
    raw = pod.annotations.get(SCALING_FACTORS_ANNOTATION)
    if not raw:
        return factors
    try:
        parsed = json.loads(raw)
    except ValueError:
        return factors
    if not isinstance(parsed, dict) or not parsed:
        return factors
    out = dict(factors)
    for k, v in parsed.items():
        if isinstance(v, bool) or not isinstance(v, int | float):
            continue
        if not (go_int64(v) and float(v).is_integer()):
            # what Go's decoding into int64 percents refuses (1e30, NaN, Infinity, 50.5): the annotation is invalid
            return factors
        out[str(k)] = int(v)
    return out


def estimate_pod(pod: PodView, factors: Mapping[str, int], *, allow_customize: bool = False) -> dict[str, int]:
    """Estimated usage per factor name (cpu in millicores, others base units)."""
    if allow_customize:
        factors = custom_scaling_factors(pod, factors)
    pc = pod.priority_class
    out: dict[str, int] = {}
    for name, factor in factors.items():
        real = _real_name(name, pc)
        if not real:
            out[name] = 0
            continue
        req, lim = pod.requests.get(real, 0), pod.limits.get(real, 0)
        q = lim if lim > req else req
        if q == 0:
            out[name] = DEFAULT_CPU_MILLI if real in (CPU, BATCH_CPU) else (
                DEFAULT_MEMORY_BYTES if real in (MEMORY, BATCH_MEMORY) else 0)
            continue
        est = _round_half_away(float(q) * float(factor) / 100.0)
        if lim > 0 and est > lim:
            est = lim
        # a huge custom factor on a pod without a limit: bounded as parsed quantities are, so it packs into int64
        out[name] = cap_quantity(est)
    return out


def estimate_vector(estimate: Mapping[str, int], names: Sequence[str]) -> npt.NDArray[np.int64]:
    return np.array([estimate.get(n, 0) for n in names], dtype=np.int64)
