"""The optional CPU-pressure filter of loadaware: off by default, rejects only nodes that report pressure above it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from common.clock import FakeClock, to_rfc3339
from common.config import ConfigError
from common.objects import NodeMetricView, NodeView
from scheduler.conf import SchedulerConf, parse_conf
from scheduler.explain import explain
from scheduler.framework.snapshot import Snapshot
from scheduler.loadaware.args import parse_loadaware_args
from scheduler.loadaware.pressure import PressureFilter, node_cpu_pressure

ROOT = Path(__file__).resolve().parents[3]
T = 1_795_000_000.0
SCHEDULER = "loadwise-scheduler"


def _metric(name: str, avg60: float | None) -> NodeMetricView:
    nm: dict[str, Any] = {"nodeUsage": {"resources": {"cpu": "1", "memory": "1Gi"}}}
    if avg60 is not None:
        nm["extensions"] = {"pressure": {"cpu": {"some": {"avg10": 0.0, "avg60": avg60, "avg300": 0.0,
                                                          "totalSeconds": 1.0}}}}
    return NodeMetricView.parse({"metadata": {"name": name}, "status": {"updateTime": "2024-01-01T00:00:00Z",
                                                                        "nodeMetric": nm}})


def _node(name: str) -> NodeView:
    return NodeView.parse({"metadata": {"name": name}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}})


def test_off_by_default_and_validated() -> None:
    assert parse_loadaware_args({}).cpu_pressure_threshold == 0
    assert parse_loadaware_args({"cpuPressureThreshold": 20}).cpu_pressure_threshold == 20
    with pytest.raises(ConfigError, match="cpuPressureThreshold"):
        parse_loadaware_args({"cpuPressureThreshold": 101})


def test_nodes_above_the_threshold_fail_and_nodes_without_pressure_pass() -> None:
    nodes = [_node("calm"), _node("stalled"), _node("old-agent"), _node("no-metric")]
    metrics = {"calm": _metric("calm", 5.0), "stalled": _metric("stalled", 42.5), "old-agent": _metric("old-agent", None)}
    f = PressureFilter.build(20, nodes, metrics)
    assert f.passed.tolist() == [True, False, True, True]
    assert f.reason(1) == "node(s) CPU pressure 42.5% above 20%"
    assert node_cpu_pressure(metrics["old-agent"]) is None and node_cpu_pressure(None) is None


def _objects(pressure: dict[str, float]) -> list[dict[str, Any]]:
    now = to_rfc3339(T)
    out: list[dict[str, Any]] = []
    for name, cpu_some in pressure.items():
        out.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                    "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                               "conditions": [{"type": "Ready", "status": "True"}]}})
        out.append({"apiVersion": "slo.loadwise.io/v1alpha1", "kind": "NodeMetric", "metadata": {"name": name},
                    "spec": {}, "status": {"updateTime": now, "nodeMetric": {
                        "nodeUsage": {"resources": {"cpu": "1", "memory": "1Gi"}},
                        "extensions": {"pressure": {"cpu": {"some": {"avg10": cpu_some, "avg60": cpu_some,
                                                                     "avg300": cpu_some, "totalSeconds": 9.0}}}}}}})
    out.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default",
                                                                "creationTimestamp": now},
                "spec": {"schedulerName": SCHEDULER,
                         "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}})
    return out


def _conf(threshold: int | None) -> SchedulerConf:
    doc = yaml.safe_load((ROOT / "sim" / "confs" / "loadaware-waterline-capped.yaml").read_text())
    for tier in doc["tiers"]:
        for plugin in tier["plugins"]:
            if plugin["name"] == "loadaware" and threshold is not None:
                plugin["arguments"]["cpuPressureThreshold"] = threshold
    return parse_conf(doc, source="test")


def test_the_scheduler_places_around_a_stalled_node_only_when_asked() -> None:
    snap = Snapshot.from_objects(_objects({"a-stalled": 60.0, "b-calm": 2.0}))
    placed = explain(snap, _conf(20), clock=FakeClock(T + 30), scheduler_name=SCHEDULER)["placements"]
    assert placed["default/p"] == "b-calm"
    snap = Snapshot.from_objects(_objects({"a-stalled": 60.0}))
    assert explain(snap, _conf(None), clock=FakeClock(T + 30),
                   scheduler_name=SCHEDULER)["placements"]["default/p"] == "a-stalled"  # off by default
    report = explain(snap, _conf(20), clock=FakeClock(T + 30), scheduler_name=SCHEDULER)
    assert report["placements"].get("default/p") is None
    assert "CPU pressure 60.0% above 20%" in str(report)
