"""Waterline-aware load filtering: the loadaware plugin caps a node's threshold at the lowest eviction/throttle
waterline of the WaterlinePolicies selecting it, minus waterlineMargin, so the scheduler never places a pod the
agent would evict again; Preview and scheduling-only rules set no cap; explain can tell which rule applied."""

from __future__ import annotations

from typing import Any

import pytest

from common.clock import FakeClock
from common.objects import NodeView
from common.waterline import WaterlinePolicy
from scheduler.framework.plugin import actions
from scheduler.framework.session import Session
from scheduler.framework.snapshot import Snapshot
from scheduler.plugins.loadaware import (
    WATERLINE_POLICIES_KEY,
    LoadAware,
    WaterlineSource,
    waterline_percents,
)
from tests.scheduler.factories import RecordingSink, node, pod
from tests.scheduler.factories import conf as parse

from .helpers import NOW, conf, metric

BATCH = {"pool": "batch"}


def policy(name: str, metric_name: str, value: int | str, *, action: dict[str, Any] | None = None,
           strategy: str = "None", selector: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "qos.loadwise.io/v1alpha1", "kind": "WaterlinePolicy", "metadata": {"name": name},
            "spec": {"nodeSelector": {"matchLabels": BATCH if selector is None else selector},
                     "objectiveEnsurances": [{"name": f"{name}-rule", "strategy": strategy,
                                              "metricRule": {"name": metric_name, "value": value},
                                              "action": action or {"name": "evict", "eviction": {}}}]}}


def session_with(policies: list[Any], args: dict[str, Any] | None = None) -> tuple[Session, RecordingSink]:
    objs = [node("a", cpu="8", labels=BATCH), node("b", cpu="8"), metric("a", 4960, 1), metric("b", 5200, 1),
            pod("p", cpu="1", memory="1Gi")]
    snap = Snapshot.from_objects(objs)
    snap.extra[WATERLINE_POLICIES_KEY] = policies
    sink = RecordingSink()
    ssn = Session(snap, parse(conf(("loadaware", {"usageThresholds": {"cpu": 85, "memory": 95}, **(args or {})}))),
                  clock=FakeClock(NOW), sink=sink, explain=True)
    for name in ssn.conf.actions:
        actions()[name]().execute(ssn)
    return ssn, sink


def test_eviction_waterline_minus_margin_caps_the_threshold() -> None:
    # 62 % used + the pod's 850m estimate = 73 %: under the 85 % threshold, over the 70 % waterline - 5
    ssn, sink = session_with([policy("hot", "cpu_total_utilization", 70)])
    assert sink.binds == {"default/p": "b"}
    assert ssn.explain is not None
    assert ssn.explain["default/p"].filter["a"] == {"loadaware": "node(s) cpu usage exceed waterline"}
    plugin = ssn.plugins["loadaware"]
    assert isinstance(plugin, LoadAware)
    assert plugin.waterline_sources[0] == {"cpu": WaterlineSource("hot", "hot-rule", "cpu_total_utilization", 70)}
    assert plugin.waterline_sources[1] == {}


@pytest.mark.parametrize(("policies", "args", "bound"), [
    ([policy("hot", "cpu_total_utilization", 80)], {}, "a"),  # 73 <= 80 - 5
    ([policy("hot", "cpu_total_utilization", 77)], {"waterlineMargin": 3}, "a"),  # cap 74
    ([policy("hot", "cpu_total_utilization", 77)], {}, "b"),  # cap 72
    ([policy("hot", "cpu_total_utilization", 70)], {"respectWaterlines": False}, "a"),
    ([policy("hot", "cpu_total_utilization", 70, strategy="Preview")], {}, "a"),
    ([policy("hot", "cpu_total_utilization", 70, action={"name": "cordon"})], {}, "a"),  # disables scheduling only
    ([policy("hot", "cpu_total_utilization", 70, selector={"pool": "web"})], {}, "a"),  # selects no node
    ([policy("hot", "cpu_total_usage", 6000)], {}, "b"),  # 6000m of 8 cores = 75 %: cap 70
    ([policy("loose", "cpu_total_utilization", 90), policy("tight", "cpu_total_utilization", 70,
                                                           action={"name": "slow", "throttle": {}})], {}, "b"),
    ([{"kind": "WaterlinePolicy", "metadata": {"name": "broken"}, "spec": {}}], {}, "a"),  # invalid: skipped
])
def test_which_rules_cap(policies: list[Any], args: dict[str, Any], bound: str) -> None:
    # b is a little busier (76 % with the pod): a wins whenever no cap rules it out
    assert session_with(policies, args)[1].binds == {"default/p": bound}


def test_lowest_waterline_per_resource_and_its_source() -> None:
    nodes = [NodeView.parse(node("a", cpu="8", memory="16Gi", labels=BATCH)), NodeView.parse(node("b"))]
    pols = [WaterlinePolicy.parse(p) for p in (
        policy("p1", "cpu_total_utilization", "72.5"), policy("p2", "memory_total_usage", str(12 * 1024**3)),
        policy("p3", "memory_total_utilization", 80, selector={}))]
    pct, sources = waterline_percents(pols, nodes, ("cpu", "memory"))
    assert pct.tolist() == [[72, 75], [0, 80]]
    assert sources[0]["memory"] == WaterlineSource("p2", "p2-rule", "memory_total_usage", 75)
    assert sources[1] == {"memory": WaterlineSource("p3", "p3-rule", "memory_total_utilization", 80)}
