"""One collect tick: node usage, then every pod cgroup, turned into rates.

The collector owns the cumulative-counter state (node busy ticks, pod and container CPU
nanoseconds) and turns each tick's readings into cores; it knows nothing about the API server.
Matching cgroups to the pods the cluster says are on this node happens in the daemon, so a cgroup
with no pod (a pod just deleted, a static pod not yet seen) and a pod with no cgroup (not started
yet) are both ordinary situations, not errors.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Protocol

from agent.collect.cgroups import CgroupReader, ContainerSample, MemoryStat, scan_pods
from agent.collect.procfs import NodeMemory, RateTracker
from agent.collect.psi import NodePressureSource, Pressure
from agent.nodemetric import PodUsage, UsageSample
from common.clock import Clock
from common.qos import QoSClass

__all__ = ["NodeSource", "ContainerUsage", "PodUsageTick", "Tick", "Collector"]

_NS_PER_S = 1e9


class NodeSource(Protocol):
    name: str

    def available(self) -> bool: ...

    def cpu_cores(self, t: float) -> float | None: ...

    def memory(self) -> NodeMemory: ...

    def cpu_count(self) -> int: ...


@dataclass(frozen=True, slots=True)
class ContainerUsage:
    id: str
    rel: str
    cpu_cores: float | None
    cpu_quota_us: int
    cpu_period_us: int


@dataclass(frozen=True, slots=True)
class PodUsageTick:
    """One pod cgroup at one tick; ``cpu_cores`` is ``None`` on its first tick (priming)."""

    uid: str
    qos: QoSClass
    rel: str
    cpu_cores: float | None
    memory: MemoryStat | None
    working_set_bytes: int | None
    containers: tuple[ContainerUsage, ...] = ()
    pressure: Mapping[str, Pressure] | None = None  # cgroup v2 only

    def to_usage(self) -> PodUsage:
        return PodUsage(
            cpu_cores=self.cpu_cores,
            memory_bytes=float(self.memory.usage_without_page_cache) if self.memory else None,
            memory_with_page_cache_bytes=float(self.memory.usage_with_page_cache) if self.memory else None,
        )


_NO_PODS: Mapping[str, PodUsageTick] = MappingProxyType({})
_NO_PRESSURE: Mapping[str, Pressure] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Tick:
    """Everything one collection saw, at wall time ``time``."""

    time: float
    node_cpu_cores: float | None
    node_memory: NodeMemory | None
    cpu_count: int
    pods: Mapping[str, PodUsageTick] = field(default_factory=lambda: _NO_PODS)
    errors: tuple[str, ...] = ()
    duration_seconds: float = 0.0
    pressure: Mapping[str, Pressure] = field(default_factory=lambda: _NO_PRESSURE)  # the node's PSI by resource
    pressure_rates: Mapping[tuple[str, str], float] = field(default_factory=dict)  # stalled fraction since last tick

    def usage_sample(self, uids: set[str] | None = None) -> UsageSample:
        """The history record of this tick; ``uids`` limits pods to the ones known to the cluster."""
        pods = {u: p.to_usage() for u, p in self.pods.items() if uids is None or u in uids}
        mem = self.node_memory
        return UsageSample(
            node_cpu_cores=self.node_cpu_cores,
            node_memory_bytes=float(mem.usage_without_page_cache) if mem else None,
            node_memory_with_page_cache_bytes=float(mem.usage_with_page_cache) if mem else None,
            pods=pods,
        )


class Collector:
    """Reads the node source and the pod cgroups once per :meth:`collect` call.

    Container files (CPU counters and CFS quotas, the waterline throttle's inputs) are read by
    :meth:`with_containers`, which the agent calls only when the waterline engine is about to run, so
    the every-second tick reads only the pod files the NodeMetric and /metrics need.  A lock
    serialises the two, so the counters and the kept-open files are used by one thread at a time.
    """

    def __init__(self, node: NodeSource, cgroups: CgroupReader | None, clock: Clock, *, rate_ttl: float = 20.0,
                 pressure: NodePressureSource | None = None) -> None:
        self.node = node
        self.cgroups = cgroups
        self.clock = clock
        self.pressure = pressure
        self._rates = RateTracker(rate_ttl)
        self._lock = threading.Lock()
        self._pod_rels: set[str] = set()

    def configure(self, *, containers: bool, pressure: NodePressureSource | None, rate_ttl: float) -> None:
        """Swap in a reloaded config's settings between ticks: container reads, PSI, the counters' lifetime."""
        with self._lock:
            self.pressure = pressure
            self._rates.set_ttl(rate_ttl)
            if self.cgroups is not None:
                self.cgroups.containers = containers
                self.cgroups.set_pressure(pressure is not None)

    def collect(self, *, containers: bool | None = None) -> Tick:
        """One tick; ``containers`` overrides the reader's setting for this tick."""
        with self._lock:
            started = time.perf_counter()
            errors: list[str] = []
            mono = self.clock.monotonic()
            cpu, memory = self._node(mono, errors)
            pressure, rates = self._pressure(mono, errors)
            pods = self._pods(errors, containers) if self.cgroups is not None else {}
            if self.cgroups is not None:
                self._rates.expire(mono)
            return Tick(
                time=self.clock.now(),
                node_cpu_cores=cpu,
                node_memory=memory,
                cpu_count=self.node.cpu_count(),
                pods=MappingProxyType(pods),
                errors=tuple(errors),
                duration_seconds=time.perf_counter() - started,
                pressure=MappingProxyType(pressure),
                pressure_rates=MappingProxyType(rates),
            )

    def with_containers(self, tick: Tick) -> Tick:
        """``tick`` with every pod's containers read now (CPU since the previous such read, quotas)."""
        if self.cgroups is None or not self.cgroups.containers:
            return tick
        with self._lock:
            t = self.clock.monotonic()
            pods = {uid: replace(p, containers=self._containers(uid, self.cgroups.read_containers(p.rel), t))
                    for uid, p in tick.pods.items()}
        return replace(tick, pods=MappingProxyType(pods))

    def _node(self, mono: float, errors: list[str]) -> tuple[float | None, NodeMemory | None]:
        cpu: float | None = None
        memory: NodeMemory | None = None
        try:
            cpu = self.node.cpu_cores(mono)
        except (OSError, ValueError) as exc:
            errors.append(f"node cpu ({self.node.name}): {exc}")
        try:
            memory = self.node.memory()
        except (OSError, ValueError) as exc:
            errors.append(f"node memory ({self.node.name}): {exc}")
        return cpu, memory

    def _pressure(self, mono: float, errors: list[str]) -> tuple[dict[str, Pressure], dict[tuple[str, str], float]]:
        if self.pressure is None:
            return {}, {}
        try:
            pressure = self.pressure.read()
        except (OSError, ValueError) as exc:
            errors.append(f"node pressure: {exc}")
            return {}, {}
        return pressure, self.pressure.rates(mono, pressure)

    def _pods(self, errors: list[str], containers: bool | None) -> dict[str, PodUsageTick]:
        reader = self.cgroups
        assert reader is not None
        try:
            found = scan_pods(reader.layout)
        except OSError as exc:
            errors.append(f"cgroup scan: {exc}")
            found = {}
        rels = {p.rel for p in found.values()}
        if rels != self._pod_rels:
            reader.forget_except(rels)  # close the files of pods that are gone
            self._pod_rels = rels
        pods: dict[str, PodUsageTick] = {}
        for uid, pod in found.items():
            try:
                sample = reader.read_pod(pod, containers=containers)
            except (OSError, ValueError) as exc:
                errors.append(f"pod cgroup {pod.rel}: {exc}")
                continue
            errors.extend(f"pod cgroup {pod.rel}: missing {path}" for path in sample.missing)
            t = self.clock.monotonic()
            pod_cpu = None
            if sample.cpu_ns is not None:
                rate = self._rates.update(f"pod/{uid}", t, float(sample.cpu_ns))
                pod_cpu = None if rate is None else rate / _NS_PER_S
            pods[uid] = PodUsageTick(
                uid=uid,
                qos=pod.qos,
                rel=pod.rel,
                cpu_cores=pod_cpu,
                memory=sample.memory,
                working_set_bytes=sample.working_set_bytes,
                containers=self._containers(uid, sample.containers, t),
                pressure=sample.pressure,
            )
        return pods

    def _containers(self, uid: str, samples: tuple[ContainerSample, ...], t: float) -> tuple[ContainerUsage, ...]:
        out = []
        for c in samples:
            c_cpu = None
            if c.cpu_ns is not None:
                rate = self._rates.update(f"ctr/{uid}/{c.id}", t, float(c.cpu_ns))
                c_cpu = None if rate is None else rate / _NS_PER_S
            out.append(ContainerUsage(c.id, c.rel, c_cpu, c.cpu_quota_us, c.cpu_period_us))
        return tuple(out)
