"""Clusters for rebalancer tests: nodes, owned pods and the NodeMetrics that report their usage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from common.clock import to_rfc3339
from scheduler.conf import SchedulerConf
from scheduler.framework.snapshot import Snapshot
from tests.scheduler.factories import LOADAWARE_CONF, node, pod
from tests.scheduler.factories import conf as factories_conf

T0 = 1_700_000_000.0
GI = 1024**3

CONF = LOADAWARE_CONF


def conf(text: str = CONF) -> SchedulerConf:
    return factories_conf(text)


@dataclass
class Cluster:
    """Nodes of ``cpu`` cores / ``memory`` GiB; pods with reported usage; one NodeMetric per node."""

    cpu: int = 8
    memory: int = 32
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    pods: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, tuple[int, int]] = field(default_factory=dict)  # pod key -> (milli, bytes)
    system: dict[str, tuple[int, int]] = field(default_factory=dict)  # node -> extra usage
    updated: dict[str, float] = field(default_factory=dict)

    def node(self, name: str, **kw: Any) -> None:
        self.nodes[name] = node(name, cpu=str(self.cpu), memory=f"{self.memory}Gi", **kw)
        self.updated[name] = T0

    def pod(self, name: str, on: str, cpu_milli: int, memory: int = GI, *, request: str = "500m",
            owner: str = "ReplicaSet", priority: int | None = None, created: float = T0 - 3600,
            namespace: str = "default", labels: Mapping[str, str] | None = None, **kw: Any) -> dict[str, Any]:
        obj = pod(name, cpu=request, memory="512Mi", namespace=namespace, node_name=on, priority=priority,
                  created=created, labels=dict(labels or {}), **kw)
        if owner:
            obj["metadata"]["ownerReferences"] = [{"kind": owner, "name": f"{owner.lower()}-{name}", "uid": name,
                                                   "controller": True}]
        self.pods.append(obj)
        self.usage[f"{namespace}/{name}"] = (cpu_milli, memory)
        return obj

    def metric(self, name: str) -> dict[str, Any]:
        cpu, mem = self.system.get(name, (0, 0))
        pods = []
        for p in self.pods:
            if p["spec"].get("nodeName") != name:
                continue
            key = f"{p['metadata']['namespace']}/{p['metadata']['name']}"
            if key not in self.usage:  # a pod the agent has no samples of yet
                continue
            c, m = self.usage[key]
            cpu, mem = cpu + c, mem + m
            prio = p["spec"].get("priority")
            pods.append({"namespace": p["metadata"]["namespace"], "name": p["metadata"]["name"],
                         "priority": "koord-batch" if prio is not None and 5000 <= prio < 6000 else "koord-prod",
                         "podUsage": {"resources": {"cpu": f"{c}m", "memory": str(m)}}})
        return {"apiVersion": "slo.loadwise.io/v1alpha1", "kind": "NodeMetric", "metadata": {"name": name},
                "spec": {}, "status": {"updateTime": to_rfc3339(self.updated[name]),
                                       "nodeMetric": {"nodeUsage": {"resources": {"cpu": f"{cpu}m",
                                                                                  "memory": str(mem)}}},
                                       "podsMetric": pods}}

    def objects(self) -> list[dict[str, Any]]:
        return [*self.nodes.values(), *self.pods, *(self.metric(n) for n in self.nodes)]

    def snapshot(self) -> Snapshot:
        return Snapshot.from_objects(self.objects())


def args(**overrides: Any) -> dict[str, Any]:
    """Arguments for the small test clusters: one observation confirms a hot node, and no budget across rounds
    (a few pods would allow one eviction an hour; the budget has its own tests)."""
    raw: dict[str, Any] = {"highThresholds": {"cpu": 65, "memory": 90}, "lowThresholds": {"cpu": 35, "memory": 60},
                           "anomalyCondition": {"consecutiveAbnormalities": 1}, "maxEvictionsPercent": 0}
    raw.update(overrides)
    return raw


def keys(items: Sequence[Any]) -> list[str]:
    return [i.pod for i in items]
