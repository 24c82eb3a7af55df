"""Overcommit's cluster-wide admission throttle (docs/design/scheduler.md §4.10)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

from common.resources import Resources
from scheduler.batch.quota import exceeding_requested, sum_resources

__all__ = ["DEFAULT_FACTOR", "overcommit_factor", "overcommit_idle", "enqueue_overused", "overused_message"]

DEFAULT_FACTOR = 1.2


def overcommit_factor(raw: object) -> float:
    """``overcommit-factor`` argument: a number >= 1.0; missing, malformed or < 1.0 gives 1.2."""
    if raw is None or isinstance(raw, bool):
        return DEFAULT_FACTOR
    try:
        factor = float(str(raw))
    except ValueError:
        return DEFAULT_FACTOR
    return factor if factor >= 1.0 else DEFAULT_FACTOR


def overcommit_idle(total: Mapping[str, int], used: Iterable[Mapping[str, int]], factor: float) -> Resources:
    """``total × factor − Σ node used`` (may be negative on a dimension already over-used)."""
    scale = Fraction(factor).limit_denominator(10_000)
    scaled = Resources({k: int(v * scale) for k, v in total.items()})
    return scaled - sum_resources(used)


def enqueue_overused(
    inqueue: Mapping[str, int], min_resources: Mapping[str, int], idle: Mapping[str, int]
) -> list[str]:
    """Dimensions on which admitting a job with ``min_resources`` would overrun idle; empty = admit."""
    if not min_resources:
        return []
    return exceeding_requested(sum_resources((inqueue, min_resources)), idle, min_resources)


def overused_message(dimensions: Iterable[str]) -> str:
    """PodGroup event text when overcommit rejects a job."""
    return "resource in cluster is overused: " + ", ".join(f"overused {d}" for d in dimensions)
