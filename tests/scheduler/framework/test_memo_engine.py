"""The real scheduler over the in-memory cluster: whatever a session reuses from earlier sessions, a change made
through the API between two sessions is seen by the next one (pods, nodes, NodeMetrics, PodGroups, Queues,
WaterlinePolicies), and a pod view refreshed from the old one gives the view a full parse would."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from common.clock import FakeClock, to_rfc3339
from common.cluster.memory import MemoryCluster
from common.objects import PodView
from scheduler.engine import Scheduler
from tests.scheduler.factories import T0, conf, node, pod, podgroup, queue

NOW = T0 + 600
GIB = 1024**3

LOADAWARE = conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: tainttoleration
  - name: noderesources
  - name: loadaware
    arguments:
      usageThresholds: {cpu: 65, memory: 95}
      respectWaterlines: true
      waterlineMargin: 5
""")


def metric(name: str, cpu_m: int, *, age: float = 20.0) -> dict[str, Any]:
    return {"apiVersion": "slo.loadwise.io/v1alpha1", "kind": "NodeMetric", "metadata": {"name": name}, "spec": {},
            "status": {"updateTime": to_rfc3339(NOW - age),
                       "nodeMetric": {"nodeUsage": {"resources": {"cpu": f"{cpu_m}m", "memory": str(2 * GIB)}}}}}


def _scheduler(*objs: dict[str, Any]) -> tuple[MemoryCluster, Scheduler, FakeClock]:
    clock = FakeClock(NOW)
    cluster = MemoryCluster(clock=clock, auto_run=False)
    cluster.load(objs)
    return cluster, Scheduler(cluster, LOADAWARE, clock=clock), clock


def _placed(sched: Scheduler) -> dict[str, str | None]:
    return sched.run_once().placements


def test_a_new_nodemetric_is_seen_by_the_next_session() -> None:
    cluster, sched, _ = _scheduler(node("a", cpu="8"), node("b", cpu="8"), metric("a", 6000), metric("b", 7000),
                                   pod("p1", cpu="500m"))
    assert _placed(sched) == {"default/p1": None}          # both nodes over 65 % cpu
    cluster.patch_status("NodeMetric", "b", {"status": metric("b", 1000)["status"]})
    cluster.create("Pod", pod("p2", cpu="500m"))
    placed = _placed(sched)
    assert placed == {"default/p1": "b", "default/p2": "b"}


def test_a_node_taint_and_a_label_are_seen_by_the_next_session() -> None:
    cluster, sched, _ = _scheduler(node("a", cpu="8"), node("b", cpu="8"), metric("a", 100), metric("b", 100),
                                   pod("p1", cpu="1"))
    assert _placed(sched)["default/p1"] in ("a", "b")
    taint = [{"key": "x", "value": "1", "effect": "NoSchedule"}]
    cluster.patch("Node", "a", {"spec": {"taints": taint}})
    cluster.patch("Node", "b", {"spec": {"taints": taint}})
    cluster.create("Pod", pod("p2", cpu="1"))
    assert _placed(sched) == {"default/p2": None}
    cluster.patch("Node", "b", {"spec": {"taints": []}})
    assert _placed(sched) == {"default/p2": "b"}


def test_a_pod_annotation_change_is_seen_by_the_next_session() -> None:
    # scaling factor 100 % makes the estimate exceed the threshold; removing the annotation brings back 85 %
    big = {"scheduling.koordinator.sh/load-estimated-scaling-factors": '{"cpu": 100}'}
    args = {"usageThresholds": {"cpu": 65, "memory": 95}, "allowCustomizeEstimation": True}
    text = f"""
actions: "allocate"
tiers:
- plugins:
  - name: loadaware
    arguments: {args}
"""
    clock = FakeClock(NOW)
    cluster = MemoryCluster(clock=clock, auto_run=False)
    cluster.load([node("a", cpu="10"), metric("a", 0), pod("p", cpu="6800m", annotations=big)])
    sched = Scheduler(cluster, conf(text), clock=clock)
    assert _placed(sched) == {"default/p": None}    # 6.8 cores estimated: 68 %
    cluster.patch("Pod", "p", {"metadata": {"annotations": {
        "scheduling.koordinator.sh/load-estimated-scaling-factors": None}}}, namespace="default")
    assert _placed(sched) == {"default/p": "a"}     # 85 % of 6.8 = 5.78 cores: 58 %


