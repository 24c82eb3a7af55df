"""The shipped sample-scheduler policy parses and its plugin arguments validate with the plugins' parsers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common.config import load_document
from scheduler.loadaware.args import parse_loadaware_args
from scheduler.predicates.affinity import affinity_filter, label_groups
from scheduler.scoring.resource_fit import parse_scoring_strategy

SAMPLE = Path(__file__).resolve().parents[2] / "scheduler" / "conf" / "examples" / "sample-scheduler.yaml"


def _plugins(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p.get("arguments") or {} for tier in doc["tiers"] for p in tier["plugins"]}


def test_sample_policy_arguments() -> None:
    doc = load_document(SAMPLE)
    assert isinstance(doc, dict)
    plugins = _plugins(doc)
    assert {"dependency", "nodeaffinity", "noderesources", "loadaware", "podtopologyspread"} <= set(plugins)
    args = parse_loadaware_args(plugins["loadaware"], source=str(SAMPLE))
    assert dict(args.usage_thresholds) == {"cpu": 85, "memory": 85}
    assert parse_scoring_strategy(plugins["noderesources"]["scoringStrategy"]).type == "LeastAllocated"
    added = {"nodeAffinity": plugins["nodeaffinity"]["addedAffinity"]}
    groups = label_groups([{"cpu": "true"}, {"cpu": "false"}, {}], ["a", "b", "c"])
    assert affinity_filter({}, added, groups).tolist() == [True, False, False]
