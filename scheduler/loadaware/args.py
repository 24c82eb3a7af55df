"""LoadAwareScheduling arguments: JSON names, defaulting order and validation of docs/design/loadaware.md §1."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from common.config import ConfigError, flag, integer
from common.duration import parse_duration
from common.resources import CPU, MEMORY

__all__ = ["AGGREGATION_TYPES", "AggregatedArgs", "LoadAwareArgs", "parse_loadaware_args"]

AGGREGATION_TYPES = ("avg", "p50", "p90", "p95", "p99")
DEFAULT_WEIGHTS = {CPU: 1, MEMORY: 1}
DEFAULT_THRESHOLDS = {CPU: 65, MEMORY: 95}
DEFAULT_SCALING = {CPU: 85, MEMORY: 70}


@dataclass(frozen=True, slots=True)
class AggregatedArgs:
    usage_thresholds: Mapping[str, int] = field(default_factory=dict)
    usage_aggregation_type: str = ""
    usage_aggregated_duration: float = 0.0
    score_aggregation_type: str = ""
    score_aggregated_duration: float = 0.0

    @property
    def filter_enabled(self) -> bool:
        """The plugin-level aggregated profile exists only with thresholds and a type (docs/design/loadaware.md §6.2)."""
        return bool(self.usage_thresholds) and bool(self.usage_aggregation_type)


@dataclass(frozen=True, slots=True)
class LoadAwareArgs:
    filter_expired_node_metrics: bool = True
    node_metric_expiration_seconds: int = 180
    enable_schedule_when_node_metrics_expired: bool = False
    resource_weights: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    dominant_resource_weight: int = 0
    usage_thresholds: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    prod_usage_thresholds: Mapping[str, int] = field(default_factory=dict)
    prod_usage_include_sys: bool = False
    score_according_prod_usage: bool = False
    estimator: str = ""
    estimated_scaling_factors: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_SCALING))
    estimated_seconds_after_pod_scheduled: int | None = None
    estimated_seconds_after_initialized: int | None = None
    allow_customize_estimation: bool = False
    aggregated: AggregatedArgs = field(default_factory=AggregatedArgs)
    supported_resources: tuple[str, ...] = ()
    respect_waterlines: bool = True
    waterline_margin: int = 5
    relax_after_seconds: int = 0  # (Loadwise) a pod pending this long is no longer filtered on usage; 0 = never
    cpu_pressure_threshold: int = 0  # percent of time stalled (PSI some, 60 s); 0 = off (scheduler/loadaware/pressure.py)
    _resource_names: tuple[str, ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        names = {CPU, MEMORY}
        for m in (self.usage_thresholds, self.prod_usage_thresholds, self.aggregated.usage_thresholds,
                  self.resource_weights, self.estimated_scaling_factors):
            names.update(m)
        names.update(self.supported_resources)
        object.__setattr__(self, "_resource_names", tuple(sorted(names)))

    @property
    def resource_names(self) -> tuple[str, ...]:
        """The sorted resource vector (docs/design/loadaware.md §2): cpu, memory and every name any argument mentions (the arguments are
        immutable, so it is worked out once)."""
        return self._resource_names


def _bool(raw: Mapping[str, Any], key: str, default: bool, source: str) -> bool:
    return flag(raw, key, default, source=source)


def _int(v: Any, key: str, source: str) -> int:
    return integer(v, field=key, source=source)


_INT64_MAX = 2**63 - 1


def go_int64(v: Any) -> bool:
    """Whether a JSON number decodes into a Go int64 as far as its size goes: finite and within range (NaN,
    Infinity and 1e30 do not; whether a fraction is accepted is the caller's to say)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    if isinstance(v, int):  # exact, however large (math.isfinite would convert it to a float first)
        return abs(v) <= _INT64_MAX
    return math.isfinite(v) and abs(v) <= _INT64_MAX


def _int_map(raw: Any, key: str, source: str, lo: int | None, hi: int | None) -> dict[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError("must be a map of resource name to integer", field=key, source=source)
    out: dict[str, int] = {}
    for name, value in raw.items():
        v = _int(value, f"{key}.{name}", source)
        if lo is not None and hi is not None and not lo <= v <= hi:
            raise ConfigError(f"must be in {lo}..{hi}, got {v}", field=f"{key}.{name}", source=source)
        out[str(name)] = v
    return out


def _agg_type(raw: Mapping[str, Any], key: str, source: str) -> str:
    v = raw.get(key) or ""
    if v and v not in AGGREGATION_TYPES:
        raise ConfigError(f"must be one of {', '.join(AGGREGATION_TYPES)}, got {v!r}", field=f"aggregated.{key}",
                          source=source)
    return str(v)


def _duration(raw: Mapping[str, Any], key: str, source: str) -> float:
    v = raw.get(key)
    if v is None or v == "":
        return 0.0
    try:
        d = parse_duration(v, field=f"aggregated.{key}")
    except ValueError as e:
        raise ConfigError(str(e), field=f"aggregated.{key}", source=source) from e
    if d < 0:
        raise ConfigError(f"must be >= 0, got {v!r}", field=f"aggregated.{key}", source=source)
    return d


def _opt_int(raw: Mapping[str, Any], key: str, source: str) -> int | None:
    v = raw.get(key)
    return None if v is None else _int(v, key, source)


def _ranged(v: int, key: str, source: str, lo: int, hi: int | None, note: str = "") -> int:
    """``v`` if it lies in lo..hi (no upper bound when ``hi`` is None), else an error naming ``key``."""
    if v < lo or (hi is not None and v > hi):
        want = f"in {lo}..{hi}{note}" if hi is not None else f">= {lo}"
        raise ConfigError(f"must be {want}, got {v}", field=key, source=source)
    return v


def _resource_maps(raw: Mapping[str, Any], dominant: int,
                   source: str) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """Weights, thresholds and estimation factors, defaulted as Koordinator does; every weight needs a factor."""
    weights = _int_map(raw.get("resourceWeights"), "resourceWeights", source, 1, 100)
    if not weights and dominant == 0:
        weights = dict(DEFAULT_WEIGHTS)
    thresholds = _int_map(raw.get("usageThresholds"), "usageThresholds", source, 0, 100)
    if not thresholds:  # only an EMPTY map is defaulted; {memory: 0} disables filtering
        thresholds = dict(DEFAULT_THRESHOLDS)
    scaling = _int_map(raw.get("estimatedScalingFactors"), "estimatedScalingFactors", source, 1, 100)
    for k, v in DEFAULT_SCALING.items():
        scaling.setdefault(k, v)
    for name in weights:
        if name not in scaling:
            raise ConfigError(f"resource {name!r} has a weight but no estimatedScalingFactors entry",
                              field=f"resourceWeights.{name}", source=source)
    return weights, thresholds, scaling


def _aggregated(raw: Mapping[str, Any], source: str) -> AggregatedArgs:
    """The ``aggregated`` block: percentile thresholds and the windows they are read from."""
    agg_raw = raw.get("aggregated") or {}
    if not isinstance(agg_raw, Mapping):
        raise ConfigError("must be a mapping", field="aggregated", source=source)
    return AggregatedArgs(
        usage_thresholds=_int_map(agg_raw.get("usageThresholds"), "aggregated.usageThresholds", source, 0, 100),
        usage_aggregation_type=_agg_type(agg_raw, "usageAggregationType", source),
        usage_aggregated_duration=_duration(agg_raw, "usageAggregatedDuration", source),
        score_aggregation_type=_agg_type(agg_raw, "scoreAggregationType", source),
        score_aggregated_duration=_duration(agg_raw, "scoreAggregatedDuration", source),
    )


def _supported(raw: Mapping[str, Any], source: str) -> tuple[str, ...]:
    supported = raw.get("supportedResources") or []
    if not isinstance(supported, list) or not all(isinstance(s, str) for s in supported):
        raise ConfigError("must be a list of resource names", field="supportedResources", source=source)
    return tuple(supported)


def parse_loadaware_args(raw: Mapping[str, Any] | None, *, source: str = "loadaware arguments") -> LoadAwareArgs:
    """Apply Koordinator's v1 defaulting then validation; errors name the JSON field."""
    raw = raw or {}
    if not isinstance(raw, Mapping):
        raise ConfigError("must be a mapping", source=source)
    expiration = raw.get("nodeMetricExpirationSeconds")
    expiration_s = 180 if expiration is None else _int(expiration, "nodeMetricExpirationSeconds", source)
    if expiration_s <= 0:
        raise ConfigError(f"must be > 0, got {expiration_s}", field="nodeMetricExpirationSeconds", source=source)
    dominant = _ranged(_int(raw.get("dominantResourceWeight", 0) or 0, "dominantResourceWeight", source),
                       "dominantResourceWeight", source, 0, 100)
    weights, thresholds, scaling = _resource_maps(raw, dominant, source)
    pressure = _int(raw.get("cpuPressureThreshold", 0) or 0, "cpuPressureThreshold", source)
    return LoadAwareArgs(
        filter_expired_node_metrics=_bool(raw, "filterExpiredNodeMetrics", True, source),
        node_metric_expiration_seconds=expiration_s,
        enable_schedule_when_node_metrics_expired=_bool(raw, "enableScheduleWhenNodeMetricsExpired", False, source),
        resource_weights=weights,
        dominant_resource_weight=dominant,
        usage_thresholds=thresholds,
        prod_usage_thresholds=_int_map(raw.get("prodUsageThresholds"), "prodUsageThresholds", source, None, None),
        prod_usage_include_sys=_bool(raw, "prodUsageIncludeSys", False, source),
        score_according_prod_usage=_bool(raw, "scoreAccordingProdUsage", False, source),
        estimator=str(raw.get("estimator") or ""),
        estimated_scaling_factors=scaling,
        estimated_seconds_after_pod_scheduled=_opt_int(raw, "estimatedSecondsAfterPodScheduled", source),
        estimated_seconds_after_initialized=_opt_int(raw, "estimatedSecondsAfterInitialized", source),
        allow_customize_estimation=_bool(raw, "allowCustomizeEstimation", False, source),
        aggregated=_aggregated(raw, source),
        supported_resources=_supported(raw, source),
        respect_waterlines=_bool(raw, "respectWaterlines", True, source),
        waterline_margin=_ranged(_int(raw.get("waterlineMargin", 5), "waterlineMargin", source),
                                 "waterlineMargin", source, 0, 100),
        relax_after_seconds=_ranged(_int(raw.get("relaxAfterSeconds", 0), "relaxAfterSeconds", source),
                                    "relaxAfterSeconds", source, 0, None),
        cpu_pressure_threshold=_ranged(pressure, "cpuPressureThreshold", source, 0, 100, " (0 = off)"),
    )
