"""What opening a session costs at 5000 nodes with 11,000 pods bound, and how much of it is the session build.

The build (``scheduler.framework.build.build_state``: the session's tasks, jobs, per-node task maps and node
accounting) is timed inside each session the scheduler runs, as the daemon runs them (one per simulated second,
default conf with ``loadaware``, the memory backend in-process), in two kinds of session: after a second's worth of
NodeMetric reports (every node reports once a minute) with nothing pending, after a batch of 100 new pods (the
session binds them), and after a node came or went (added and deleted in turn).  For each kind: the median CPU and wall milliseconds of the build, of the session's
opening (build and plugins), and of the whole session.  Nodes, pods and NodeMetrics are those of
``scheduler_throughput.py --shape steady``.

Usage: python benchmarks/session_open.py [--nodes N] [--pods N] [--sessions N] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from scheduler_throughput import bench_cluster, bench_scheduler, node, nodemetric, shaped_pods

import scheduler.framework.session as session_module
from scheduler.engine import Scheduler

Clocks = dict[str, list[float]]


@contextmanager
def _timed_builds(clocks: Clocks) -> Iterator[None]:
    """Every session build and session opening while inside, timed (CPU and wall) into ``clocks``."""
    build = getattr(session_module, "build_state")   # noqa: B009 - the name the session calls, replaced below
    init = session_module.Session.__init__

    def timed(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            c0, w0 = time.process_time(), time.perf_counter()
            out = fn(*args, **kwargs)
            clocks[f"{name}_cpu_ms"].append((time.process_time() - c0) * 1000)
            clocks[f"{name}_wall_ms"].append((time.perf_counter() - w0) * 1000)
            return out
        return run

    setattr(session_module, "build_state", timed(build, "build"))   # noqa: B010
    setattr(session_module.Session, "__init__", timed(init, "open"))   # noqa: B010
    try:
        yield
    finally:
        setattr(session_module, "build_state", build)   # noqa: B010
        setattr(session_module.Session, "__init__", init)   # noqa: B010


def _session(sched: Scheduler, clocks: Clocks) -> None:
    c0, w0 = time.process_time(), time.perf_counter()
    with _timed_builds(clocks):
        sched.run_once()
    clocks["session_cpu_ms"].append((time.process_time() - c0) * 1000)
    clocks["session_wall_ms"].append((time.perf_counter() - w0) * 1000)


def _medians(clocks: Clocks) -> dict[str, float]:
    return {k: statistics.median(v) for k, v in clocks.items()}


def run(nodes: int, pods: int, sessions: int) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(2)
    cluster, clock = bench_cluster(nodes, shaped_pods("bound", pods, rng, nodes))
    sched = bench_scheduler(cluster, clock, 100)
    sched.run_once()   # the first session derives everything
    kinds = ("build_cpu_ms", "build_wall_ms", "open_cpu_ms", "open_wall_ms", "session_cpu_ms", "session_wall_ms")
    metrics: Clocks = {k: [] for k in kinds}
    per_second = max(1, nodes // 60)
    for s in range(sessions):
        clock.advance(1)
        for i in range(s * per_second, (s + 1) * per_second):
            cluster.replace("NodeMetric", nodemetric(i % nodes, rng, clock.now()))
        _session(sched, metrics)
    batches: Clocks = {k: [] for k in kinds}
    for b in range(sessions):
        clock.advance(1)
        cluster.load(shaped_pods(f"batch{b}", 100, rng))
        _session(sched, batches)
    churn: Clocks = {k: [] for k in kinds}
    for s in range(sessions):
        clock.advance(1)
        if s % 2 == 0:
            cluster.create("Node", node(nodes + s))
        else:
            cluster.delete("Node", node(s)["metadata"]["name"])
        _session(sched, churn)
    return {"metrics_only": _medians(metrics), "batch_of_100": _medians(batches), "node_came_or_went": _medians(churn)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=11_000, help="pods bound before the timed sessions")
    ap.add_argument("--sessions", type=int, default=5, help="sessions of each kind (medians reported)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    for name in ("nodes", "pods", "sessions"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name} must be at least 1, not {getattr(args, name)}")
    out = run(args.nodes, args.pods, args.sessions)
    if args.json:
        print(json.dumps({"nodes": args.nodes, "pods": args.pods, "sessions": args.sessions, **out}, indent=2))
        return
    print(f"{args.nodes} nodes, {args.pods} pods bound; median of {args.sessions} session(s) of each kind")
    for kind, r in out.items():
        print(f"{kind}: build CPU {r['build_cpu_ms']:.1f} ms (wall {r['build_wall_ms']:.1f}); open CPU "
              f"{r['open_cpu_ms']:.1f} ms (wall {r['open_wall_ms']:.1f}); session CPU {r['session_cpu_ms']:.1f} ms "
              f"(wall {r['session_wall_ms']:.1f})")


if __name__ == "__main__":
    main()
