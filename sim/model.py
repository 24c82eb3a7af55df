"""The simulator's workload model: the nodes, the pods that will arrive, and how each pod uses resources.

A :class:`Workload` is pure data, built either by the synthetic generator (``sim.synthetic``) or from
public traces (``sim.replay``).  It says nothing about placement: the same workload is replayed against
every compared scheduler configuration, so the only difference between two runs is the policy.

Units follow the project's model: CPU in millicores, memory in bytes, times in seconds from the start of
the simulation.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

__all__ = [
    "DAY_SECONDS",
    "PodKind",
    "NodeSpec",
    "UsageProfile",
    "PodSpec",
    "GroupSpec",
    "Workload",
]

DAY_SECONDS = 86_400.0
_EMPTY: Mapping[str, str] = MappingProxyType({})


class PodKind(enum.StrEnum):
    """What a pod is for; decides its QoS, priority band and usage shape."""

    SERVICE = "service"  # latency-sensitive, long-running, diurnal, prod priority
    BATCH = "batch"  # finite jobs (alone or as gangs), flat usage near or above requests
    BEST_EFFORT = "best-effort"  # no requests, free priority, bursty


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node: its allocatable resources (what the scheduler sees and hotspots are measured against), its raw
    capacity (0 = same as allocatable; the waterline engine's ``cpu_core_numbers``/``memory_total``) and labels."""

    name: str
    cpu_milli: int
    memory_bytes: int
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    max_pods: int = 110
    extended: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    cpu_capacity_milli: int = 0
    memory_capacity_bytes: int = 0

    @property
    def capacity_cpu(self) -> int:
        return self.cpu_capacity_milli or self.cpu_milli

    @property
    def capacity_memory(self) -> int:
        return self.memory_capacity_bytes or self.memory_bytes


@dataclass(frozen=True, slots=True)
class UsageProfile:
    """How a pod really uses resources, whatever it requested.

    CPU demand at time ``t`` is ``cpu_base_milli × shape(t) × (1 + cpu_noise × z(t))``, where ``shape`` is a
    diurnal cosine of relative amplitude ``cpu_amplitude`` peaking at ``cpu_peak`` (fraction of the day), or,
    when ``shape_index >= 0``, a replayed series from the workload's ``shapes`` matrix (mean 1) starting at
    ``shape_offset`` seconds; ``z`` is smooth per-pod noise.  Memory starts at ``memory_base_bytes`` and grows by
    ``memory_growth`` (a fraction) over the pod's first hour, as caches warm up.
    """

    cpu_base_milli: float
    cpu_amplitude: float = 0.0
    cpu_peak: float = 0.0
    cpu_noise: float = 0.0
    memory_base_bytes: float = 0.0
    memory_growth: float = 0.0
    shape_index: int = -1
    shape_offset: float = 0.0


@dataclass(frozen=True, slots=True)
class PodSpec:
    """A pod the workload submits at ``arrival``; it runs ``duration`` seconds once started (None = forever).

    Requests and limits of 0 mean "not set"; a pod without any request is BestEffort.
    """

    name: str
    kind: PodKind
    arrival: float
    duration: float | None
    cpu_request_milli: int
    memory_request_bytes: int
    usage: UsageProfile
    cpu_limit_milli: int = 0
    memory_limit_bytes: int = 0
    priority: int = 0
    priority_class_name: str = ""
    namespace: str = "default"
    group: str = ""
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    extended_requests: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """A gang: a PodGroup whose ``min_member`` pods must be placed together or not at all."""

    name: str
    min_member: int
    namespace: str = "default"
    queue: str = "default"


@dataclass(frozen=True, slots=True)
class Workload:
    """Nodes, pods in arrival order, gangs, and the replayed usage shapes the pods may refer to.

    ``shapes`` is an (n_shapes × n_steps) matrix of relative CPU levels (each row has mean 1) on a grid of
    ``shape_step`` seconds; rows wrap around when a pod outlives them.
    """

    name: str
    nodes: tuple[NodeSpec, ...]
    pods: tuple[PodSpec, ...]
    groups: tuple[GroupSpec, ...] = ()
    shapes: npt.NDArray[np.float64] = field(default_factory=lambda: np.ones((0, 1)))
    shape_step: float = 30.0
    notes: tuple[str, ...] = ()

    def window(self, start: float, end: float) -> Workload:
        """The workload seen from ``start`` to ``end`` (seconds), re-timed so ``start`` is 0: a warm start.

        A pod running at ``start`` (arrived before it, not finished) arrives at 0 with the rest of its planned run,
        as if the cluster had been running all along; pods arriving in the window arrive ``start`` seconds earlier;
        pods finished before ``start`` or arriving from ``end`` on are left out, and so are gangs left empty.
        """
        pods = []
        for p in self.pods:
            if p.arrival >= end or (p.duration is not None and p.arrival + p.duration <= start):
                continue
            if p.arrival >= start:
                pods.append(replace(p, arrival=p.arrival - start))
            else:
                left = None if p.duration is None else p.arrival + p.duration - start
                pods.append(replace(p, arrival=0.0, duration=left))
        pods.sort(key=lambda p: p.arrival)  # stable: the original order among equal arrivals
        groups = {p.group for p in pods if p.group}
        name = f"{self.name} from {start / 3600:g} h" if start > 0 else self.name
        return replace(self, name=name, pods=tuple(pods),
                       groups=tuple(g for g in self.groups if g.name in groups))

    def __post_init__(self) -> None:
        names = [n.name for n in self.nodes]
        if len(set(names)) != len(names):
            raise ValueError(f"workload {self.name}: duplicate node names")
        keys = [p.key for p in self.pods]
        if len(set(keys)) != len(keys):
            raise ValueError(f"workload {self.name}: duplicate pod names")
        if any(b.arrival < a.arrival for a, b in zip(self.pods, self.pods[1:], strict=False)):
            raise ValueError(f"workload {self.name}: pods must be sorted by arrival")
        groups = {g.name for g in self.groups}
        for p in self.pods:
            if p.group and p.group not in groups:
                raise ValueError(f"workload {self.name}: pod {p.key} names unknown group {p.group!r}")
            if p.usage.shape_index >= self.shapes.shape[0]:
                raise ValueError(f"workload {self.name}: pod {p.key} refers to missing usage shape {p.usage.shape_index}")
