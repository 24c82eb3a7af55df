"""LoadAwareScheduling args defaulting/validation and the default estimator (docs/design/loadaware.md §1, §4)."""

from __future__ import annotations

import json

import pytest

from common.config import ConfigError
from scheduler.loadaware.args import parse_loadaware_args
from scheduler.loadaware.estimator import SCALING_FACTORS_ANNOTATION, estimate_pod
from tests.scheduler.loadaware.helpers import GI, pod

F = {"cpu": 85, "memory": 70}


def test_defaults() -> None:
    a = parse_loadaware_args(None)
    assert a.filter_expired_node_metrics and a.node_metric_expiration_seconds == 180
    assert not a.enable_schedule_when_node_metrics_expired
    assert dict(a.resource_weights) == {"cpu": 1, "memory": 1}
    assert dict(a.usage_thresholds) == {"cpu": 65, "memory": 95}
    assert dict(a.estimated_scaling_factors) == {"cpu": 85, "memory": 70}
    assert a.prod_usage_thresholds == {} and a.respect_waterlines and a.waterline_margin == 5
    assert a.resource_names == ("cpu", "memory")


@pytest.mark.parametrize(
    ("raw", "check"),
    [
        ({"usageThresholds": {"memory": 0}}, lambda a: dict(a.usage_thresholds) == {"memory": 0}),  # not defaulted
        ({"dominantResourceWeight": 10}, lambda a: dict(a.resource_weights) == {}),  # no default weights
        ({"estimatedScalingFactors": {"cpu": 50}}, lambda a: dict(a.estimated_scaling_factors) == {"cpu": 50,
                                                                                                   "memory": 70}),
        ({"supportedResources": ["nvidia.com/gpu"], "usageThresholds": {"kubernetes.io/batch-cpu": 50}},
         lambda a: a.resource_names == ("cpu", "kubernetes.io/batch-cpu", "memory", "nvidia.com/gpu")),
        ({"aggregated": {"usageThresholds": {"cpu": 60}, "usageAggregationType": "p95",
                         "usageAggregatedDuration": "5m0s"}},
         lambda a: a.aggregated.filter_enabled and a.aggregated.usage_aggregated_duration == 300.0),
        ({"aggregated": {"usageThresholds": {"cpu": 60}}}, lambda a: not a.aggregated.filter_enabled),
    ],
)
def test_defaulting_rules(raw: dict[str, object], check: object) -> None:
    assert callable(check) and check(parse_loadaware_args(raw))


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"nodeMetricExpirationSeconds": 0}, "nodeMetricExpirationSeconds"),
        ({"resourceWeights": {"cpu": 101}}, "resourceWeights.cpu"),
        ({"resourceWeights": {"cpu": 0}}, "resourceWeights.cpu"),
        ({"resourceWeights": {"nvidia.com/gpu": 1}}, "resourceWeights.nvidia.com/gpu"),
        ({"dominantResourceWeight": 101}, "dominantResourceWeight"),
        ({"usageThresholds": {"cpu": 101}}, "usageThresholds.cpu"),
        ({"estimatedScalingFactors": {"cpu": 0}}, "estimatedScalingFactors.cpu"),
        ({"aggregated": {"usageAggregationType": "p42"}}, "aggregated.usageAggregationType"),
        ({"aggregated": {"scoreAggregatedDuration": "-5m"}}, "aggregated.scoreAggregatedDuration"),
        ({"filterExpiredNodeMetrics": "yes"}, "filterExpiredNodeMetrics"),
    ],
)
def test_validation_names_field(raw: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_loadaware_args(raw)
    assert e.value.field == field


def test_prod_thresholds_not_validated() -> None:
    assert parse_loadaware_args({"prodUsageThresholds": {"cpu": 150}}).prod_usage_thresholds == {"cpu": 150}


@pytest.mark.parametrize(
    ("kwargs", "want"),
    [
        ({"requests": {"cpu": "16", "memory": "32Gi"}, "limits": {"cpu": "16", "memory": "32Gi"}},
         {"cpu": 13600, "memory": 24051816858}),  # 24051816857.6 rounds half away
        ({"requests": {"cpu": "8", "memory": "16Gi"}, "limits": {"cpu": "16", "memory": "32Gi"}},
         {"cpu": 13600, "memory": 24051816858}),  # limit wins
        ({}, {"cpu": 250, "memory": 209715200}),  # empty BestEffort (batch) pod
        ({"requests": {"kubernetes.io/batch-cpu": "16000", "kubernetes.io/batch-memory": "1Gi"},
          "labels": {"koordinator.sh/priority-class": "koord-batch"}}, {"cpu": 13600, "memory": 751619277}),
        ({"requests": {"kubernetes.io/mid-cpu": "12k"}, "labels": {"koordinator.sh/priority-class": "koord-mid"}},
         {"cpu": 10200, "memory": 0}),  # mid memory gets no default
        ({"requests": {"cpu": "1"}, "labels": {"koordinator.sh/priority-class": "koord-free"}},
         {"cpu": 0, "memory": 0}),
        ({"requests": {"cpu": "1", "memory": "1Gi"}, "priority": 5500}, {"cpu": 250, "memory": 209715200}),
    ],
)
def test_estimator(kwargs: dict[str, object], want: dict[str, int]) -> None:
    assert estimate_pod(pod(**kwargs), F) == want  # type: ignore[arg-type]


def test_custom_scaling_annotation_only_when_allowed() -> None:
    p = pod(requests={"cpu": "10", "memory": "10Gi"}, annotations={SCALING_FACTORS_ANNOTATION: json.dumps({"cpu": 50})})
    assert estimate_pod(p, F)["cpu"] == 8500
    got = estimate_pod(p, F, allow_customize=True)
    assert got["cpu"] == 5000 and got["memory"] == round(10 * GI * 0.7)
    bad = pod(requests={"cpu": "10"}, annotations={SCALING_FACTORS_ANNOTATION: "{not json"})
    assert estimate_pod(bad, F, allow_customize=True)["cpu"] == 8500


@pytest.mark.parametrize("factors", ['{"cpu": 1e30}', '{"cpu": NaN}', '{"cpu": Infinity}', '{"cpu": 50.5}',
                                     '{"cpu": 50, "memory": 1e300}', '{"cpu": 1' + '0' * 400 + '}'])
def test_custom_scaling_values_go_would_not_decode_make_the_annotation_invalid(factors: str) -> None:
    # one such pod used to fail every session (OverflowError, or int() of NaN); now it gets the plugin's factors
    p = pod(requests={"cpu": "10"}, annotations={SCALING_FACTORS_ANNOTATION: factors})
    assert estimate_pod(p, F, allow_customize=True)["cpu"] == 8500


def test_a_huge_custom_factor_without_a_limit_is_bounded() -> None:
    from common.resources import MAX_QUANTITY

    p = pod(requests={"cpu": "1000", "memory": "1Ti"}, annotations={SCALING_FACTORS_ANNOTATION: '{"cpu": 1000000000000}'})
    assert estimate_pod(p, F, allow_customize=True)["cpu"] == MAX_QUANTITY
