"""What one simulated run leaves behind: per-tick node utilisation and counts, and the run's counters.

A :class:`RunRecord` holds plain NumPy arrays and numbers (it is pickled back from worker processes); the
measures of ``sim.measures`` and the plots of ``sim.html`` are computed from it alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from sim.model import PodKind, Workload

if TYPE_CHECKING:
    from sim.run import SimOptions

__all__ = ["KIND_CODES", "RunRecord"]

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
# Pod classes as small integers, for per-class sums with ``np.bincount``.
KIND_CODES: dict[PodKind, int] = {kind: code for code, kind in enumerate(PodKind)}


@dataclass
class RunRecord:
    policy: str
    workload: str
    tick_seconds: float
    start_time: float
    hotspot_cpu_percent: float
    hotspot_memory_percent: float
    node_names: list[str]
    node_types: list[str]
    cpu_allocatable: F64  # millicores, per node
    memory_allocatable: F64  # bytes, per node
    cpu_util: F32  # nodes × ticks, usage / allocatable (1.0 = 100%)
    mem_util: F32
    running: I32  # per tick
    pending: I32
    throttled: I32  # pods held under a waterline CPU quota
    placed: I32  # pods bound by the session of that tick
    submitted: int = 0  # distinct workload pods that arrived
    ran: int = 0  # distinct workload pods bound at least once
    bindings: int = 0
    waits: F64 = field(default_factory=lambda: np.zeros(0))  # seconds from creation to binding, per binding
    wait_classes: list[str] = field(default_factory=list)  # per binding, as waits: "gang" or the pod kind
    waterline_evictions: int = 0
    scheduler_evictions: int = 0
    rebalancer_evictions: int = 0
    rebalance: dict[str, float] = field(default_factory=dict)  # the rebalancer's tally (sim.rebalance), if it ran
    evicted_by_kind: dict[str, int] = field(default_factory=dict)
    requeued: int = 0
    session_seconds: F64 = field(default_factory=lambda: np.zeros(0))  # wall-clock, per session
    session_cpu_seconds: F64 = field(default_factory=lambda: np.zeros(0))  # CPU time of the session's thread
    session_placed: I32 = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    pending_end: int = 0
    unschedulable_end: int = 0
    unschedulable_reasons: dict[str, int] = field(default_factory=dict)
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0  # CPU time of the run's process (wall time includes waiting for a core)
    reports: int = 0  # NodeMetric reports the agents made
    reports_built: int = 0  # of which some session or round could read (the others are never built)
    waterline_ticks: int = 0
    phase_seconds: dict[str, float] = field(default_factory=dict)  # CPU time per phase of the loop
    cpu_demand_seconds: F64 = field(default_factory=lambda: np.zeros(len(KIND_CODES)))  # millicore-seconds, per class
    cpu_served_seconds: F64 = field(default_factory=lambda: np.zeros(len(KIND_CODES)))
    inflation_parts: list[F32] = field(default_factory=list)  # per step, each running service pod's inflation
    stretch: dict[str, F64] = field(default_factory=dict)  # per class, finished finite pods' run time / planned

    @classmethod
    def empty(cls, policy: str, workload: Workload, options: SimOptions, ticks: int) -> RunRecord:
        n = len(workload.nodes)
        return cls(
            policy=policy,
            workload=workload.name,
            tick_seconds=options.tick_seconds,
            start_time=options.start_time,
            hotspot_cpu_percent=options.hotspot_cpu_percent,
            hotspot_memory_percent=options.hotspot_memory_percent,
            node_names=[nd.name for nd in workload.nodes],
            node_types=[nd.labels.get("node.kubernetes.io/instance-type", "") for nd in workload.nodes],
            cpu_allocatable=np.array([nd.cpu_milli for nd in workload.nodes], dtype=np.float64),
            memory_allocatable=np.array([nd.memory_bytes for nd in workload.nodes], dtype=np.float64),
            cpu_util=np.zeros((n, ticks), dtype=np.float32),
            mem_util=np.zeros((n, ticks), dtype=np.float32),
            running=np.zeros(ticks, dtype=np.int32),
            pending=np.zeros(ticks, dtype=np.int32),
            throttled=np.zeros(ticks, dtype=np.int32),
            placed=np.zeros(ticks, dtype=np.int32),
        )

    @property
    def ticks(self) -> int:
        return int(self.running.size)

    def store_tick(
        self, k: int, node_cpu: F64, node_mem: F64, *, running: int, pending: int, throttled: int, placed: int
    ) -> None:
        self.cpu_util[:, k] = node_cpu / self.cpu_allocatable
        self.mem_util[:, k] = node_mem / self.memory_allocatable
        self.running[k] = running
        self.pending[k] = pending
        self.throttled[k] = throttled
        self.placed[k] = placed

    def add_cpu(self, kinds: I64, demand: F64, served: F64, seconds: float) -> None:
        """One step's CPU demand and CPU served, per pod of class ``kinds``, for ``seconds``."""
        self.cpu_demand_seconds += np.bincount(kinds, weights=demand, minlength=len(KIND_CODES)) * seconds
        self.cpu_served_seconds += np.bincount(kinds, weights=served, minlength=len(KIND_CODES)) * seconds

    def add_inflation(self, inflation: F64) -> None:
        """One step's latency inflation of the running service pods (one sample per replica-step)."""
        self.inflation_parts.append(inflation.astype(np.float32))

    @property
    def inflation(self) -> F32:
        return np.concatenate(self.inflation_parts) if self.inflation_parts else np.zeros(0, dtype=np.float32)

    def finish(self, counters: Any, pending: Sequence[Any], wall_seconds: float, reports: tuple[int, int],
               waterline_ticks: int) -> None:
        """Copy the run's counters in (``counters`` is the simulation's private tally; ``reports``: NodeMetric
        reports made and built)."""
        self.submitted = len(counters.submitted)
        self.ran = len(counters.ran)
        self.bindings = counters.bindings
        self.waits = np.asarray(counters.waits, dtype=np.float64)
        self.wait_classes = list(counters.wait_classes)
        self.waterline_evictions = counters.waterline_evictions
        self.scheduler_evictions = counters.scheduler_evictions
        self.rebalancer_evictions = counters.rebalancer_evictions
        self.evicted_by_kind = dict(counters.evicted_by_kind)
        self.requeued = counters.requeued
        self.stretch = {kind: np.asarray(values, dtype=np.float64) for kind, values in counters.stretch.items()}
        self.inflation_parts = [self.inflation]  # one array pickles back from a worker faster than a thousand
        self.session_seconds = np.asarray([s for s, _, _ in counters.sessions], dtype=np.float64)
        self.session_cpu_seconds = np.asarray([c for _, c, _ in counters.sessions], dtype=np.float64)
        self.session_placed = np.asarray([n for _, _, n in counters.sessions], dtype=np.int32)
        self.pending_end = len(pending)
        reasons: dict[str, int] = {}
        for p in pending:
            if p.message:
                reasons[_reason_class(p.message)] = reasons.get(_reason_class(p.message), 0) + 1
        self.unschedulable_end = sum(reasons.values())
        self.unschedulable_reasons = reasons
        self.wall_seconds = wall_seconds
        self.reports, self.reports_built = reports
        self.waterline_ticks = waterline_ticks


def _reason_class(message: str) -> str:
    """A short, low-cardinality summary of a fit message ("0/100 nodes are available: 60 Insufficient cpu...")."""
    head, _, rest = message.partition(": ")
    if not rest:
        return head.strip()[:80]
    parts = [p.strip().rstrip(".") for p in rest.split(",")]
    names = sorted({p.split(" ", 1)[1] if p.split(" ", 1)[0].isdigit() else p for p in parts if p})
    return "; ".join(names)[:120]
