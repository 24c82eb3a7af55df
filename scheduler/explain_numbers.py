"""The numbers behind ``loadwise explain``'s verdicts and scores, read from an open session.

Read when the session opens, before any action runs: what the snapshot says, so every figure can be checked by
hand (a pod placed earlier in the same session also counts against its node; ``explain`` lists those placements
separately).  Three plugins carry inputs worth showing:

* ``loadaware`` per node: the usage the NodeMetric measured, the pods estimated on top (assigned but not yet in
  ``podsMetric``) with the amount counted, the allocatable, the thresholds and where they came from (the plugin's
  arguments or the node's annotation), waterline caps and the NodeMetric's age; per pod and node, the pod's own
  estimate and the resulting percent that is compared with the threshold;
* ``noderesources`` (fit) per pod and node: requested by the node's pods, by this pod, and allocatable;
* ``nodeorder`` per pod and node: each scorer's 0-100 score and its weight.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from common.qos import PriorityClass
from scheduler.framework.api import NodeInfo, TaskInfo
from scheduler.framework.session import Session
from scheduler.loadaware.profile import USAGE_THRESHOLDS_ANNOTATION
from scheduler.plugins.loadaware import NAME as LOADAWARE
from scheduler.plugins.loadaware import LoadAware
from scheduler.plugins.nodeorder import NAME as NODEORDER
from scheduler.plugins.nodeorder import NodeOrder

__all__ = ["node_inputs", "pod_numbers", "FUTURE_TOLERANCE_SECONDS"]

# a NodeMetric stamped further ahead of the session's clock than this is reported (clock skew or a bad writer)
FUTURE_TOLERANCE_SECONDS = 5.0


def _by_name(names: Sequence[str], values: Sequence[int]) -> dict[str, int]:
    return {n: int(v) for n, v in zip(names, values, strict=True)}


def _source(source: str) -> str:
    return f"node annotation {USAGE_THRESHOLDS_ANNOTATION}" if source == "node annotation" else "plugin arguments"


def node_inputs(ssn: Session) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Per node, what the load-aware plugin measured and estimated (pod-independent), and warnings about the
    snapshot (NodeMetrics from the future)."""
    plugin = ssn.plugins.get(LOADAWARE)
    out: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    for node in ssn.nodes:
        entry: dict[str, Any] = {"allocatable": node.allocatable.as_dict()}
        metric = ssn.snapshot.node_metrics.get(node.name)
        if metric is not None and metric.update_time is not None:
            age = ssn.now - metric.update_time
            entry["nodeMetric"] = {"ageSeconds": round(age, 3)}
            if age < -FUTURE_TOLERANCE_SECONDS:
                warnings.append(f"NodeMetric {node.name}: status.updateTime is {-age:.0f}s after the session's "
                                "time (clock skew, or --now too early); its usage is taken as current")
        elif metric is not None:
            entry["nodeMetric"] = {"ageSeconds": None}
        if isinstance(plugin, LoadAware) and plugin.state is not None:
            entry[LOADAWARE] = _loadaware_node(plugin, node.index)
        out[node.name] = entry
    return out, warnings


def _loadaware_node(plugin: LoadAware, i: int) -> dict[str, Any]:
    state = plugin.state
    assert state is not None
    names = list(state.names)
    pods = state.estimated_pods(i, prod=False)
    load = state.filter_load(i, prod=False)
    estimated = [sum(p[1][j] for p in pods) for j in range(len(names))]
    profile = state.profiles[i]
    caps = plugin.waterline_sources[i] if i < len(plugin.waterline_sources) else {}
    return {
        "measured": _by_name(names, [a - b for a, b in zip(load, estimated, strict=True)]),
        "estimatedPods": [{"pod": key, **_by_name(names, amounts)} for key, amounts in pods],
        "allocatable": _by_name(names, state.allocatable[i].tolist()),
        "hasNodeMetric": bool(state.has_metric[i]),
        "expired": bool(state.expired[i]),
        "thresholdSource": _source(profile.source),
        "waterlineCaps": {r: {"percent": int(state.waterline_cap[i][j]), "policy": caps[r].policy,
                              "rule": caps[r].rule}
                          for j, r in enumerate(names) if state.waterline_cap[i][j] and r in caps},
    }


def pod_numbers(ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, dict[str, Any]]:
    """Per node: the pod-dependent inputs of the fit check, the load-aware filter and the nodeorder scorers."""
    load = ssn.plugins.get(LOADAWARE)
    order = ssn.plugins.get(NODEORDER)
    scorers = _nodeorder_scores(order, task) if isinstance(order, NodeOrder) else {}
    out: dict[str, dict[str, Any]] = {}
    for node in nodes:
        entry: dict[str, Any] = {"fit": _fit(task, node)}
        if isinstance(load, LoadAware) and load.state is not None:
            entry[LOADAWARE] = _loadaware_pod(load, task, node.index)
        if scorers:
            entry[NODEORDER] = {name: {"score": int(scores[node.index]), "weight": weight}
                                for name, (scores, weight) in scorers.items()}
        out[node.name] = entry
    return out


def _fit(task: TaskInfo, node: NodeInfo) -> dict[str, dict[str, int]]:
    """Per resource the pod requests (and cpu, memory, pods): the node's requested, the pod's, allocatable."""
    alloc, idle = node.allocatable, node.idle
    wanted = {r: v for r, v in task.pod.requests.items() if v}
    wanted.setdefault("pods", 1)
    names = dict.fromkeys(["cpu", "memory", *sorted(wanted)])
    return {r: {"requested": int(alloc.get(r, 0) - idle.get(r, 0)), "pod": int(wanted.get(r, 0)),
                "allocatable": int(alloc.get(r, 0))} for r in names}


def _loadaware_pod(plugin: LoadAware, task: TaskInfo, i: int) -> dict[str, Any]:
    state = plugin.state
    assert state is not None
    names = list(state.names)
    estimate = plugin.estimate(task)
    is_prod = task.pod.priority_class == PriorityClass.PROD
    seen = state.thresholds_for(i, estimate, is_prod=is_prod)
    load = state.filter_load(i, prod=seen.kind == "prod usage")
    return {
        "podEstimate": _by_name(names, estimate.tolist()),
        "load": _by_name(names, load),
        "usedPercent": dict(seen.used_percent),
        "thresholds": dict(seen.thresholds),
        "thresholdKind": seen.kind,
        "thresholdSource": _source(seen.source),
        "daemonSet": task.pod.is_daemonset,
    }


def _nodeorder_scores(plugin: NodeOrder, task: TaskInfo) -> Mapping[str, tuple[np.ndarray[Any, Any], int]]:
    return {name: (np.asarray(scorer(task)), weight) for name, weight, scorer in plugin.parts}
