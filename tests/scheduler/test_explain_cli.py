from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from common.clock import to_rfc3339
from loadwise.cli import main
from tests.scheduler.factories import LOADAWARE_CONF, T0, node, pod


def _nodemetric(name: str, cpu: str, memory: str, at: float) -> dict:
    return {"apiVersion": "slo.loadwise.io/v1alpha1", "kind": "NodeMetric", "metadata": {"name": name},
            "spec": {"metricCollectPolicy": {"aggregateDurationSeconds": 300, "reportIntervalSeconds": 60}},
            "status": {"updateTime": to_rfc3339(at),
                       "nodeMetric": {"nodeUsage": {"resources": {"cpu": cpu, "memory": memory}}}}}


CONF = LOADAWARE_CONF


def test_explain_json_per_node_and_plugin(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    objs = [node("hot", cpu="8"), node("cold", cpu="8"), node("tiny", cpu="1"),
            _nodemetric("hot", "7", "1Gi", T0), _nodemetric("cold", "1", "1Gi", T0), _nodemetric("tiny", "0", "0", T0),
            pod("web", cpu="2"), pod("huge", cpu="32")]
    snap = tmp_path / "snap.yaml"
    snap.write_text(yaml.safe_dump_all(objs))
    cfg = tmp_path / "conf.yaml"
    cfg.write_text(CONF)
    rc = main(["explain", "--snapshot", str(snap), "--config", str(cfg), "--now", to_rfc3339(T0 + 30), "-o", "json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["placements"] == {"default/huge": None, "default/web": "cold"}
    web = out["pods"]["default/web"]
    assert web["filter"]["hot"] == {"loadaware": "node(s) cpu usage exceed threshold"}
    assert web["filter"]["cold"] == {}
    assert "noderesources" in web["filter"]["tiny"]
    assert set(web["scores"]["cold"]) == {"noderesources", "loadaware"}
    assert web["total"]["cold"] == sum(web["scores"]["cold"].values())
    huge = out["pods"]["default/huge"]
    assert huge["message"].startswith("0/3 nodes are available: 3 Insufficient cpu")


def test_explain_rejects_bad_conf_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snap = tmp_path / "snap.yaml"
    snap.write_text(yaml.safe_dump_all([node("a")]))
    cfg = tmp_path / "conf.yaml"
    cfg.write_text('actions: "allocate"\ntiers:\n- plugins:\n  - name: loadaware\n    arguments: {usageThresholds: {cpu: 300}}\n')
    assert main(["explain", "--snapshot", str(snap), "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "tiers[0].plugins[0].arguments" in err and "conf.yaml" in err
