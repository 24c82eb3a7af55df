"""WaterlinePolicy files are checked against the CRD's own schema: what the API server would refuse is refused,
with the field named; and the inputs that were accepted but wrong are refused or reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from common import crdschema
from common.config import ConfigError
from common.waterline import CRD_FILE, KNOWN_METRICS, WaterlinePolicy
from tests.edit import replaced

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "deploy" / "examples" / "waterlinepolicy.yaml"
R0 = "spec.objectiveEnsurances[0]"


def example() -> dict[str, Any]:
    (doc,) = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
    return dict(doc)


def test_the_packaged_schema_is_the_deployed_crd() -> None:
    (crd,) = [d for d in yaml.safe_load_all((ROOT / "deploy" / "crds" / CRD_FILE).read_text()) if d]
    assert crdschema.crd_schema(CRD_FILE) == crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    rule = crdschema.crd_schema(CRD_FILE)["properties"]["spec"]["properties"]["objectiveEnsurances"]["items"]
    assert set(rule["properties"]["metricRule"]["properties"]["name"]["enum"]) == set(KNOWN_METRICS)


SCOPE = ("spec", "podQOS", 0, "scopeSelector", "matchExpressions", 0, "scopeName")


@pytest.mark.parametrize(
    ("path", "value", "field", "words"),
    [
        # matched every pod before: a wrong-case scope throttled the BestEffort and Burstable pods it meant to spare
        (SCOPE, "Nonsense", "spec.podQOS[0].scopeSelector.matchExpressions[0].scopeName", "'Nonsense' is not one of"),
        (SCOPE, "QoSClass", "spec.podQOS[0].scopeSelector.matchExpressions[0].scopeName", "'QoSClass'"),
        # a bare number was read as a percent
        (("spec", "executeExcess"), "10", "spec.executeExcess", "'10' does not match"),
        (("spec", "executeExcess"), 10, "spec.executeExcess", "10 is not of type 'string'"),
        # unknown keys are refused where the API server's strict field validation refuses them
        (("spec", "objectiveEnsurances", 0, "avoidanceTreshold"), 2, f"{R0}.avoidanceTreshold", "unknown field"),
        (("spec", "objectiveEnsurances", 0, "metricRule", "name"), "cpu_temperature", f"{R0}.metricRule.name",
         "is not one of"),
        (("spec", "objectiveEnsurances", 0, "action", "coolDownSeconds"), "300", f"{R0}.action.coolDownSeconds",
         "is not of type 'integer'"),
    ],
)
def test_refused_naming_the_field(path: tuple[Any, ...], value: Any, field: str, words: str) -> None:
    with pytest.raises(ConfigError) as err:
        WaterlinePolicy.parse(replaced(example(), path, value), source="policy.yaml")
    assert err.value.field == field
    assert str(err.value).startswith(f"policy.yaml: {field}: ") and words in str(err.value)


def test_a_required_field_is_named_itself() -> None:
    doc = example()
    del doc["spec"]["objectiveEnsurances"][0]["metricRule"]
    with pytest.raises(ConfigError) as err:
        WaterlinePolicy.parse(doc)
    assert err.value.field == f"{R0}.metricRule" and str(err.value).endswith(": required")


def test_a_misspelt_allowed_action_is_refused_naming_the_rule() -> None:
    """``allowedActions: [throtle]`` used to taint the node and throttle nothing."""
    doc = replaced(example(), ("spec", "podQOS", 0, "allowedActions"), ["throtle", "eviction"])
    with pytest.raises(ConfigError) as err:
        WaterlinePolicy.parse(doc)
    assert err.value.field == f"{R0}.action.name"
    assert "'throttle' (throttle) is allowed by no podQOS" in str(err.value)
    assert "spec.podQOS[0].allowedActions[0]: 'throtle' is not an action of this policy" in str(err.value)


def test_dead_allowed_action_names_are_reported_not_refused() -> None:
    doc = replaced(example(), ("spec", "podQOS", 0, "allowedActions"), ["throttle", "eviction", "drain"])
    policy = WaterlinePolicy.parse(doc)
    assert policy.warnings == (
        "spec.podQOS[0].allowedActions[2]: 'drain' is not an action of this policy (its actions: eviction, throttle)",)
    assert WaterlinePolicy.parse(example()).warnings == ()


def test_crane_rule_names_are_accepted() -> None:
    """crane's own examples name rules after their metric (``ext_cpu_total_distribute``)."""
    doc = replaced(example(), ("spec", "objectiveEnsurances", 0, "name"), "ext_cpu_total_distribute")
    assert WaterlinePolicy.parse(doc).rules[0].name == "ext_cpu_total_distribute"
    with pytest.raises(ConfigError):
        WaterlinePolicy.parse(replaced(example(), ("spec", "objectiveEnsurances", 0, "name"), "cpu usage"))


def test_execute_excess_is_exact() -> None:
    doc = replaced(example(), ("spec", "executeExcess"), "12.5%")
    assert WaterlinePolicy.parse(doc).execute_excess * 1000 == 125


def test_the_agent_configs_collect_policy_is_checked_against_the_nodemetric_crd() -> None:
    """The agent config's metricCollectPolicy has the NodeMetric spec's fields: the same schema checks both."""
    from agent.config import AgentConfig

    with pytest.raises(ConfigError) as err:
        AgentConfig.from_mapping({"metricCollectPolicy": {"aggregateDurationSecond": 300}}, source="agent.yaml")
    assert err.value.field == "metricCollectPolicy.aggregateDurationSecond"
    assert str(err.value).startswith("agent.yaml: metricCollectPolicy.aggregateDurationSecond: unknown field")
    with pytest.raises(ConfigError) as err:
        AgentConfig.from_mapping({"metricCollectPolicy": {"nodeAggregatePolicy": {"durations": ["5 minutes"]}}})
    assert err.value.field == "metricCollectPolicy.nodeAggregatePolicy.durations[0]"
