"""The measures a comparison reports, computed from a :class:`sim.record.RunRecord` alone.

Definitions (they are printed in the report too, from :data:`DEFINITIONS`):

* **hotspot node-minutes** — for every tick, the number of nodes whose CPU usage is above 65% of their
  allocatable CPU (memory: above 95% of allocatable memory), times the tick length in minutes, summed over the
  run.  "Either" counts a node once when both are hot.  Usage is the node's true usage (pods + system), not
  what its NodeMetric last reported.
* **p99 utilisation** — the 99th percentile of all node × tick CPU (memory) utilisation samples.
* **spread** — the standard deviation of utilisation across nodes at each tick, averaged over the ticks
  (percentage points): how unevenly the load is spread.
* **mean cluster utilisation** — total usage / total allocatable, averaged over the ticks.
* **pods** — submitted: workload pods that arrived; scheduled: of those, pods bound at least once; pending:
  pods still waiting at the end; unschedulable: of those, pods the last session found no feasible node for
  (it gave a fit failure message); wait: creation to binding, 0 for a pod the session of the tick it arrived in
  bound (its mean, p95, p99 and longest; and the share of bindings that waited at all, since a few pods held
  back for hours can pull the mean above the p95).
* **evictions** — accepted evictions by the waterline engine and by the scheduler (preempt/reclaim); the rate
  is evictions per submitted pod.  Evicted pods are re-created (and counted once more when bound).
* **throttle-minutes** — pod-minutes spent under a CPU quota the waterline engine lowered below the pod's own
  limit (or set on a pod without a limit).
* **scheduling latency** — wall-clock time of one session of the real scheduler, and that time divided by the
  pods it placed; also the session's CPU time, which is what to compare when runs share cores (the default
  runs all policies at once, so on 2 cores wall-clock includes waiting for the CPU).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from sim.record import RunRecord

__all__ = ["DEFINITIONS", "Measures", "measure", "reduction", "ROWS", "table", "comparison"]

DEFINITIONS: dict[str, str] = {
    "hotspot node-minutes": "Σ over ticks of (nodes with CPU usage > 65% of allocatable, or memory > 95%) × tick minutes",
    "p99 utilisation": "99th percentile of all node × tick utilisation samples",
    "spread": "standard deviation of utilisation across nodes, averaged over ticks (percentage points)",
    "mean utilisation": "cluster usage / cluster allocatable, averaged over ticks",
    "scheduled": "submitted workload pods bound at least once",
    "pending / unschedulable": "pods waiting at the end / of those, pods the last session could not fit anywhere",
    "wait to bind": "seconds from a pod's creation to its binding, 0 when the session of the tick it arrived in "
    "bound it; mean, p95, p99 and longest over all bindings, and the share of bindings that waited at all",
    "evictions": "accepted evictions (waterline engine + scheduler preemption + rebalancer); rate = evictions / "
    "submitted pods",
    "rebalancer": "pods the rebalancer moved (evicted once it proved a destination); lost work = run time of the moved "
    "batch pods, which restart from the beginning (pod-hours); moved twice = workload pods moved again within an hour",
    "throttle-minutes": "pod-minutes under a waterline CPU quota below the pod's own limit",
    "session latency": "wall-clock time of one scheduling session; per pod = session time / pods placed; "
    "CPU time excludes waiting for a core when runs share them",
}


@dataclass(frozen=True, slots=True)
class Measures:
    policy: str
    hotspot_node_minutes: float
    hotspot_cpu_node_minutes: float
    hotspot_memory_node_minutes: float
    p99_cpu_percent: float
    p99_memory_percent: float
    spread_cpu_points: float
    spread_memory_points: float
    mean_cpu_percent: float
    mean_memory_percent: float
    peak_cpu_percent: float
    pods_submitted: int
    pods_scheduled: int
    bindings: int
    pods_pending: int
    pods_unschedulable: int
    wait_mean_seconds: float
    wait_p95_seconds: float
    wait_p99_seconds: float
    wait_max_seconds: float
    waited_percent: float  # of bindings, those that waited beyond the tick the pod arrived in
    evictions_waterline: int
    evictions_scheduler: int
    evictions_rebalancer: int
    eviction_rate_percent: float
    throttle_minutes: float
    sessions: int
    session_mean_ms: float
    session_p99_ms: float
    session_cpu_mean_ms: float
    per_pod_ms: float
    wall_seconds: float
    cpu_seconds: float
    rebalance_lost_pod_hours: float = 0.0
    rebalance_moved_twice_within_hour: int = 0
    rebalance_unproven: int = 0

    @property
    def evictions(self) -> int:
        return self.evictions_waterline + self.evictions_scheduler + self.evictions_rebalancer

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["evictions"] = self.evictions
        return out


def _pct(x: float) -> float:
    return round(100.0 * x, 2)


def measure(rec: RunRecord) -> Measures:
    minutes = rec.tick_seconds / 60.0
    cpu_hot = rec.cpu_util > rec.hotspot_cpu_percent / 100.0
    mem_hot = rec.mem_util > rec.hotspot_memory_percent / 100.0
    cluster_cpu = (rec.cpu_util * rec.cpu_allocatable[:, None]).sum(axis=0) / rec.cpu_allocatable.sum()
    cluster_mem = (rec.mem_util * rec.memory_allocatable[:, None]).sum(axis=0) / rec.memory_allocatable.sum()
    waits = rec.waits
    sessions = rec.session_seconds
    placed = int(rec.session_placed.sum())
    evictions = rec.waterline_evictions + rec.scheduler_evictions + rec.rebalancer_evictions
    return Measures(
        policy=rec.policy,
        hotspot_node_minutes=round(float((cpu_hot | mem_hot).sum()) * minutes, 1),
        hotspot_cpu_node_minutes=round(float(cpu_hot.sum()) * minutes, 1),
        hotspot_memory_node_minutes=round(float(mem_hot.sum()) * minutes, 1),
        p99_cpu_percent=_pct(float(np.percentile(rec.cpu_util, 99))) if rec.cpu_util.size else 0.0,
        p99_memory_percent=_pct(float(np.percentile(rec.mem_util, 99))) if rec.mem_util.size else 0.0,
        spread_cpu_points=_pct(float(rec.cpu_util.std(axis=0).mean())) if rec.cpu_util.size else 0.0,
        spread_memory_points=_pct(float(rec.mem_util.std(axis=0).mean())) if rec.mem_util.size else 0.0,
        mean_cpu_percent=_pct(float(cluster_cpu.mean())) if cluster_cpu.size else 0.0,
        mean_memory_percent=_pct(float(cluster_mem.mean())) if cluster_mem.size else 0.0,
        peak_cpu_percent=_pct(float(cluster_cpu.max())) if cluster_cpu.size else 0.0,
        pods_submitted=rec.submitted,
        pods_scheduled=rec.ran,
        bindings=rec.bindings,
        pods_pending=rec.pending_end,
        pods_unschedulable=rec.unschedulable_end,
        wait_mean_seconds=round(float(waits.mean()), 1) if waits.size else 0.0,
        wait_p95_seconds=round(float(np.percentile(waits, 95)), 1) if waits.size else 0.0,
        wait_p99_seconds=round(float(np.percentile(waits, 99)), 1) if waits.size else 0.0,
        wait_max_seconds=round(float(waits.max()), 1) if waits.size else 0.0,
        waited_percent=round(100.0 * float((waits > 0).mean()), 2) if waits.size else 0.0,
        evictions_waterline=rec.waterline_evictions,
        evictions_scheduler=rec.scheduler_evictions,
        evictions_rebalancer=rec.rebalancer_evictions,
        eviction_rate_percent=round(100.0 * evictions / rec.submitted, 3) if rec.submitted else 0.0,
        throttle_minutes=round(float(rec.throttled.sum()) * minutes, 1),
        sessions=int(sessions.size),
        session_mean_ms=round(1000.0 * float(sessions.mean()), 2) if sessions.size else 0.0,
        session_p99_ms=round(1000.0 * float(np.percentile(sessions, 99)), 2) if sessions.size else 0.0,
        session_cpu_mean_ms=round(1000.0 * float(rec.session_cpu_seconds.mean()), 2) if rec.session_cpu_seconds.size else 0.0,
        per_pod_ms=round(1000.0 * float(sessions.sum()) / placed, 2) if placed else 0.0,
        wall_seconds=round(rec.wall_seconds, 2),
        cpu_seconds=round(rec.cpu_seconds, 2),
        rebalance_lost_pod_hours=float(rec.rebalance.get("lost_pod_hours", 0.0)),
        rebalance_moved_twice_within_hour=int(rec.rebalance.get("moved_twice_within_hour", 0)),
        rebalance_unproven=int(rec.rebalance.get("unproven", 0)),
    )


def reduction(base: float, other: float) -> float | None:
    """Relative reduction of ``other`` against ``base`` in percent (None when the base is 0)."""
    if base <= 0:
        return None
    return round(100.0 * (base - other) / base, 1)


# (label, attribute, format) rows of the terminal table and the HTML table, in order.
ROWS: Sequence[tuple[str, str, str]] = (
    ("hotspot node-minutes (cpu>65% or mem>95%)", "hotspot_node_minutes", "{:,.0f}"),
    ("  of which cpu", "hotspot_cpu_node_minutes", "{:,.0f}"),
    ("  of which memory", "hotspot_memory_node_minutes", "{:,.0f}"),
    ("p99 node cpu utilisation %", "p99_cpu_percent", "{:.1f}"),
    ("p99 node memory utilisation %", "p99_memory_percent", "{:.1f}"),
    ("spread (stddev) of node cpu, points", "spread_cpu_points", "{:.1f}"),
    ("spread (stddev) of node memory, points", "spread_memory_points", "{:.1f}"),
    ("mean cluster cpu utilisation %", "mean_cpu_percent", "{:.1f}"),
    ("mean cluster memory utilisation %", "mean_memory_percent", "{:.1f}"),
    ("pods submitted", "pods_submitted", "{:,d}"),
    ("pods scheduled", "pods_scheduled", "{:,d}"),
    ("pods pending at end", "pods_pending", "{:,d}"),
    ("  of which unschedulable", "pods_unschedulable", "{:,d}"),
    ("mean wait to bind, s", "wait_mean_seconds", "{:.0f}"),
    ("p95 wait to bind, s", "wait_p95_seconds", "{:.0f}"),
    ("p99 wait to bind, s", "wait_p99_seconds", "{:.0f}"),
    ("longest wait to bind, s", "wait_max_seconds", "{:,.0f}"),
    ("bindings that waited, %", "waited_percent", "{:.2f}"),
    ("evictions by waterline", "evictions_waterline", "{:,d}"),
    ("evictions by scheduler", "evictions_scheduler", "{:,d}"),
    ("evictions by rebalancer", "evictions_rebalancer", "{:,d}"),
    ("  work lost to moves, pod-hours", "rebalance_lost_pod_hours", "{:.1f}"),
    ("  pods moved twice within an hour", "rebalance_moved_twice_within_hour", "{:,d}"),
    ("evictions per submitted pod %", "eviction_rate_percent", "{:.2f}"),
    ("throttle-minutes (pod-minutes)", "throttle_minutes", "{:,.0f}"),
    ("scheduling sessions", "sessions", "{:,d}"),
    ("session latency mean, ms", "session_mean_ms", "{:.1f}"),
    ("session latency p99, ms", "session_p99_ms", "{:.1f}"),
    ("session CPU time mean, ms", "session_cpu_mean_ms", "{:.1f}"),
    ("scheduling time per placed pod, ms", "per_pod_ms", "{:.2f}"),
    ("wall time of the run, s", "wall_seconds", "{:.1f}"),
    ("CPU time of the run, s", "cpu_seconds", "{:.1f}"),
)


def table(results: Sequence[Measures]) -> list[list[str]]:
    """Rows of cells: a header, then one row per measure."""
    rows = [["measure", *[m.policy for m in results]]]
    for label, attr, fmt in ROWS:
        rows.append([label, *[fmt.format(getattr(m, attr)) for m in results]])
    return rows


def comparison(results: Sequence[Measures], baseline: str = "requests") -> Mapping[str, Any]:
    """Each policy against the baseline: hotspot reduction, scheduled-pod difference, eviction rate."""
    base = next((m for m in results if m.policy == baseline), None)
    if base is None:
        return {}
    out: dict[str, Any] = {}
    for m in results:
        if m.policy == baseline:
            continue
        out[m.policy] = {
            "hotspot_reduction_percent": reduction(base.hotspot_node_minutes, m.hotspot_node_minutes),
            "cpu_hotspot_reduction_percent": reduction(base.hotspot_cpu_node_minutes, m.hotspot_cpu_node_minutes),
            "scheduled_difference": m.pods_scheduled - base.pods_scheduled,
            "eviction_rate_percent": m.eviction_rate_percent,
        }
    return out
