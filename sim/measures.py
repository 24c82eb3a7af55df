"""The measures a comparison reports, computed from a :class:`sim.record.RunRecord` alone.

The definitions are in docs/design/simulator.md §1; the report prints the short ones of :data:`DEFINITIONS`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from sim.model import PodKind
from sim.record import KIND_CODES, RunRecord

__all__ = ["DEFINITIONS", "Measures", "measure", "reduction", "ROWS", "table", "comparison", "across_seeds",
           "seed_table"]

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
    "cpu demand served": "CPU pods got / CPU they wanted (their usage profile capped by their own limit), over pods "
    "and ticks; per class too",
    "service latency inflation": "per service replica-tick, min(20, 1/(1-rho) x demand/served), rho = the node's CPU "
    "utilisation of capacity (M/M/1 queueing plus denied demand); mean and p99 over replica-ticks",
    "batch stretch": "finished batch pods: run time / planned run time (a pod runs at served/demand of full speed); "
    "p50 and p95",
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
    pods_pending_end: int
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
    cpu_demand_served_percent: float
    service_cpu_served_percent: float
    batch_cpu_served_percent: float
    best_effort_cpu_served_percent: float
    service_latency_inflation_mean: float
    service_latency_inflation_p99: float
    batch_stretch_p50: float
    batch_stretch_p95: float
    best_effort_stretch_p95: float
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
        pods_pending_end=rec.pending_end,
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
        **_contention(rec),
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


def _served(demand: float, served: float) -> float:
    return round(100.0 * served / demand, 3) if demand > 0 else 100.0


def _quantile(values: np.ndarray, q: float) -> float:
    return round(float(np.percentile(values, q)), 3) if values.size else 1.0


def _contention(rec: RunRecord) -> dict[str, float]:
    """The contention measures (CPU served, latency inflation, stretch) of ``rec``."""
    demand, served = rec.cpu_demand_seconds, rec.cpu_served_seconds
    code = {kind.value: c for kind, c in KIND_CODES.items()}
    inflation = rec.inflation
    empty = np.zeros(0)
    batch = rec.stretch.get(PodKind.BATCH.value, empty)
    return {
        "cpu_demand_served_percent": _served(float(demand.sum()), float(served.sum())),
        **{f"{kind.replace('-', '_')}_cpu_served_percent": _served(float(demand[c]), float(served[c]))
           for kind, c in code.items()},
        "service_latency_inflation_mean": round(float(inflation.mean()), 3) if inflation.size else 1.0,
        "service_latency_inflation_p99": _quantile(inflation, 99),
        "batch_stretch_p50": _quantile(batch, 50),
        "batch_stretch_p95": _quantile(batch, 95),
        "best_effort_stretch_p95": _quantile(rec.stretch.get(PodKind.BEST_EFFORT.value, empty), 95),
    }


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
    ("pods pending at end", "pods_pending_end", "{:,d}"),
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
    ("CPU demand served %", "cpu_demand_served_percent", "{:.2f}"),
    ("  services", "service_cpu_served_percent", "{:.2f}"),
    ("  batch", "batch_cpu_served_percent", "{:.2f}"),
    ("  best-effort", "best_effort_cpu_served_percent", "{:.2f}"),
    ("service latency inflation, mean", "service_latency_inflation_mean", "{:.3f}"),
    ("service latency inflation, p99", "service_latency_inflation_p99", "{:.3f}"),
    ("batch stretch p50", "batch_stretch_p50", "{:.3f}"),
    ("batch stretch p95", "batch_stretch_p95", "{:.3f}"),
    ("best-effort stretch p95", "best_effort_stretch_p95", "{:.3f}"),
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


def comparison(results: Sequence[Measures], baseline: str = "kube-default") -> Mapping[str, Any]:
    """Each policy against the baseline (``baseline`` if compared, else the first policy): hotspot reduction,
    scheduled-pod difference, eviction rate."""
    base = next((m for m in results if m.policy == baseline), results[0] if results else None)
    if base is None:
        return {}
    out: dict[str, Any] = {}
    for m in results:
        if m is base:
            continue
        out[m.policy] = {
            "baseline": base.policy,
            "hotspot_reduction_percent": reduction(base.hotspot_node_minutes, m.hotspot_node_minutes),
            "cpu_hotspot_reduction_percent": reduction(base.hotspot_cpu_node_minutes, m.hotspot_cpu_node_minutes),
            "scheduled_difference": m.pods_scheduled - base.pods_scheduled,
            "eviction_rate_percent": m.eviction_rate_percent,
        }
    return out


def _spread(values: Mapping[int, float]) -> dict[str, Any]:
    xs = list(values.values())
    return {"mean": round(float(np.mean(xs)), 3), "min": min(xs), "max": max(xs), "by_seed": dict(values)}


def across_seeds(per_seed: Mapping[int, Sequence[Measures]]) -> dict[str, Any]:
    """Per policy and measure, the mean, min and max over the seeds (and each seed's value); per compared policy,
    the same for its hotspot reduction against the baseline.  Policies in the order of the first seed."""
    first = next(iter(per_seed.values()))
    numbers = [k for k, v in first[0].to_json().items() if isinstance(v, int | float) and not isinstance(v, bool)]
    policies: dict[str, Any] = {}
    for i, m in enumerate(first):
        runs = {seed: results[i].to_json() for seed, results in per_seed.items()}
        policies[m.policy] = {k: _spread({s: r[k] for s, r in runs.items()}) for k in numbers}
    comparisons = {seed: comparison(results) for seed, results in per_seed.items()}
    compared: dict[str, Any] = {}
    for name in next(iter(comparisons.values())):
        cuts = {s: c[name]["hotspot_reduction_percent"] for s, c in comparisons.items()}
        known = {s: v for s, v in cuts.items() if v is not None}
        compared[name] = {"baseline": next(iter(comparisons.values()))[name]["baseline"],
                          "hotspot_reduction_percent": _spread(known) if known else None}
    return {"seeds": list(per_seed), "policies": policies, "comparison": compared}


def seed_table(summary: Mapping[str, Any]) -> list[list[str]]:
    """Rows of cells like :func:`table`, each cell ``mean [min - max]`` over the seeds."""
    policies = summary["policies"]
    rows = [["measure (mean [min - max] over seeds " + ",".join(map(str, summary["seeds"])) + ")", *policies]]
    for label, attr, fmt in ROWS:
        cells = []
        for stats in policies.values():
            s = stats[attr]
            mean = fmt.replace(",d", ",.1f").replace(":d", ":.1f").format(s["mean"])
            cells.append(f"{mean} [{fmt.format(s['min'])} - {fmt.format(s['max'])}]")
        rows.append([label, *cells])
    return rows
