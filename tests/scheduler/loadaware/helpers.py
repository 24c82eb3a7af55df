"""Builders for load-aware tests: pods, NodeMetrics and a state over a few nodes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from common.clock import to_rfc3339
from common.objects import NodeMetricView, PodView
from scheduler.loadaware.args import LoadAwareArgs
from scheduler.loadaware.cache import AssignedPodCache
from scheduler.loadaware.evaluate import LoadAwareState

GI = 1024**3


def pod(name: str = "p", *, requests: Mapping[str, str] | None = None, limits: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None, priority: int | None = None, owner: str = "",
        annotations: Mapping[str, str] | None = None, conditions: list[dict[str, Any]] | None = None,
        namespace: str = "default") -> PodView:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = dict(requests)
    if limits:
        resources["limits"] = dict(limits)
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": resources}]}
    if priority is not None:
        spec["priority"] = priority
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                            "labels": dict(labels or {}), "annotations": dict(annotations or {})}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": "o", "uid": "o"}]
    return PodView.parse({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
                          "status": {"conditions": conditions or []}})


def metric(node: str, *, cpu_milli: int = 0, memory: int = 0, update: float | None = 1000.0,
           pods: list[dict[str, Any]] | None = None, status: bool = True,
           aggregated: list[dict[str, Any]] | None = None) -> NodeMetricView:
    st: dict[str, Any] = {}
    if update is not None:
        st["updateTime"] = to_rfc3339(update)
    if status:
        nm: dict[str, Any] = {"nodeUsage": {"resources": {"cpu": f"{cpu_milli}m", "memory": str(memory)}}}
        if aggregated:
            nm["aggregatedNodeUsages"] = aggregated
        st["nodeMetric"] = nm
    if pods:
        st["podsMetric"] = pods
    return NodeMetricView.parse({"apiVersion": "slo.loadwise.io/v1alpha1", "kind": "NodeMetric",
                                 "metadata": {"name": node}, "spec": {}, "status": st})


def state(args: LoadAwareArgs, nodes: Mapping[str, tuple[int, int]], metrics: list[NodeMetricView], *,
          now: float = 1010.0, annotations: Mapping[str, Mapping[str, str]] | None = None,
          cache: AssignedPodCache | None = None, waterline: np.ndarray | None = None) -> LoadAwareState:
    names = list(nodes)
    alloc = np.zeros((len(names), len(args.resource_names)), dtype=np.int64)
    for i, n in enumerate(names):
        cpu, mem = nodes[n]
        alloc[i, args.resource_names.index("cpu")] = cpu
        alloc[i, args.resource_names.index("memory")] = mem
    ann = [dict((annotations or {}).get(n, {})) for n in names]
    return LoadAwareState(args, names, alloc, ann, {m.name: m for m in metrics}, cache or AssignedPodCache(), now,
                          waterline)
