"""The scheduler cache takes its watch events shared (``Cluster.informer(..., shared=True)``): its views keep the
cluster's stored objects as ``raw``.  Whole scheduling runs over such events - every action and most plugins, and
a simulated hour with node agents and waterlines - must leave every object the cache was given as it was given."""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from common.clock import FakeClock
from common.cluster import Handler, Informer, WatchEvent
from common.cluster.memory import MemoryCluster
from scheduler.engine import Scheduler
from sim.policies import load_policies
from sim.run import SimOptions, run
from sim.synthetic import SyntheticConfig, generate
from tests.scheduler.actions.helpers import gang, priority_class
from tests.scheduler.factories import T0, conf, node, pod, podgroup, queue
from tests.scheduler.framework.test_memo_engine import NOW, metric

WIDE = conf("""
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: proportion
  - name: predicates
  - name: nodeaffinity
  - name: tainttoleration
  - name: podtopologyspread
  - name: interpodaffinity
  - name: nodeorder
  - name: noderesources
  - name: balancedallocation
  - name: loadaware
    arguments:
      usageThresholds: {cpu: 80, memory: 95}
      respectWaterlines: true
      waterlineMargin: 5
""")

WATERLINE = {
    "apiVersion": "qos.loadwise.io/v1alpha1", "kind": "WaterlinePolicy", "metadata": {"name": "w"},
    "spec": {"objectiveEnsurances": [{"name": "cpu", "metricRule": {"name": "cpu_total_utilization", "value": "70"},
                                      "action": {"name": "evict", "eviction": {}}}],
             "podQOS": [{"name": "be", "allowedActions": ["evict"]}]},
}


@pytest.fixture
def given(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[Any, Any]]]:
    """Every object a shared informer handler is given, with a deep copy taken as it is given."""
    seen: list[tuple[Any, Any]] = []
    real = MemoryCluster.informer

    def informer(self: MemoryCluster, kind: str, handler: Handler, *, namespace: str | None = None,
                 field_selector: str | None = None, shared: bool = False) -> Informer:
        def recording(event: WatchEvent) -> None:
            seen.append((event.object, copy.deepcopy(event.object)))
            handler(event)

        return real(self, kind, recording if shared else handler, namespace=namespace,
                    field_selector=field_selector, shared=shared)

    monkeypatch.setattr(MemoryCluster, "informer", informer)
    yield seen


def _changed(given: list[tuple[Any, Any]]) -> list[str]:
    return [f"{obj.get('kind')} {obj['metadata'].get('name')}" for obj, was in given if obj != was]


def test_scheduling_sessions_leave_the_shared_objects_as_they_were(given: list[tuple[Any, Any]]) -> None:
    spread = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                             "labelSelector": {"matchLabels": {"app": "web"}}}]}
    anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]},
        "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}]}},
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    objs: list[dict[str, Any]] = [
        node("n1", cpu="4", labels={"zone": "a"}), node("n2", cpu="4", labels={"zone": "b"}),
        node("n3", cpu="4", labels={"zone": "a"}, taints=[{"key": "gpu", "value": "1", "effect": "NoSchedule"}]),
        metric("n1", 500), metric("n2", 3500), metric("n3", 100), WATERLINE,
        priority_class("high", 1000), priority_class("low", 10),
        queue("default"), queue("q2", weight=2, deserved={"cpu": "6"}),
        *gang("lo", 4, 1, running=4, running_on="n1", priority_class="low"),
        *gang("hi", 2, 2, cpu="2", priority_class="high"),
        *gang("borrow", 2, 1, running=2, running_on="n2", cpu="2", queue="default", priority_class="low"),
        *gang("owner", 1, 1, cpu="2", queue="q2"),
        podgroup("web", 1), *(pod(f"web-{i}", cpu="500m", group="web", labels={"app": "web"}, extra_spec=spread)
                              for i in range(3)),
        podgroup("db", 1), *(pod(f"db-{i}", cpu="250m", group="db", labels={"app": "db"}, extra_spec=anti)
                             for i in range(2)),
    ]
    clock = FakeClock(NOW)
    cluster = MemoryCluster(clock=clock, auto_run=False)
    cluster.load(objs)
    sched = Scheduler(cluster, WIDE, clock=clock)
    placed = 0
    for step in range(4):
        res = sched.run_once()
        placed += sum(1 for v in res.placements.values() if v)
        clock.advance(30)
        cluster.write_status("NodeMetric", "n2", metric("n2", 3500 - 1000 * step, age=0)["status"])
        cluster.create("Pod", pod(f"late-{step}", cpu="100m", created=T0 + step))
        for p in cluster.list("Pod").items:
            if p["spec"].get("nodeName") and p["status"].get("phase") != "Running":
                cluster.patch_status("Pod", p["metadata"]["name"], {"status": {"phase": "Running"}},
                                     namespace=p["metadata"]["namespace"])
    assert placed > 5 and cluster.evictions and cluster.events
    stored = cluster._bucket("Pod")[("default", "late-0")]
    assert sched.cache.pod("default/late-0").raw is stored  # type: ignore[union-attr]
    assert len(given) > 50 and _changed(given) == []


def test_a_simulated_hour_leaves_the_shared_objects_as_they_were(given: list[tuple[Any, Any]]) -> None:
    workload = generate(SyntheticConfig(nodes=6, hours=1, seed=3))
    (policy,) = load_policies(["loadaware-waterline"])
    rec = run(workload, policy, SimOptions(hours=1, start_hour=14, seed=3))
    kinds = Counter(obj.get("kind") for obj, _ in given)
    # the agents build only the reports a session may read; every one built reaches the shared handlers
    assert rec.reports > 50 and kinds["NodeMetric"] >= rec.reports_built > 50 and kinds["Pod"] > 50
    assert _changed(given) == []