def test_a_podgroup_and_a_queue_change_are_seen_by_the_next_session() -> None:
    cluster, sched, _ = _scheduler(node("a", cpu="8"), metric("a", 100), queue("default"),
                                   podgroup("g", 3), pod("g1", cpu="1", group="g"), pod("g2", cpu="1", group="g"))
    assert _placed(sched) == {"default/g1": None, "default/g2": None}    # 2 of minMember 3
    cluster.patch("PodGroup", "g", {"spec": {"minMember": 2}}, namespace="default")
    assert _placed(sched) == {"default/g1": "a", "default/g2": "a"}
    cluster.create("PodGroup", podgroup("h", 1, queue="q2"))
    cluster.create("Pod", pod("h1", cpu="1", group="h"))
    assert _placed(sched) == {"default/h1": None}   # queue q2 does not exist
    cluster.create("Queue", queue("q2"))
    assert _placed(sched) == {"default/h1": "a"}
    assert sched.memo.claim(object())               # run_once released the session it renewed


def test_a_waterline_policy_change_is_seen_by_the_next_session() -> None:
    def policy(value: int) -> dict[str, Any]:
        return {"apiVersion": "qos.loadwise.io/v1alpha1", "kind": "WaterlinePolicy", "metadata": {"name": "hot"},
                "spec": {"objectiveEnsurances": [{"name": "cpu",
                                                  "metricRule": {"name": "cpu_total_utilization", "value": value},
                                                  "action": {"name": "evict", "eviction": {}}}]}}

    cluster, sched, _ = _scheduler(node("a", cpu="10"), metric("a", 4000), policy(40), pod("p", cpu="1"))
    assert _placed(sched) == {"default/p": None}    # 40 % used + 8.5 % estimate > 40 - 5
    cluster.patch("WaterlinePolicy", "hot", {"spec": policy(80)["spec"]})
    assert _placed(sched) == {"default/p": "a"}


def _parse_cases() -> list[dict[str, Any]]:
    base = pod("p", cpu="1", labels={"app": "x"})
    bound = copy.deepcopy(base)
    bound["spec"]["nodeName"] = "a"
    started = copy.deepcopy(bound)
    started["status"] = {"phase": "Running", "startTime": to_rfc3339(NOW),
                         "conditions": [{"type": "Ready", "status": "True"}]}
    relabelled = copy.deepcopy(started)
    relabelled["metadata"]["labels"] = {"app": "y"}
    relabelled["metadata"]["annotations"] = {"k": "v"}
    deleting = copy.deepcopy(started)
    deleting["metadata"]["deletionTimestamp"] = to_rfc3339(NOW)
    done = copy.deepcopy(started)
    done["status"] = {"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "False"}]}
    return [base, bound, started, relabelled, deleting, done]


@pytest.mark.parametrize("obj", _parse_cases())
def test_refreshed_pod_equals_a_full_parse(obj: dict[str, Any]) -> None:
    old = PodView.parse(pod("p", cpu="1", labels={"app": "x"}))
    got = old.refreshed(obj)
    assert got is not None
    assert got == PodView.parse(obj)
    assert got.raw is obj
    assert got.requests is old.requests      # the parsed requests are kept


def test_refreshed_pod_leaves_to_a_full_parse_what_it_rejects() -> None:
    old = PodView.parse(pod("p", cpu="1"))
    bad = copy.deepcopy(old.raw)
    bad["status"] = {"phase": "Running", "startTime": "yesterday"}
    with pytest.raises(ValueError, match="status.startTime"):
        PodView.parse(bad)
    assert old.refreshed(bad) is None          # parsed afresh by the cache, which reports the full parse's error
    resized = copy.deepcopy(old.raw)
    resized["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "2"
    assert old.refreshed(resized) is None   # containers changed: parsed afresh by the cache
