"""What the pod-constraint plugins cost inside real scheduler runs: inter-pod affinity and topology spread.

Timed inside the sessions ``scheduler_throughput.py`` runs (5000 nodes in 3 zones, default conf with ``loadaware``,
the memory backend in-process), in two runs: ``mixed`` (1000 pods running, 2000 pending pods of its mixed shape:
15% nodeSelector, 10% required node affinity, 10% zone spread DoNotSchedule, 5% preferred pod anti-affinity, every
pod labelled and so spread by the system default constraints) in one session, and ``batches`` (11,000 pods bound,
5 batches of 100 labelled pods, one session each).  For each: the CPU and wall milliseconds summed over every call
of the inter-pod affinity filter and score, the topology spread filter and score (node affinity, which the spread
counts honour, inside them) and the pod index's opening, the CPU microseconds of those per pod, and the whole run's
CPU and wall seconds.

Usage: python benchmarks/constraint_plugins.py [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

import numpy as np
from scheduler_throughput import bench_cluster, bench_scheduler, drain, mixed_pods, shaped_pods
from session_walks import Clocks, timed_calls

from scheduler.plugins.interpodaffinity import InterPodAffinityCheck
from scheduler.plugins.podtopologyspread import PodIndex, SpreadCheck

# what is timed: (class, method, the name of its figures)
CALLS: tuple[tuple[type, str, str], ...] = (
    (InterPodAffinityCheck, "filter", "interpodaffinity_filter"),
    (InterPodAffinityCheck, "score", "interpodaffinity_score"),
    (SpreadCheck, "filter", "spread_filter"), (SpreadCheck, "score", "spread_score"),
    (PodIndex, "__init__", "pod_index_open"))


def _timed_run(body: Callable[[], int]) -> dict[str, float]:
    """``body()`` (it returns the pods it placed) with every call of :data:`CALLS` timed: sums and per pod."""
    clocks: Clocks = {f"{name}_{c}_ms": [] for _, _, name in CALLS for c in ("cpu", "wall")}
    with ExitStack() as stack:
        for cls, method, name in CALLS:
            stack.enter_context(timed_calls(cls, method, name, clocks))
        w0, c0 = time.perf_counter(), time.process_time()
        pods = body()
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    out: dict[str, float] = {k: sum(v) for k, v in clocks.items()}
    out["constraints_cpu_ms"] = sum(out[f"{name}_cpu_ms"] for _, _, name in CALLS)
    out["constraints_cpu_us_per_pod"] = 1000 * out["constraints_cpu_ms"] / max(pods, 1)
    out.update(pods=pods, run_cpu_seconds=cpu, run_wall_seconds=wall)
    return out


def mixed() -> dict[str, float]:
    rng = np.random.default_rng(3)
    cluster, clock = bench_cluster(5000, mixed_pods("running", 1000, rng, 5000))
    sched = bench_scheduler(cluster, clock, 100)
    pending = mixed_pods("pending", 2000, rng, 0)

    def body() -> int:
        cluster.load(pending)
        return drain(sched, len(pending))[0]
    return _timed_run(body)


def batches() -> dict[str, float]:
    rng = np.random.default_rng(2)
    cluster, clock = bench_cluster(5000, shaped_pods("bound", 11_000, rng, 5000))
    sched = bench_scheduler(cluster, clock, 100)
    sched.run_once()   # the first session derives everything
    waves = [shaped_pods(f"batch{b}", 100, rng) for b in range(5)]

    def body() -> int:
        for wave in waves:
            clock.advance(1)
            cluster.load(wave)
            sched.run_once()
        return sum(1 for k, _ in cluster.bindings if k.startswith("bench/batch"))
    return _timed_run(body)


def _table(out: dict[str, dict[str, float]]) -> str:
    lines = []
    for run, r in out.items():
        lines.append(f"{run}: {r['pods']:.0f} pods placed; run CPU {r['run_cpu_seconds']:.2f} s, "
                     f"wall {r['run_wall_seconds']:.2f} s")
        lines += [f"  {name:24s} CPU {r[f'{name}_cpu_ms']:8.1f} ms   wall {r[f'{name}_wall_ms']:8.1f} ms"
                  for _, _, name in CALLS]
        lines.append(f"  {'all of them':24s} CPU {r['constraints_cpu_ms']:8.1f} ms   "
                     f"{r['constraints_cpu_us_per_pod']:.0f} us per pod")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    out: dict[str, Any] = {"mixed": mixed(), "batches": batches()}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(_table(out))


if __name__ == "__main__":
    main()
