"""deploy/dashboards/*.json and docs/metrics.md against the metrics the code exports (tests/deploy/metric_names.py).

Every PromQL expression of every dashboard must name only exported series and only their labels (or the
scrape's ``job``/``instance``), and must parse (``promtool check rules``).  The metric reference must list
every exported family, and no document may mention a metric that does not exist.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.kustomize import DEPLOY
from tests.deploy.metric_names import MetricFamily, exported_families

DOCS = DEPLOY.parent / "docs"
DASHBOARDS = sorted((DEPLOY / "dashboards").glob("*.json"))
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
SCRAPE_LABELS = {"job", "instance"}
_GRAFANA_VARS = {"$__rate_interval": "1m", "$__interval": "1m", "$node": ".*", "$window": "5m0s"}
_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
}


@cache
def families() -> dict[str, MetricFamily]:
    """Sample name -> its family."""
    return {s: f for f in exported_families() for s in f.samples}


def expressions(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable."""
    out = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            out.append((f"panel {panel['title']!r}", target["expr"]))
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            m = re.fullmatch(r"label_values\((\w+),\s*(\w+)\)", var["definition"])
            assert m, f"variable {var['name']}: only label_values(metric, label) is used here"
            out.append((f"variable {var['name']}", f'{m[1]}{{{m[2]}!=""}}'))
    return out


def selectors(expr: str) -> list[tuple[str, set[str]]]:
    """(metric name, label names used with it) for every series in a PromQL expression."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\[[^\]]*\]", "", e)
    matchers = {m[1]: set(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", m[2])) for m in re.finditer(r"(\w+)\s*\{([^}]*)\}", e)}
    grouping = set()
    for m in re.finditer(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", e):
        grouping |= {x.strip() for x in m[1].split(",") if x.strip()}
    bare = re.sub(r"\{[^}]*\}", "", e)
    bare = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", bare)
    names = [n for n in re.findall(r"\b[a-zA-Z_][a-zA-Z0-9_]*\b(?!\s*\()", bare) if n not in _KEYWORDS]
    return [(n, matchers.get(n, set()) | grouping) for n in names]


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_structure(path: Path) -> None:
    dash = json.loads(path.read_text())
    assert dash["uid"] and dash["title"] and dash["schemaVersion"] >= 36
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    variables = {v["name"] for v in dash["templating"]["list"]}
    assert "datasource" in variables
    for p in dash["panels"]:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24, p["title"]
        if p["type"] != "row":
            assert p["targets"] and p["datasource"]["uid"] == "${datasource}", p["title"]
            used = set(re.findall(r"\$(\w+)", json.dumps(p)))
            assert used <= variables | {"__rate_interval", "__interval"}, (p["title"], used - variables)


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_query_uses_exported_metrics_and_labels(path: Path) -> None:
    exported = families()
    problems = []
    for where, expr in expressions(json.loads(path.read_text())):
        found = selectors(expr)
        assert found, f"{where}: no metric in {expr}"
        for name, labels in found:
            fam = exported.get(name)
            if fam is None:
                problems.append(f"{where}: {name} is not exported by the code")
            elif extra := labels - set(fam.labels) - SCRAPE_LABELS - {"le", "quantile"}:
                problems.append(f"{where}: {name} has no label(s) {sorted(extra)}")
    assert not problems, "\n".join(problems)


def test_the_check_can_fail() -> None:
    assert selectors('sum by (zone) (rate(loadwise_agent_collections_total{node=~"$node"}[5m]))') == [
        ("loadwise_agent_collections_total", {"node", "zone"})
    ]
    assert "loadwise_agent_node_cpu_percent" not in families()


def test_dashboard_covers_the_operators_questions() -> None:
    used = {n for p in DASHBOARDS for _, e in expressions(json.loads(p.read_text())) for n, _ in selectors(e)}
    for family in (
        "loadwise_agent_node_cpu_usage_cores",  # node usage
        "loadwise_agent_node_cpu_usage_aggregated_cores",  # percentiles
        "loadwise_agent_pod_cpu_usage_cores",  # pod usage
        "loadwise_scheduler_nodemetric_age_seconds",  # staleness
        "loadwise_agent_waterline_triggers_total",  # waterline triggers
        "loadwise_agent_actions_total",  # waterline actions
        "loadwise_scheduler_schedule_attempts_total",  # scheduling attempts
        "loadwise_scheduler_session_duration_seconds_bucket",  # latency
        "loadwise_scheduler_queue_allocated",  # queue shares
    ):
        assert family in used, family


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_queries_parse(path: Path, tmp_path: Path) -> None:
    if not Path(PROMTOOL).exists():
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    rules = []
    for i, (_, expr) in enumerate(expressions(json.loads(path.read_text()))):
        for var, value in _GRAFANA_VARS.items():
            expr = expr.replace(var, value)
        rules.append({"record": f"dashboard:query_{i}", "expr": expr})
    f = tmp_path / "rules.yml"
    f.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    check = subprocess.run([PROMTOOL, "check", "rules", str(f)], capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, check.stdout + check.stderr


# -- the metric reference ---------------------------------------------------------------------------
def test_metric_reference_lists_every_family() -> None:
    text = (DOCS / "metrics.md").read_text()
    rows = {m[1]: m for m in re.finditer(r"^\| `(\w+)` \| (\w+) \| ([^|]*) \|", text, re.M)}
    for fam in exported_families():
        shown = next((s for s in sorted(fam.samples | {fam.name}) if s in rows), None)
        assert shown is not None, f"docs/metrics.md lacks {fam.name} ({fam.where})"
        m = rows[shown]
        assert m[2] == fam.type, f"{shown}: documented as {m[2]}, exported as {fam.type}"
        assert set(re.findall(r"`(\w+)`", m[3])) == set(fam.labels), f"{shown}: labels differ from the code"


def test_documents_mention_only_real_metrics() -> None:
    real = set(families()) | {f.name for f in exported_families()}
    for doc in sorted(DOCS.glob("*.md")):
        for name in set(re.findall(r"\bloadwise_(?:agent|scheduler)_\w+", doc.read_text())):
            assert name in real, f"{doc.name} mentions {name}, which the code does not export"
