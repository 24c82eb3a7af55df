"""Small builders for waterline tests: pods, node states and policy dicts with sensible defaults."""

from __future__ import annotations

import copy
from typing import Any

from agent.qos.state import ContainerState, NodeState, PodState
from common.resources import Resources
from common.waterline import WaterlinePolicy

T0 = 1_700_000_000.0


def container(
    name: str = "c",
    usage: int = 1000,
    quota: int = -1,
    period: int = 100_000,
    request: int = 0,
    limit: int = 0,
    cgroup_dir: str = "",
    **extra_limits: int,
) -> ContainerState:
    limits = Resources({"cpu": limit, **extra_limits})
    return ContainerState(name, usage, quota, period, cgroup_dir, Resources(cpu=request), limits)


def pod(
    name: str,
    *,
    namespace: str = "default",
    qos: str = "BestEffort",
    priority: int = 0,
    cpu: int = 1000,
    memory: int = 1 << 30,
    start: float | None = T0 - 3600,
    containers: tuple[ContainerState, ...] | None = None,
    labels: dict[str, str] | None = None,
    limits: dict[str, int] | None = None,
    critical: bool = False,
    terminating: bool = False,
    grace: int | None = None,
    uid: str | None = None,
) -> PodState:
    if containers is None:
        containers = (container("c", usage=cpu),)
    return PodState(
        namespace=namespace,
        name=name,
        uid=uid or f"uid-{namespace}-{name}",
        qos_class=qos,
        priority=priority,
        priority_class="koord-batch",
        start_time=start,
        cpu_usage_milli=cpu,
        memory_usage_bytes=memory,
        requests=Resources(),
        limits=Resources(limits or {}),
        containers=containers,
        labels=labels or {},
        critical=critical,
        terminating=terminating,
        termination_grace_period_seconds=grace,
    )


def node(
    *pods: PodState,
    cpu: int | None = 7000,
    memory: int | None = None,
    cores: int = 8,
    mem_total: int = 0,
    t: float = T0,
    labels: dict[str, str] | None = None,
    **extra: float,
) -> NodeState:
    return NodeState(
        node="n1",
        time=t,
        cpu_capacity_milli=cores * 1000,
        memory_capacity_bytes=mem_total,
        cpu_usage_milli=cpu,
        memory_usage_bytes=memory,
        pods=tuple(pods),
        extra_metrics=dict(extra),
        labels=labels or {},
    )


def rule(
    name: str = "cpu",
    metric: str = "cpu_total_usage",
    value: str = "6000",
    action: dict[str, Any] | None = None,
    **kw: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "metricRule": {"name": metric, "value": value},
        "action": action if action is not None else {"name": "eviction", "eviction": {}},
    }
    out.update(kw)
    return out


EVICT = {"name": "eviction", "eviction": {}}
THROTTLE = {"name": "throttle", "throttle": {"cpuThrottle": {"minCPURatio": 10, "stepCPURatio": 10}}}
ALL_BE = {
    "name": "be",
    "scopeSelector": {"matchExpressions": [{"scopeName": "QOSClass", "operator": "In", "values": ["BestEffort"]}]},
    "allowedActions": ["eviction", "throttle"],
}


def policy_dict(
    *rules: dict[str, Any],
    name: str = "p",
    pod_qos: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "qos.loadwise.io/v1alpha1",
        "kind": "WaterlinePolicy",
        "metadata": {"name": name},
        "spec": {
            "objectiveEnsurances": [copy.deepcopy(r) for r in (rules or (rule(),))],
            "podQOS": pod_qos if pod_qos is not None else [copy.deepcopy(ALL_BE)],
            **spec,
        },
    }


def policy(*rules: dict[str, Any], **kw: Any) -> WaterlinePolicy:
    return WaterlinePolicy.parse(policy_dict(*rules, **kw))


THROTTLE_20 = {"name": "throttle", "throttle": {"cpuThrottle": {"stepCPURatio": 20}}}


def three_container_pod(app: tuple[int, int] = (2200, -1), sidecar: tuple[int, int] = (1100, 120_000),
                        log: tuple[int, int] = (1100, -1)) -> PodState:
    """``default/web`` with containers app, sidecar and log, each given as (CPU usage millicores, quota µs)."""
    containers = tuple(container(name, usage=u, quota=q) for name, (u, q) in
                       (("app", app), ("sidecar", sidecar), ("log", log)))
    return pod("web", cpu=sum(c.cpu_usage_milli for c in containers), containers=containers)
