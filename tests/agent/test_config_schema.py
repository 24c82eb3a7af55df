"""The agent config file's JSON Schema: the file's one definition, its defaults the code's, the docs rendered from it."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from agent.config import AgentConfig, WaterlineConfig, field_name, schema
from agent.nodemetric import NODEMETRIC_CRD, MetricCollectPolicy
from common import crdschema
from common.config import ConfigError

ROOT = Path(__file__).resolve().parents[2]
NESTED = ("metricCollectPolicy", "waterline")


def _crd_collect_policy() -> dict[str, Any]:
    spec = crdschema.crd_schema(NODEMETRIC_CRD)["properties"]["spec"]
    return dict(spec["properties"]["metricCollectPolicy"])


def test_every_setting_has_a_schema_key_with_the_codes_default() -> None:
    props = schema()["properties"]
    wl = props["waterline"]["properties"]
    assert {field_name(k) for k in props} == {f.name for f in fields(AgentConfig)} - {"source"}
    assert {field_name(k) for k in wl} == {f.name for f in fields(WaterlineConfig)}
    code, code_wl = AgentConfig(), WaterlineConfig()
    assert {k: getattr(code, field_name(k)) for k in props if k not in NESTED} == \
        {k: v["default"] for k, v in props.items() if k not in NESTED}
    assert {k: getattr(code_wl, field_name(k)) for k in wl} == {k: v["default"] for k, v in wl.items()}


def test_the_collect_policy_defaults_are_the_nodemetric_crds() -> None:
    crd = _crd_collect_policy()["properties"]
    policy = MetricCollectPolicy()
    assert (crd["aggregateDurationSeconds"]["default"], crd["reportIntervalSeconds"]["default"],
            crd["nodeMemoryCollectPolicy"]["default"]) == (
        policy.aggregate_duration_seconds, policy.report_interval_seconds, policy.node_memory_collect_policy)


def test_an_empty_file_and_empty_keys_give_the_defaults(tmp_path: Path) -> None:
    assert AgentConfig.from_mapping({}) == AgentConfig()
    f = tmp_path / "agent.yaml"
    f.write_text("port:\nmetricCollectPolicy:\nwaterline:\n  dryRun:\n")
    assert AgentConfig.load(f) == AgentConfig(source=str(f))


def test_the_collect_policy_is_referred_to_from_the_crd_not_copied() -> None:
    part = schema()["properties"]["metricCollectPolicy"]
    assert set(part) == {"$ref", "description"}
    assert part["$ref"] == f"crd:{NODEMETRIC_CRD}#/properties/spec/properties/metricCollectPolicy"
    resolved = crdschema.REGISTRY.resolver().lookup(part["$ref"]).contents
    assert resolved == crdschema.closed(_crd_collect_policy())


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("podMetric: true", "podMetric", "unknown field (known: cgroupDriver, "),
        ("waterline: {dry_run: true}", "waterline.dry_run", "unknown field (known: dryRun, enabled, "),
        ("metricCollectPolicy: {interval: 60}", "metricCollectPolicy.interval", "unknown field (known: "),
        ("port: '9326'", "port", "'9326' is not of type 'integer'"),
        ("pressure: 'on'", "pressure", "'on' is not of type 'boolean'"),
        ("waterline: {policyFile: [a, b]}", "waterline.policyFile", "['a', 'b'] is not of type 'string'"),
        ("metricCollectPolicy: {reportIntervalSeconds: 1m}", "metricCollectPolicy.reportIntervalSeconds",
         "'1m' is not of type 'integer'"),
        ("collectIntervalSeconds: 61", "collectIntervalSeconds", "61 is greater than the maximum of 60"),
        ("debugPort: -1", "debugPort", "-1 is less than the minimum of 0"),
        ("waterline: {intervalSeconds: 0.05}", "waterline.intervalSeconds", "0.05 is less than the minimum of 0.1"),
        ("metricCollectPolicy: {aggregateDurationSeconds: 86400}", "metricCollectPolicy.aggregateDurationSeconds",
         "86400 is greater than the maximum of 43200"),
        ("listenAddress: ''", "listenAddress", "'' should be non-empty"),
        ("cgroupVersion: V2", "cgroupVersion", "'V2' is not one of ['auto', 'v1', 'v2']"),
        ("metricCollectPolicy: {nodeMemoryCollectPolicy: withCache}", "metricCollectPolicy.nodeMemoryCollectPolicy",
         "'withCache' is not one of ['usageWithoutPageCache', "),
        ("reportJitterFraction: .inf", "reportJitterFraction", "inf is not of type 'number'"),
        # and what the hand-written reader refused before the schema, unchanged
        ("collectIntervalSeconds: 0", "collectIntervalSeconds", ""),
        ("collectIntervalSeconds: fast", "collectIntervalSeconds", ""),
        ("port: 70000", "port", ""),
        ("port: 80.5", "port", ""),
        ("cgroupVersion: v3", "cgroupVersion", ""),
        ("cgroupDriver: docker", "cgroupDriver", ""),
        ("cgroupRoot: ''", "cgroupRoot", ""),
        ("podMetrics: yes please", "podMetrics", ""),
        ("reportJitterFraction: 0.9", "reportJitterFraction", ""),
        ("reportRetryInitialSeconds: 10\nreportRetryMaxSeconds: 5", "reportRetryMaxSeconds", ""),
        ("metricCollectPolicy: {reportIntervalSeconds: -1}", "metricCollectPolicy.reportIntervalSeconds", ""),
        ("metricCollectPolicy: {nodeAggregatePolicy: {durations: [5q]}}", "metricCollectPolicy.nodeAggregatePolicy.durations[0]", ""),
        ("metricCollectPolicy: {nodeMemoryCollectPolicy: cached}", "metricCollectPolicy.nodeMemoryCollectPolicy", ""),
        ("waterline: {dryRun: 1}", "waterline.dryRun", ""),
        ("waterline: {every: 5}", "waterline.every", ""),
        ("waterline: []", "waterline", ""),
        ("colectIntervalSeconds: 1", "colectIntervalSeconds", ""),
        ("collectIntervalSeconds: .nan", "collectIntervalSeconds", ""),  # was accepted: every comparison is false
        ("waterline: {intervalSeconds: .inf}", "waterline.intervalSeconds", ""),
        ("reportRetryMaxSeconds: .inf", "reportRetryMaxSeconds", ""),
    ],
)
def test_each_kind_of_bad_input_names_the_file_and_field(tmp_path: Path, text: str, field: str, message: str) -> None:
    f = tmp_path / "agent.yaml"
    f.write_text(text + "\n")
    with pytest.raises(ConfigError) as err:
        AgentConfig.load(f)
    assert err.value.field == field
    assert str(err.value).startswith(f"{f}: {field}: {message}")


def _default(sub: dict[str, Any]) -> str:
    if "$ref" in sub:
        return "see section 4"
    value = sub["default"]
    return "`\"\"`" if value == "" else f"`{value if isinstance(value, str) else json.dumps(value)}`"


def _limits(sub: dict[str, Any]) -> str:
    if "enum" in sub:
        *head, last = [f"`{v}`" for v in sub["enum"]]
        return f"; one of {', '.join(head)} or {last}"
    low, high = sub.get("minimum"), sub.get("maximum")
    if low is not None and high is not None:
        return f"; range {low}–{high}"
    return f"; at least {low}" if low is not None else ""


def rendered_table() -> str:
    """docs/configure.md section 1's table, from the schema: key, default, description and limits."""
    lines = ["| key | default | meaning |", "|---|---|---|"]
    props = schema()["properties"]
    rows = [(k, v) for k, v in props.items() if k != "waterline"]
    rows += [(f"waterline.{k}", v) for k, v in props["waterline"]["properties"].items()]
    for key, sub in rows:
        lines.append(f"| `{key}` | {_default(sub)} | {sub['description']}{_limits(sub)} |")
    return "\n".join(lines) + "\n"


def test_the_configure_doc_shows_the_schema() -> None:
    doc = (ROOT / "docs" / "configure.md").read_text()
    table = rendered_table()
    assert table in doc, f"docs/configure.md section 1 should hold this table, rendered from the schema:\n{table}"
