"""Arguments: Koordinator's names and defaults, and errors that name the field."""

from __future__ import annotations

from typing import Any

import pytest

from common.config import ConfigError
from rebalancer.args import parse_rebalance_args


def _args(**kw: Any) -> dict[str, Any]:
    return {"highThresholds": {"cpu": 70, "memory": 80}, "lowThresholds": {"cpu": 30, "memory": 40}, **kw}


def test_defaults_are_koordinators() -> None:
    a = parse_rebalance_args(_args())
    assert a.anomaly_condition.consecutive_abnormalities == 5
    assert a.anomaly_condition.consecutive_normalities == 3
    assert a.anomaly_condition.timeout == 60.0
    assert a.node_fit is True
    assert a.node_metric_expiration_seconds == 180
    assert a.number_of_nodes == 0
    assert (a.dry_run, a.paused, a.use_deviation_thresholds) == (False, False, False)
    assert dict(a.resource_weights) == {"cpu": 1, "memory": 1}


def test_weights_fall_back_to_one() -> None:
    a = parse_rebalance_args(_args(highThresholds={"cpu": 70, "memory": 80, "pods": 90},
                                   lowThresholds={"cpu": 30, "memory": 40, "pods": 50},
                                   resourceWeights={"cpu": 0, "memory": 3}))
    assert dict(a.resource_weights) == {"cpu": 1, "memory": 3, "pods": 1}


@pytest.mark.parametrize("raw, field", [
    ({"lowThresholds": {"cpu": 30}}, "highThresholds"),
    (_args(highThresholds={"cpu": 101, "memory": 80}), "highThresholds.cpu"),
    (_args(lowThresholds={"cpu": 75, "memory": 40}), "lowThresholds.cpu"),
    (_args(lowThresholds={"cpu": 30}), "lowThresholds"),
    (_args(prodHighThresholds={"cpu": 60}), "prodLowThresholds"),
    (_args(highThresholds={"cpu": "lots", "memory": 80}), "highThresholds.cpu"),
    (_args(anomalyCondition={"consecutiveAbnormalities": 0}), "consecutiveAbnormalities"),
    (_args(anomalyCondition={"consecutiveAbnormals": 3}), "anomalyCondition"),
    (_args(nodeFit="yes"), "nodeFit"),
    (_args(evictableNamespaces={"include": ["a"], "exclude": ["b"]}), "evictableNamespaces"),
    (_args(podSelectors=[{"name": "x", "selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}]),
     "podSelectors[0].selector.matchExpressions[0].operator"),
    (_args(maxEvictionsPerNode=0), "maxEvictionsPerNode"),
    (_args(reservationSeconds="soon"), "reservationSeconds"),
    (_args(maxEvictionsPercent=150), "maxEvictionsPercent"),
    (_args(destinationThresholds={"cpu": 75}), "destinationThresholds.cpu"),
    (_args(destinationThresholds={"cpu": 20}), "destinationThresholds.cpu"),
    (_args(destinationThresholds={"pods": 50}), "destinationThresholds.pods"),
    (_args(sourceThresholds={"cpu": 75}), "sourceThresholds.cpu"),
    (_args(sourceThresholds={"memory": "most"}), "sourceThresholds.memory"),
    (_args(maxEvictionsPercent="1%"), "maxEvictionsPercent"),
    (_args(maxEvictionsWindowSeconds=0), "maxEvictionsWindowSeconds"),
    (_args(highThreshold={"cpu": 70}), "highThreshold"),
])
def test_bad_arguments_name_the_field(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_rebalance_args(raw, source="f.yaml")


def test_durations_and_namespaces() -> None:
    a = parse_rebalance_args(_args(reservationSeconds="5m", evictableNamespaces={"exclude": ["kube-system"]},
                                   anomalyCondition={"timeout": "2m"}))
    assert a.reservation_seconds == 300.0
    assert a.anomaly_condition.timeout == 120.0
    assert a.exclude_namespaces == frozenset({"kube-system"})


def test_the_budget_across_rounds_takes_a_fraction_of_a_percent() -> None:
    a = parse_rebalance_args(_args(maxEvictionsPercent=0.5, maxEvictionsWindowSeconds="2h"))
    assert (a.max_evictions_percent, a.max_evictions_window_seconds) == (0.5, 7200.0)
    assert parse_rebalance_args(_args()).max_evictions_percent == 1.0
