"""Kubernetes object dicts and session builders for scheduler tests."""

from __future__ import annotations

from typing import Any

import yaml

from common.clock import FakeClock, to_rfc3339
from scheduler.conf import SchedulerConf, parse_conf
from scheduler.framework.api import TaskInfo
from scheduler.framework.session import Session
from scheduler.framework.snapshot import DEFAULT_SCHEDULER_NAME, Snapshot

T0 = 1_700_000_000.0


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: int = 110, labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": {"kubernetes.io/hostname": name, **(labels or {})},
                     "annotations": annotations or {}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": str(pods)},
                   "capacity": {"cpu": cpu, "memory": memory, "pods": str(pods)},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


def pod(name: str, cpu: str | None = "1", memory: str | None = "1Gi", *, namespace: str = "default",
        node_name: str = "", phase: str | None = None, group: str = "", priority: int | None = None,
        labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None, created: float = T0,
        scheduler: str = DEFAULT_SCHEDULER_NAME, limits: dict[str, str] | None = None,
        extra_spec: dict[str, Any] | None = None) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    ann = dict(annotations or {})
    if group:
        ann["scheduling.loadwise.io/group-name"] = group
    container: dict[str, Any] = {"name": "c", "image": "busybox", "resources": {"requests": requests}}
    if limits:
        container["resources"]["limits"] = limits
    spec: dict[str, Any] = {"schedulerName": scheduler, "containers": [container], **(extra_spec or {})}
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}",
                     "labels": labels or {}, "annotations": ann, "creationTimestamp": to_rfc3339(created)},
        "spec": spec,
        "status": {"phase": phase or ("Running" if node_name else "Pending")},
    }


def podgroup(name: str, min_member: int, *, namespace: str = "default", queue: str = "default",
             phase: str = "Inqueue", min_resources: dict[str, str] | None = None,
             priority_class: str = "", created: float = T0) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if min_resources:
        spec["minResources"] = min_resources
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "scheduling.loadwise.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace, "uid": f"pg-{namespace}-{name}",
                         "creationTimestamp": to_rfc3339(created)},
            "spec": spec, "status": {"phase": phase}}


def queue(name: str, weight: int = 1, *, reclaimable: bool = True, capability: dict[str, str] | None = None,
          deserved: dict[str, str] | None = None, created: float = T0) -> dict[str, Any]:
    spec: dict[str, Any] = {"weight": weight, "reclaimable": reclaimable}
    if capability:
        spec["capability"] = capability
    if deserved:
        spec["deserved"] = deserved
    return {"apiVersion": "scheduling.loadwise.io/v1alpha1", "kind": "Queue",
            "metadata": {"name": name, "creationTimestamp": to_rfc3339(created)},
            "spec": spec, "status": {"state": "Open"}}


# Request fit plus the load-aware filter and score at Koordinator's 65% cpu / 95% memory thresholds.
LOADAWARE_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: noderesources
  - name: loadaware
    arguments:
      usageThresholds: {cpu: 65, memory: 95}
"""


def conf(text: str) -> SchedulerConf:
    return parse_conf(yaml.safe_load(text), source="test")


class RecordingSink:
    """Records binds and evictions; evictions of keys in ``refuse`` fail (like a PDB refusal)."""

    def __init__(self, refuse: set[str] | None = None) -> None:
        self.binds: dict[str, str] = {}
        self.evictions: list[str] = []
        self.refuse = refuse or set()

    def bind(self, task: TaskInfo, node: str) -> bool:
        assert task.key not in self.binds, f"{task.key} bound twice"
        self.binds[task.key] = node
        return True

    def evict(self, task: TaskInfo, reason: str) -> bool:
        if task.key in self.refuse:
            return False
        self.evictions.append(task.key)
        return True


def session(objects: list[dict[str, Any]], conf_text: str, *, now: float = T0 + 60, explain: bool = False,
            sink: RecordingSink | None = None) -> tuple[Session, RecordingSink]:
    sink = sink or RecordingSink()
    ssn = Session(Snapshot.from_objects(objects), conf(conf_text), clock=FakeClock(now), sink=sink, explain=explain)
    return ssn, sink


def run(objects: list[dict[str, Any]], conf_text: str, **kw: Any) -> tuple[Session, RecordingSink]:
    from scheduler.framework.plugin import actions

    ssn, sink = session(objects, conf_text, **kw)
    for name in ssn.conf.actions:
        actions()[name]().execute(ssn)
    ssn.close()
    return ssn, sink
