"""The rebalancer's arguments: Koordinator LowNodeLoad's names and defaults, plus Loadwise's eviction limits.

Parsed once from the ``LowNodeLoadArgs``-shaped mapping of the configuration file; every error is a ConfigError
naming the field, so a typo never turns into a silently different policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from common.config import ConfigError, flag, integer
from common.duration import parse_duration
from common.resources import CPU, MEMORY
from common.selectors import LabelSelector, SelectorError

__all__ = ["AnomalyCondition", "PodSelector", "RebalanceArgs", "parse_rebalance_args", "load_rebalance_args",
           "KNOWN_FIELDS"]

KNOWN_FIELDS = frozenset({
    "highThresholds", "lowThresholds", "useDeviationThresholds", "prodHighThresholds", "prodLowThresholds",
    "resourceWeights", "anomalyCondition", "numberOfNodes", "nodeSelector", "evictableNamespaces", "podSelectors",
    "nodeFit", "nodeMetricExpirationSeconds", "dryRun", "paused", "maxEvictionsPerNode", "maxEvictionsPerNamespace",
    "maxEvictionsPerWorkload", "maxEvictionsTotal", "relievedNodeCooldownSeconds", "workloadCooldownSeconds",
    "reservationSeconds", "intervalSeconds", "maxDestinationChecks", "maxEvictionsPercent", "maxEvictionsWindowSeconds",
    "lowDestinationsOnly", "destinationThresholds", "sourceThresholds",
})
_ANOMALY_FIELDS = frozenset({"consecutiveAbnormalities", "consecutiveNormalities", "timeout"})


@dataclass(frozen=True, slots=True)
class AnomalyCondition:
    """A node is abnormal after ``consecutive_abnormalities`` hot observations in a row, normal again after
    ``consecutive_normalities`` cool ones; observations further apart than ``timeout`` seconds do not chain."""

    consecutive_abnormalities: int = 5
    consecutive_normalities: int = 3
    timeout: float = 60.0


@dataclass(frozen=True, slots=True)
class PodSelector:
    name: str
    selector: LabelSelector


@dataclass(frozen=True, slots=True)
class RebalanceArgs:
    high_thresholds: Mapping[str, int]
    low_thresholds: Mapping[str, int]
    destination_thresholds: Mapping[str, int] = field(default_factory=dict)  # default: the high ones
    source_thresholds: Mapping[str, int] = field(default_factory=dict)  # default: the high ones
    use_deviation_thresholds: bool = False
    prod_high_thresholds: Mapping[str, int] = field(default_factory=dict)
    prod_low_thresholds: Mapping[str, int] = field(default_factory=dict)
    resource_weights: Mapping[str, int] = field(default_factory=lambda: {CPU: 1, MEMORY: 1})
    anomaly_condition: AnomalyCondition = field(default_factory=AnomalyCondition)
    number_of_nodes: int = 0
    node_selector: LabelSelector = field(default_factory=LabelSelector)
    include_namespaces: frozenset[str] = frozenset()
    exclude_namespaces: frozenset[str] = frozenset()
    pod_selectors: tuple[PodSelector, ...] = ()
    node_fit: bool = True
    low_destinations_only: bool = False
    node_metric_expiration_seconds: int = 180
    dry_run: bool = False
    paused: bool = False
    # Loadwise's limits against eviction storms (per rebalancing round) and repeated moves
    max_evictions_per_node: int = 1
    max_evictions_per_namespace: int = 0  # 0: no limit
    max_evictions_per_workload: int = 1
    max_evictions_total: int = 10
    relieved_node_cooldown_seconds: float = 600.0
    workload_cooldown_seconds: float = 3600.0
    reservation_seconds: float = 300.0
    interval_seconds: float = 60.0
    max_destination_checks: int = 20
    # across rounds: evictions within any window, as a percent of the pods on the selected nodes (0: no limit)
    max_evictions_percent: float = 1.0
    max_evictions_window_seconds: float = 3600.0

    @property
    def resources(self) -> tuple[str, ...]:
        """The resources classification looks at: every resource any threshold names, sorted."""
        names = set(self.high_thresholds) | set(self.low_thresholds)
        names |= set(self.prod_high_thresholds) | set(self.prod_low_thresholds)
        return tuple(sorted(names))

    def weight(self, resource: str) -> int:
        return self.resource_weights.get(resource, 1)


def _thresholds(raw: Any, name: str, source: str) -> dict[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"expected a map of resource to percent, got {raw!r:.60}", field=name, source=source)
    out: dict[str, int] = {}
    for resource, value in raw.items():
        pct = integer(value, field=f"{name}.{resource}", source=source)
        if not 0 <= pct <= 100:
            raise ConfigError(f"must be a percent in 0..100, got {pct}", field=f"{name}.{resource}", source=source)
        out[str(resource)] = pct
    return out


def _pair(raw: Mapping[str, Any], low_key: str, high_key: str, source: str,
          required: bool) -> tuple[dict[str, int], dict[str, int]]:
    """Low and high thresholds of one kind: both or neither, the same resources, low <= high."""
    low, high = _thresholds(raw.get(low_key), low_key, source), _thresholds(raw.get(high_key), high_key, source)
    if required and not high:
        raise ConfigError("required: at least one resource's percent", field=high_key, source=source)
    if set(low) != set(high):
        missing = sorted(set(low) ^ set(high))
        raise ConfigError(f"{low_key} and {high_key} must name the same resources; differ in {', '.join(missing)}",
                          field=low_key, source=source)
    for resource, pct in low.items():
        if pct > high[resource]:
            raise ConfigError(f"{pct} is above {high_key}.{resource} ({high[resource]})",
                              field=f"{low_key}.{resource}", source=source)
    return low, high


def _between(raw: Any, key: str, low: Mapping[str, int], high: Mapping[str, int], source: str) -> dict[str, int]:
    """``destinationThresholds`` (how full a destination may get) or ``sourceThresholds`` (how far a move must bring
    its source down): per resource of ``highThresholds``, up to its high percent and (unless the thresholds are
    deviations, ``low`` then empty) not below its low one."""
    out = _thresholds(raw, key, source)
    for resource, pct in out.items():
        where = f"{key}.{resource}"
        if resource not in high:
            raise ConfigError("names a resource highThresholds does not", field=where, source=source)
        if not low.get(resource, 0) <= pct <= high[resource]:
            raise ConfigError(f"{pct} is not between lowThresholds.{resource} ({low.get(resource, 0)}) and "
                              f"highThresholds.{resource} ({high[resource]})", field=where, source=source)
    return out


def _bool(raw: Mapping[str, Any], key: str, default: bool, source: str) -> bool:
    return flag(raw, key, default, source=source)


def _count(raw: Mapping[str, Any], key: str, default: int, source: str, minimum: int = 0) -> int:
    v = raw.get(key)
    if v is None:
        return default
    n = integer(v, field=key, source=source)
    if n < minimum:
        raise ConfigError(f"must be at least {minimum}, got {n}", field=key, source=source)
    return n


def _seconds(raw: Any, key: str, default: float, source: str) -> float:
    if raw is None:
        return default
    try:
        value = parse_duration(raw, field=key)
    except ValueError as exc:
        raise ConfigError(str(exc), field=key, source=source) from exc
    if value < 0:
        raise ConfigError(f"must not be negative, got {raw!r}", field=key, source=source)
    return value


def _weights(raw: Any, resources: tuple[str, ...], source: str) -> dict[str, int]:
    """cpu and memory weigh 1 by default, as does every resource a threshold names; a weight <= 0 counts as 1."""
    if raw is not None and not isinstance(raw, Mapping):
        raise ConfigError(f"expected a map of resource to weight, got {raw!r:.60}", field="resourceWeights",
                          source=source)
    weights = {CPU: 1, MEMORY: 1} | dict.fromkeys(resources, 1)
    for resource, value in (raw or {}).items():
        w = integer(value, field=f"resourceWeights.{resource}", source=source)
        weights[str(resource)] = w if w > 0 else 1
    return weights


def _anomaly(raw: Any, source: str) -> AnomalyCondition:
    if raw is None:
        return AnomalyCondition()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"expected an object, got {raw!r:.60}", field="anomalyCondition", source=source)
    unknown = sorted(set(raw) - _ANOMALY_FIELDS)
    if unknown:
        raise ConfigError(f"unknown field {unknown[0]!r}", field="anomalyCondition", source=source)
    d = AnomalyCondition()
    return AnomalyCondition(
        _count(raw, "consecutiveAbnormalities", d.consecutive_abnormalities, f"{source}: anomalyCondition", 1),
        _count(raw, "consecutiveNormalities", d.consecutive_normalities, f"{source}: anomalyCondition", 1),
        _seconds(raw.get("timeout"), "anomalyCondition.timeout", d.timeout, source),
    )


def _namespaces(raw: Any, source: str) -> tuple[frozenset[str], frozenset[str]]:
    if raw is None:
        return frozenset(), frozenset()
    if not isinstance(raw, Mapping) or set(raw) - {"include", "exclude"}:
        raise ConfigError("expected an object with include or exclude (lists of namespaces)",
                          field="evictableNamespaces", source=source)
    lists = []
    for key in ("include", "exclude"):
        v = raw.get(key) or []
        if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
            raise ConfigError(f"expected a list of namespace names, got {v!r:.60}",
                              field=f"evictableNamespaces.{key}", source=source)
        lists.append(frozenset(v))
    if lists[0] and lists[1]:
        raise ConfigError("give include or exclude, not both", field="evictableNamespaces", source=source)
    return lists[0], lists[1]


def _selector(raw: Any, name: str, source: str) -> LabelSelector:
    try:
        return LabelSelector.parse(raw, field=name)
    except SelectorError as exc:
        raise ConfigError(str(exc), source=source) from exc


def _pod_selectors(raw: Any, source: str) -> tuple[PodSelector, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(f"expected a list of {{name, selector}}, got {raw!r:.60}", field="podSelectors",
                          source=source)
    out = []
    for i, item in enumerate(raw):
        where = f"podSelectors[{i}]"
        if not isinstance(item, Mapping):
            raise ConfigError("expected an object with name and selector", field=where, source=source)
        out.append(PodSelector(str(item.get("name") or where), _selector(item.get("selector"), f"{where}.selector",
                                                                          source)))
    return tuple(out)


def parse_rebalance_args(raw: Mapping[str, Any], *, source: str = "rebalancer arguments") -> RebalanceArgs:
    """Validated arguments; an unknown field, a wrong type or an inconsistent threshold raises ConfigError."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"expected an object, got {raw!r:.60}", source=source)
    unknown = sorted(set(raw) - KNOWN_FIELDS)
    if unknown:
        raise ConfigError(f"unknown field (known: {', '.join(sorted(KNOWN_FIELDS))})", field=unknown[0],
                          source=source)
    low, high = _pair(raw, "lowThresholds", "highThresholds", source, required=True)
    deviation = _bool(raw, "useDeviationThresholds", False, source)
    destination = _between(raw.get("destinationThresholds"), "destinationThresholds", {} if deviation else low, high,
                           source)
    relieved = _between(raw.get("sourceThresholds"), "sourceThresholds", {} if deviation else low, high, source)
    prod_low, prod_high = _pair(raw, "prodLowThresholds", "prodHighThresholds", source, required=False)
    resources = tuple(sorted(set(high) | set(prod_high)))
    include, exclude = _namespaces(raw.get("evictableNamespaces"), source)
    d = RebalanceArgs({}, {})
    return RebalanceArgs(
        high_thresholds=high, low_thresholds=low, destination_thresholds=destination, source_thresholds=relieved,
        use_deviation_thresholds=deviation,
        prod_high_thresholds=prod_high, prod_low_thresholds=prod_low,
        resource_weights=_weights(raw.get("resourceWeights"), resources, source),
        anomaly_condition=_anomaly(raw.get("anomalyCondition"), source),
        number_of_nodes=_count(raw, "numberOfNodes", 0, source),
        node_selector=_selector(raw.get("nodeSelector"), "nodeSelector", source),
        include_namespaces=include, exclude_namespaces=exclude,
        pod_selectors=_pod_selectors(raw.get("podSelectors"), source),
        node_fit=_bool(raw, "nodeFit", True, source),
        low_destinations_only=_bool(raw, "lowDestinationsOnly", d.low_destinations_only, source),
        node_metric_expiration_seconds=_count(raw, "nodeMetricExpirationSeconds", 180, source, 1),
        dry_run=_bool(raw, "dryRun", False, source),
        paused=_bool(raw, "paused", False, source),
        max_evictions_per_node=_count(raw, "maxEvictionsPerNode", d.max_evictions_per_node, source, 1),
        max_evictions_per_namespace=_count(raw, "maxEvictionsPerNamespace", 0, source),
        max_evictions_per_workload=_count(raw, "maxEvictionsPerWorkload", d.max_evictions_per_workload, source, 1),
        max_evictions_total=_count(raw, "maxEvictionsTotal", d.max_evictions_total, source, 1),
        relieved_node_cooldown_seconds=_seconds(raw.get("relievedNodeCooldownSeconds"), "relievedNodeCooldownSeconds",
                                                d.relieved_node_cooldown_seconds, source),
        workload_cooldown_seconds=_seconds(raw.get("workloadCooldownSeconds"), "workloadCooldownSeconds",
                                           d.workload_cooldown_seconds, source),
        reservation_seconds=_seconds(raw.get("reservationSeconds"), "reservationSeconds", d.reservation_seconds,
                                     source),
        interval_seconds=_positive(raw.get("intervalSeconds"), "intervalSeconds", d.interval_seconds, source),
        max_destination_checks=_count(raw, "maxDestinationChecks", d.max_destination_checks, source, 1),
        max_evictions_percent=_fraction_percent(raw.get("maxEvictionsPercent"), "maxEvictionsPercent",
                                                d.max_evictions_percent, source),
        max_evictions_window_seconds=_positive(raw.get("maxEvictionsWindowSeconds"), "maxEvictionsWindowSeconds",
                                               d.max_evictions_window_seconds, source),
    )


def _fraction_percent(raw: Any, key: str, default: float, source: str) -> float:
    """A percent that may have a fraction (``0.5``), in 0..100."""
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 <= raw <= 100:
        raise ConfigError(f"must be a percent in 0..100, got {raw!r}", field=key, source=source)
    return float(raw)


def _positive(raw: Any, key: str, default: float, source: str) -> float:
    value = _seconds(raw, key, default, source)
    if value <= 0:
        raise ConfigError(f"must be positive, got {raw!r}", field=key, source=source)
    return value


def load_rebalance_args(path: str) -> RebalanceArgs:
    """Arguments from a YAML or JSON file holding the arguments mapping."""
    from common.config import load_document

    return parse_rebalance_args(load_document(path), source=str(path))
