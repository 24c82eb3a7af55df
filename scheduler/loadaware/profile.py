"""Effective per-node threshold profile: plugin args overridden by the node annotation (docs/design/loadaware.md §6.2)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.duration import parse_duration

from .args import AGGREGATION_TYPES, LoadAwareArgs, go_int64

__all__ = ["USAGE_THRESHOLDS_ANNOTATION", "AggregatedProfile", "ThresholdProfile", "effective_profile"]

USAGE_THRESHOLDS_ANNOTATION = "scheduling.loadwise.io/usage-thresholds"


@dataclass(frozen=True, slots=True)
class AggregatedProfile:
    usage_thresholds: Mapping[str, int]
    aggregation_type: str
    duration: float


@dataclass(frozen=True, slots=True)
class ThresholdProfile:
    usage_thresholds: Mapping[str, int]
    prod_usage_thresholds: Mapping[str, int]
    aggregated: AggregatedProfile | None
    source: str  # "plugin" or "node annotation" — shown by explain

    @property
    def prod_enabled(self) -> bool:
        return any(v != 0 for v in self.prod_usage_thresholds.values())


def _int_map(raw: Any) -> dict[str, int] | None:
    """A map of resource to percent, or None when it is not one: a value that is not a number, or that no int64
    holds (Go's decoding of the annotation would fail on it; JSON's NaN and Infinity, or 1e30), makes the part
    unusable, as a non-number does."""
    if not isinstance(raw, Mapping) or not raw:
        return None
    out: dict[str, int] = {}
    for k, v in raw.items():
        if not go_int64(v):
            return None
        out[str(k)] = int(v)
    return out


def plugin_profile(args: LoadAwareArgs) -> ThresholdProfile:
    agg = args.aggregated
    aggregated = (AggregatedProfile(dict(agg.usage_thresholds), agg.usage_aggregation_type,
                                    agg.usage_aggregated_duration) if agg.filter_enabled else None)
    return ThresholdProfile(dict(args.usage_thresholds), dict(args.prod_usage_thresholds), aggregated, "plugin")


def effective_profile(args: LoadAwareArgs, annotations: Mapping[str, str],
                      base: ThresholdProfile | None = None) -> ThresholdProfile:
    """Each non-empty annotation part replaces the plugin's part wholesale; invalid JSON keeps the plugin's."""
    base = base or plugin_profile(args)
    raw = annotations.get(USAGE_THRESHOLDS_ANNOTATION)
    if not raw:
        return base
    try:
        doc = json.loads(raw)
    except ValueError:
        return base
    if not isinstance(doc, Mapping):
        return base
    usage = _int_map(doc.get("usageThresholds"))
    prod = _int_map(doc.get("prodUsageThresholds"))
    aggregated = base.aggregated
    agg_raw = doc.get("aggregatedUsage")
    agg_used = False
    if isinstance(agg_raw, Mapping):
        thr = _int_map(agg_raw.get("usageThresholds"))
        kind = agg_raw.get("usageAggregationType")
        if thr and kind in AGGREGATION_TYPES:
            try:
                duration = parse_duration(agg_raw.get("usageAggregatedDuration") or "0")
            except ValueError:
                duration = 0.0
            aggregated = AggregatedProfile(thr, str(kind), max(duration, 0.0))
            agg_used = True
    if usage is None and prod is None and not agg_used:
        return base
    return ThresholdProfile(usage if usage is not None else base.usage_thresholds,
                            prod if prod is not None else base.prod_usage_thresholds, aggregated, "node annotation")
