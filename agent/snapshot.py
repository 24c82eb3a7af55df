"""Turning one collect tick plus the node's pods into the waterline engine's ``NodeState``.

Pure: the tick, the pod objects (as the API server returns them) and the Node object come in, a
frozen ``agent.qos.state.NodeState`` comes out; ``/debug/state`` serves its JSON.  Container
cgroups are matched to container names through ``status.containerStatuses[].containerID`` (the
part after ``://``); a container directory no status names (the pause sandbox) is left out.
Container ``cgroup_dir`` is the absolute directory in the CPU hierarchy, where the throttle writes
``cpu.cfs_quota_us`` (v1) or ``cpu.max`` (v2).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from agent.collect.collector import PodUsageTick, Tick
from agent.qos.state import (
    CPU_TOTAL_UTILIZATION,
    CRITICAL_PRIORITY,
    MEMORY_TOTAL_UTILIZATION,
    ContainerState,
    NodeState,
    PodState,
)
from common.objects import NodeView, PodView
from common.podspec import container_requests
from common.resources import Resources
from common.waterline import PRESSURE_METRICS

__all__ = ["build_node_state", "container_names"]

_MIRROR = "kubernetes.io/config.mirror"
_SOURCE = "kubernetes.io/config.source"


def container_names(pod: Mapping[str, Any]) -> dict[str, str]:
    """Container ID (without the ``runtime://`` prefix) -> container name, from the pod's status."""
    out: dict[str, str] = {}
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for cs in status.get(key) or []:
            cid = str(cs.get("containerID") or "")
            if cid:
                out[cid.split("://", 1)[-1]] = str(cs.get("name", ""))
    return out


def _container_specs(pod: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    spec = pod.get("spec") or {}
    return {str(c.get("name", "")): c for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or [])}


def _limits(c: Mapping[str, Any], where: str) -> Resources:
    return Resources.parse((c.get("resources") or {}).get("limits"), field=f"{where}.resources.limits")


def _pod_state(view: PodView, usage: PodUsageTick | None, cpu_dir: str) -> PodState:
    names = container_names(view.raw)
    specs = _container_specs(view.raw)
    containers: list[ContainerState] = []
    if usage is not None:
        for c in usage.containers:
            name = names.get(c.id)
            if not name:
                continue
            spec = specs.get(name, {})
            where = f"Pod {view.key} container {name}"
            containers.append(
                ContainerState(
                    name=name,
                    cpu_usage_milli=int((c.cpu_cores or 0.0) * 1000),
                    cpu_quota_us=c.cpu_quota_us,
                    cpu_period_us=c.cpu_period_us,
                    cgroup_dir=os.path.join(cpu_dir, c.rel),
                    requests=container_requests(spec) if spec else Resources(),
                    limits=_limits(spec, where) if spec else Resources(),
                )
            )
    mem = usage.memory.usage_without_page_cache if usage is not None and usage.memory is not None else 0
    source = view.annotations.get(_SOURCE, "api")
    grace = (view.raw.get("spec") or {}).get("terminationGracePeriodSeconds")
    return PodState(
        namespace=view.namespace,
        name=view.name,
        uid=view.uid,
        qos_class=view.qos.value,
        priority=view.priority,
        priority_class=view.priority_class.value,
        start_time=view.start_time,
        cpu_usage_milli=int(((usage.cpu_cores if usage else None) or 0.0) * 1000),
        memory_usage_bytes=int(mem),
        requests=view.requests,
        limits=view.limits,
        containers=tuple(sorted(containers, key=lambda c: c.name)),
        labels=view.labels,
        annotations=view.annotations,
        cgroup_dir=os.path.join(cpu_dir, usage.rel) if usage is not None else "",
        critical=view.priority >= CRITICAL_PRIORITY or _MIRROR in view.annotations or source != "api",
        termination_grace_period_seconds=int(grace) if isinstance(grace, int) else None,
        terminating=view.deleting,
        phase=view.phase,
    )


def build_node_state(
    node_name: str,
    tick: Tick,
    pods: Sequence[Mapping[str, Any]],
    *,
    node: Mapping[str, Any] | None = None,
    cpu_dir: str = "",
    load_average: tuple[float, float, float] | None = None,
) -> NodeState:
    """The snapshot of this tick.  Capacity is the machine's (CPUs, MemTotal), as crane measures
    utilisation; allocatable and labels come from the Node object when there is one."""
    cpu_capacity = tick.cpu_count * 1000
    mem_total = tick.node_memory.total if tick.node_memory else 0
    cpu_milli = int(tick.node_cpu_cores * 1000) if tick.node_cpu_cores is not None else None
    mem_used = tick.node_memory.usage_without_page_cache if tick.node_memory else None
    extra: dict[str, float] = {}
    if cpu_milli is not None and cpu_capacity:
        extra[CPU_TOTAL_UTILIZATION] = cpu_milli * 100.0 / cpu_capacity
    if mem_used is not None and mem_total:
        extra[MEMORY_TOTAL_UTILIZATION] = mem_used * 100.0 / mem_total
    if load_average is not None:
        extra["cpu_load_1_min"], extra["cpu_load_5_min"], extra["cpu_load_15_min"] = load_average
    for name, (resource, kind) in PRESSURE_METRICS.items():
        pressure = tick.pressure.get(resource)
        line = pressure.line(kind) if pressure is not None else None
        if line is not None:
            extra[name] = line.avg10  # percent of the last 10 s stalled
    labels: Mapping[str, str] = {}
    allocatable = Resources()
    if node is not None:
        node_view = NodeView.parse(node)
        labels, allocatable = node_view.labels, node_view.allocatable
    states = []
    for raw in pods:
        pod_view = PodView.parse(raw)
        if pod_view.terminal:
            continue
        states.append(_pod_state(pod_view, tick.pods.get(pod_view.uid), cpu_dir))
    states.sort(key=lambda p: (p.namespace, p.name))
    return NodeState(
        node=node_name,
        time=tick.time,
        cpu_capacity_milli=cpu_capacity,
        memory_capacity_bytes=mem_total,
        cpu_usage_milli=cpu_milli,
        memory_usage_bytes=mem_used,
        pods=tuple(states),
        extra_metrics=extra,
        labels=labels,
        allocatable=allocatable,
    )
