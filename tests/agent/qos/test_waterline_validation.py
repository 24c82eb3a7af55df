"""docs/design/waterline.md §1: every field of WaterlinePolicy is validated and a rejection names its path."""

from __future__ import annotations

import copy
from fractions import Fraction
from typing import Any

import pytest

from common.config import ConfigError
from common.waterline import WaterlinePolicy
from tests.agent.qos.factories import ALL_BE, THROTTLE, policy_dict, rule

R0 = "spec.objectiveEnsurances[0]"


def _with(path: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """Set (or with ``...`` delete) one dotted/indexed path in a default policy dict."""
    doc = copy.deepcopy(base or policy_dict(rule(action=copy.deepcopy(THROTTLE))))
    parts = path.replace("]", "").replace("[", ".").split(".")
    cur: Any = doc
    for p in parts[:-1]:
        cur = cur[int(p)] if isinstance(cur, list) else cur.setdefault(p, {})
    last = parts[-1]
    if value is ...:
        del cur[last]
    elif isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value
    return doc


REJECTED = [
    ("metadata.name", ..., "metadata.name"),
    ("spec.nodeSelector", {"matchExpressions": [{"key": "a", "operator": "Bogus"}]},
     "spec.nodeSelector.matchExpressions[0].operator"),
    ("spec.nodeSelector", "pool=x", "spec.nodeSelector"),
    ("spec.executeExcess", "101%", "spec.executeExcess"),
    ("spec.executeExcess", "-1%", "spec.executeExcess"),
    ("spec.executeExcess", "ten", "spec.executeExcess"),
    ("spec.objectiveEnsurances", [], "spec.objectiveEnsurances"),
    ("spec.objectiveEnsurances", ..., "spec.objectiveEnsurances"),
    (f"{R0}.name", ..., f"{R0}.name"),
    (f"{R0}.name", "bad name", f"{R0}.name"),
    (f"{R0}.name", "_leading", f"{R0}.name"),
    (f"{R0}.name", "x" * 64, f"{R0}.name"),
    (f"{R0}.metricRule.name", ..., f"{R0}.metricRule.name"),
    (f"{R0}.metricRule.name", "cpu_usage_percent", f"{R0}.metricRule.name"),
    (f"{R0}.metricRule.value", ..., f"{R0}.metricRule.value"),
    (f"{R0}.metricRule.value", "0", f"{R0}.metricRule.value"),
    (f"{R0}.metricRule.value", "-5", f"{R0}.metricRule.value"),
    (f"{R0}.metricRule.value", "lots", f"{R0}.metricRule.value"),
    (f"{R0}.metricRule.selector", {"matchExpressions": [{"key": "diskName", "operator": "In"}]},
     f"{R0}.metricRule.selector.matchExpressions[0].values"),
    (f"{R0}.avoidanceThreshold", 0, f"{R0}.avoidanceThreshold"),
    (f"{R0}.avoidanceThreshold", -1, f"{R0}.avoidanceThreshold"),
    (f"{R0}.avoidanceThreshold", "2", f"{R0}.avoidanceThreshold"),
    (f"{R0}.restoreThreshold", 0, f"{R0}.restoreThreshold"),
    (f"{R0}.restoreThreshold", -3, f"{R0}.restoreThreshold"),
    (f"{R0}.strategy", "DryRun", f"{R0}.strategy"),
    (f"{R0}.action", ..., f"{R0}.action"),
    (f"{R0}.action.name", ..., f"{R0}.action.name"),
    (f"{R0}.action.name", "Throttle", f"{R0}.action.name"),
    (f"{R0}.action.coolDownSeconds", 0, f"{R0}.action.coolDownSeconds"),
    (f"{R0}.action.coolDownSeconds", -10, f"{R0}.action.coolDownSeconds"),
    (f"{R0}.action.description", "x" * 1025, f"{R0}.action.description"),
    (f"{R0}.action.throttle.cpuThrottle.minCPURatio", 101, f"{R0}.action.throttle.cpuThrottle.minCPURatio"),
    (f"{R0}.action.throttle.cpuThrottle.minCPURatio", -1, f"{R0}.action.throttle.cpuThrottle.minCPURatio"),
    (f"{R0}.action.throttle.cpuThrottle.stepCPURatio", 150, f"{R0}.action.throttle.cpuThrottle.stepCPURatio"),
    (f"{R0}.action.throttle.memoryThrottle.forceGC", "yes", f"{R0}.action.throttle.memoryThrottle.forceGC"),
    (f"{R0}.action.eviction", {"terminationGracePeriodSeconds": -1},
     f"{R0}.action.eviction.terminationGracePeriodSeconds"),
    ("spec.podQOS[0].scopeSelector.matchExpressions[0].operator", "Exists",
     "spec.podQOS[0].scopeSelector.matchExpressions[0].operator"),
    ("spec.podQOS[0].scopeSelector.matchExpressions[0].values", [],
     "spec.podQOS[0].scopeSelector.matchExpressions[0].values"),
    ("spec.podQOS[0].allowedActions", "eviction", "spec.podQOS[0].allowedActions"),
    ("spec.podQOS", {"a": 1}, "spec.podQOS"),
    ("metadata.annotations", {"qos.loadwise.io/dry-run": "maybe"},
     "metadata.annotations[qos.loadwise.io/dry-run]"),
]


@pytest.mark.parametrize(("path", "value", "field"), REJECTED, ids=[f"validate-{r[2]}-{i}" for i, r in enumerate(REJECTED)])
def test_validate_rejects_with_field_path(path: str, value: Any, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        WaterlinePolicy.parse(_with(path, value))
    assert err.value.field == field
    assert str(err.value).startswith(f"{field}: ")


def test_validate_priority_scope_values() -> None:
    doc = policy_dict(pod_qos=[{"scopeSelector": {"matchExpressions": [
        {"scopeName": "Priority", "operator": "In", "values": ["0-100", "x"]}]}, "allowedActions": ["eviction"]}])
    with pytest.raises(ConfigError) as err:
        WaterlinePolicy.parse(doc)
    assert err.value.field == "spec.podQOS[0].scopeSelector.matchExpressions[0].values[1]"


def test_validate_duplicate_rule_names() -> None:
    doc = policy_dict(rule("a"), rule("a", value="7000"))
    with pytest.raises(ConfigError) as err:
        WaterlinePolicy.parse(doc)
    assert err.value.field == "spec.objectiveEnsurances[1].name"


def test_validate_shared_action_name_needs_identical_body() -> None:
    a = {"name": "eviction", "eviction": {"terminationGracePeriodSeconds": 5}}
    b = {"name": "eviction", "eviction": {"terminationGracePeriodSeconds": 9}}
    with pytest.raises(ConfigError) as err:
        WaterlinePolicy.parse(policy_dict(rule("a", action=a), rule("b", action=b)))
    assert err.value.field == "spec.objectiveEnsurances[1].action"
    ok = WaterlinePolicy.parse(policy_dict(rule("a", action=a), rule("b", action=copy.deepcopy(a))))
    assert ok.rules[0].action == ok.rules[1].action


def test_defaults() -> None:
    p = WaterlinePolicy.parse(policy_dict(rule(action={"name": "only-taint"})))
    r = p.rules[0]
    assert p.execute_excess == Fraction(1, 10)
    assert p.node_selector.empty and p.applies_to({"any": "node"})
    assert (r.avoidance_threshold, r.restore_threshold, r.strategy) == (1, 1, "None")
    assert r.action.cool_down_seconds == 300
    assert r.action.throttle is None and r.action.eviction is None
    assert r.action.kinds == ("disableScheduling",)
    assert not p.dry_run


def test_exact_decimal_waterline_b13() -> None:
    p = WaterlinePolicy.parse(policy_dict(rule(metric="cpu_total_utilization", value="0.5")))
    assert p.rules[0].metric.value == Fraction(1, 2)  # upstream rounds this up to 1
    p = WaterlinePolicy.parse(policy_dict(rule(value="4000m")))
    assert p.rules[0].metric.value == 4  # "4000m" is 4 millicores: the documented unit trap


def test_every_listed_metric_is_accepted() -> None:
    for name in ("ext_cpu_total_distribute", "memory_total", "cpu_core_numbers", "container_sched_run_queue_time"):
        WaterlinePolicy.parse(policy_dict(rule(metric=name, value="1")))


def test_full_example_from_spec() -> None:
    doc = policy_dict(
        rule("cpu-usage", value="6000", avoidanceThreshold=2, restoreThreshold=2, strategy="None",
             action={"name": "throttle", "coolDownSeconds": 300, "description": "",
                     "throttle": {"cpuThrottle": {"minCPURatio": 10, "stepCPURatio": 10},
                                  "memoryThrottle": {"forceGC": False}},
                     "eviction": {"terminationGracePeriodSeconds": 30}}),
        name="colocation",
        nodeSelector={"matchLabels": {"pool": "colocation"}},
        executeExcess="10%",
        pod_qos=[{"name": "all-be-pods", "labelSelector": {"matchLabels": {"preemptible_job": "true"}},
                  "scopeSelector": {"matchExpressions": [
                      {"scopeName": "QOSClass", "operator": "In", "values": ["BestEffort"]}]},
                  "allowedActions": ["throttle", "eviction"]}],
    )
    p = WaterlinePolicy.parse(doc)
    assert p.rule_key(p.rules[0]) == "colocation.cpu-usage"
    assert p.applies_to({"pool": "colocation"}) and not p.applies_to({"pool": "other"})
    a = p.rules[0].action
    assert a.throttle is not None and a.throttle.cpu.min_cpu_ratio == 10 and a.throttle.cpu.step_cpu_ratio == 10
    assert a.eviction is not None and a.eviction.termination_grace_period_seconds == 30
    q = p.pod_qos[0]
    assert q.matches("default", {"preemptible_job": "true"}, "BestEffort", 0)
    assert not q.matches("default", {"preemptible_job": "true"}, "Burstable", 0)
    assert not q.matches("default", {}, "BestEffort", 0)


def test_pod_qos_matching_rules() -> None:
    def qos(**kw: Any) -> Any:
        return WaterlinePolicy.parse(policy_dict(pod_qos=[{"allowedActions": ["eviction"], **kw}])).pod_qos[0]

    assert not qos().matches("ns", {"a": "b"}, "BestEffort", 0)  # empty PodQOS matches nothing
    assert not qos(labelSelector={}).matches("ns", {"a": "b"}, "BestEffort", 0)
    assert qos(labelSelector={"matchExpressions": [{"key": "x", "operator": "NotIn", "values": ["1"]}]}).matches(
        "ns", {}, "BestEffort", 0)  # NotIn passes when the key is absent
    prio = qos(scopeSelector={"matchExpressions": [{"scopeName": "Priority", "operator": "NotIn",
                                                    "values": ["0-10", "100"]}]})
    # B10: NotIn means "matches none of the values", not "only the last value counts"
    assert not prio.matches("ns", {}, "", 5)
    assert not prio.matches("ns", {}, "", 100)
    assert prio.matches("ns", {}, "", 50)
    ns = qos(scopeSelector={"matchExpressions": [{"scopeName": "Namespace", "operator": "In", "values": ["batch"]}]})
    assert ns.matches("batch", {}, "", 0) and not ns.matches("prod", {}, "", 0)
    # a scope the CRD does not know is refused, not ignored (ignored, it matched every pod)
    with pytest.raises(ConfigError) as err:
        qos(scopeSelector={"matchExpressions": [{"scopeName": "Unknown", "operator": "In", "values": ["z"]}]})
    assert err.value.field == "spec.podQOS[0].scopeSelector.matchExpressions[0].scopeName"


def test_dry_run_annotation_and_source_in_message() -> None:
    doc = policy_dict()
    doc["metadata"]["annotations"] = {"qos.loadwise.io/dry-run": "true"}
    assert WaterlinePolicy.parse(doc).dry_run
    bad = _with(f"{R0}.avoidanceThreshold", 0, policy_dict(rule(), pod_qos=[ALL_BE]))
    with pytest.raises(ConfigError) as err:
        WaterlinePolicy.parse(bad, source="policy.yaml")
    assert str(err.value).startswith(f"policy.yaml: {R0}.avoidanceThreshold: ")
