"""One malformed object must never stop scheduling: every field of every kind the scheduler reads, and every
annotation it interprets, spoiled one at a time, either makes that object unparseable (a ValueError naming it,
which the cache turns into a skipped object) or leaves a session that runs to the end.

Found this way before it was a test: pods with tolerations: [all], nodes with list labels, quantities of 1Ei
and annotations holding NaN or 1e30, each of which failed every session for the whole cluster.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from common.clock import FakeClock, to_rfc3339
from scheduler.conf import SchedulerConf, parse_conf
from scheduler.explain import explain
from scheduler.framework.snapshot import Snapshot
from tests.edit import replaced, walk

ROOT = Path(__file__).resolve().parents[2]
T = 1_795_000_000.0
NOW = to_rfc3339(T)
SCHEDULER = "loadwise-scheduler"

OBJECTS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Node",
     "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1", "zone": "a"}, "annotations": {"x": "y"}},
     "spec": {"taints": [{"key": "k", "value": "v", "effect": "PreferNoSchedule"}], "unschedulable": False},
     "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}]}},
    {"apiVersion": "slo.loadwise.io/v1alpha1", "kind": "NodeMetric", "metadata": {"name": "n1"},
     "spec": {"metricCollectPolicy": {"aggregateDurationSeconds": 300, "reportIntervalSeconds": 60,
                                      "nodeAggregatePolicy": {"durations": ["5m"]}}},
     "status": {"updateTime": NOW, "nodeMetric": {
         "nodeUsage": {"resources": {"cpu": "1", "memory": "1Gi"}},
         "aggregatedNodeUsages": [{"duration": "5m0s", "usage": {"avg": {"resources": {"cpu": "1", "memory": "1Gi"}},
                                                                 "p95": {"resources": {"cpu": "2", "memory": "1Gi"}}}}]},
         "podsMetric": [{"namespace": "default", "name": "r", "priority": "koord-prod", "qos": "LS",
                         "podUsage": {"resources": {"cpu": "500m", "memory": "100Mi"}}}]}},
    {"apiVersion": "scheduling.loadwise.io/v1alpha1", "kind": "Queue", "metadata": {"name": "q1"},
     "spec": {"weight": 2, "capability": {"cpu": "100"}, "deserved": {"cpu": "4"}, "guarantee": {"resource": {"cpu": "1"}},
              "reclaimable": True}, "status": {"state": "Open"}},
    {"apiVersion": "scheduling.loadwise.io/v1alpha1", "kind": "PodGroup",
     "metadata": {"name": "g1", "namespace": "default", "creationTimestamp": NOW},
     "spec": {"minMember": 1, "queue": "q1", "minResources": {"cpu": "1"}, "minTaskMember": {"w": 1}},
     "status": {"phase": "Inqueue"}},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
    {"apiVersion": "v1", "kind": "Pod",
     "metadata": {"name": "r", "namespace": "default", "labels": {"app": "x"}, "creationTimestamp": NOW},
     "spec": {"nodeName": "n1", "schedulerName": SCHEDULER,
              "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
     "status": {"phase": "Running", "startTime": NOW}},
    {"apiVersion": "v1", "kind": "Pod",
     "metadata": {"name": "p", "namespace": "default", "labels": {"app": "x"},
                  "annotations": {"scheduling.loadwise.io/group-name": "g1", "volcano.sh/task-spec": "w"},
                  "creationTimestamp": NOW},
     "spec": {"schedulerName": SCHEDULER, "priorityClassName": "high",
              "tolerations": [{"key": "k", "operator": "Exists"}],
              "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                  {"weight": 5, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}]}},
              "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
                                             "labelSelector": {"matchLabels": {"app": "x"}}}],
              "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}},
]
SPOILERS: tuple[Any, ...] = ("x", ["x"], 3, {"a": 1}, None, -1)
ANNOTATIONS = ("node.koordinator.sh/raw-allocatable", "scheduling.loadwise.io/usage-thresholds",
               "scheduling.koordinator.sh/load-estimated-scaling-factors",
               "scheduling.koordinator.sh/load-estimated-seconds-after-initialized",
               "scheduling.koordinator.sh/load-estimated-seconds-after-pod-scheduled",
               "volcano.sh/hierarchy", "volcano.sh/hierarchy-weights", "volcano.sh/preemptable",
               "volcano.sh/task-priority", "volcano.sh/task-spec")
ANNOTATION_VALUES = ("", "x", "NaN", "1e400", "-1", "99999999999999999999", '{"cpu": NaN}', '{"cpu": 1e30}',
                     '{"usageThresholds": {"cpu": Infinity}}', "[1, 2]", "a/b//c")


def _confs() -> list[SchedulerConf]:
    capped = yaml.safe_load((ROOT / "sim" / "confs" / "loadaware-waterline-capped.yaml").read_text())
    for tier in capped["tiers"]:
        for plugin in tier["plugins"]:
            if plugin["name"] == "loadaware":
                plugin["arguments"].update(allowCustomizeEstimation=True, estimatedSecondsAfterPodScheduled=60,
                                           estimatedSecondsAfterInitialized=60)
    configmap = yaml.safe_load((ROOT / "deploy" / "base" / "scheduler-config.yaml").read_text())
    return [parse_conf(capped, source="capped"), parse_conf(yaml.safe_load(configmap["data"]["scheduler.yaml"]),
                                                             source="deploy")]


CONFS = _confs()
WATERLINES = [d for d in yaml.safe_load_all((ROOT / "sim" / "confs" / "waterline.yaml").read_text()) if d][:2]


def _survives(objects: list[dict[str, Any]]) -> None:
    try:
        snap = Snapshot.from_objects([*objects, *WATERLINES])
    except ValueError:
        return  # refused when parsed, naming the object: the cache skips it
    for conf in CONFS:
        explain(snap, conf, clock=FakeClock(T + 30), scheduler_name=SCHEDULER)


def test_the_intact_snapshot_schedules_its_pending_pod() -> None:
    report = explain(Snapshot.from_objects([*OBJECTS, *WATERLINES]), CONFS[0], clock=FakeClock(T + 30),
                     scheduler_name=SCHEDULER)
    assert report["placements"]["default/p"] == "n1"


@pytest.mark.parametrize("index", range(len(OBJECTS)), ids=[f"{o['kind']}-{o['metadata']['name']}" for o in OBJECTS])
def test_every_spoiled_field_is_refused_or_harmless(index: int) -> None:
    fields = [p for p, _ in walk(OBJECTS[index]) if p[0] not in ("apiVersion", "kind") and p != ("metadata", "name")]
    assert fields
    for path in fields:
        for value in SPOILERS:
            objects = copy.deepcopy(OBJECTS)
            objects[index] = replaced(OBJECTS[index], path, value)
            _survives(objects)


@pytest.mark.parametrize("key", ANNOTATIONS)
def test_every_spoiled_annotation_is_harmless(key: str) -> None:
    for index in (0, 2, 3, 5, 6):  # the node, the queue, the PodGroup, the running and the pending pod
        for value in ANNOTATION_VALUES:
            objects = copy.deepcopy(OBJECTS)
            objects[index]["metadata"].setdefault("annotations", {})[key] = value
            _survives(objects)
