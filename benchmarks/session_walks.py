"""What the per-session walks outside the session build cost at 5000 nodes with 11,000 pods bound.

Timed inside each session the scheduler runs, as the daemon runs them (one per simulated second, default conf with
``loadaware``, the memory backend in-process), in the two kinds of session of ``session_open.py``: after a second's
worth of NodeMetric reports (every node reports once a minute) with nothing pending, and after a batch of 100 new
pods (the session binds them).  For each kind, the median CPU and wall milliseconds of: the load-aware plugin's
opening (its per-node state), the proportion and drf plugins' opening (queue usage, shares), the enqueue action,
gang's session close, the backfill action, the write-back (pod conditions, PodGroup and Queue status), and the
whole session.  Each of them carries what it derived from one session to the next and redoes only what changed.

Usage: python benchmarks/session_walks.py [--nodes N] [--pods N] [--sessions N] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import numpy as np
from scheduler_throughput import bench_cluster, bench_scheduler, nodemetric, shaped_pods

from scheduler.actions.backfill import Backfill
from scheduler.actions.enqueue import Enqueue
from scheduler.engine import Scheduler
from scheduler.plugins.drf import Drf
from scheduler.plugins.gang import Gang
from scheduler.plugins.loadaware import LoadAware
from scheduler.plugins.proportion import Proportion
from scheduler.writeback import WriteBack

Clocks = dict[str, list[float]]
# what is timed: (class, method, the name of its figures)
WALKS: tuple[tuple[type, str, str], ...] = (
    (LoadAware, "on_session_open", "loadaware_open"), (Proportion, "on_session_open", "proportion_open"),
    (Drf, "on_session_open", "drf_open"), (Enqueue, "execute", "enqueue"), (Gang, "on_session_close", "gang_close"),
    (Backfill, "execute", "backfill"), (WriteBack, "write", "writeback"), (Scheduler, "run_once", "session"))


@contextmanager
def timed_calls(cls: type, method: str, name: str, clocks: Clocks) -> Iterator[None]:
    """``cls.method`` timed (CPU and wall) into ``clocks`` while inside."""
    original: Callable[..., Any] = getattr(cls, method)

    def run(*args: Any, **kwargs: Any) -> Any:
        c0, w0 = time.process_time(), time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            clocks[f"{name}_cpu_ms"].append((time.process_time() - c0) * 1000)
            clocks[f"{name}_wall_ms"].append((time.perf_counter() - w0) * 1000)

    setattr(cls, method, run)
    try:
        yield
    finally:
        setattr(cls, method, original)


def _session(sched: Scheduler, clocks: Clocks) -> None:
    with ExitStack() as stack:
        for cls, method, name in WALKS:
            stack.enter_context(timed_calls(cls, method, name, clocks))
        sched.run_once()


def run(nodes: int, pods: int, sessions: int) -> dict[str, dict[str, float]]:
    """Median CPU and wall ms of each walk, per kind of session."""
    rng = np.random.default_rng(2)
    cluster, clock = bench_cluster(nodes, shaped_pods("bound", pods, rng, nodes))
    sched = bench_scheduler(cluster, clock, 100)
    sched.run_once()   # the first session derives everything
    per_second = max(1, nodes // 60)

    def reports(s: int) -> None:
        for i in range(s * per_second, (s + 1) * per_second):
            cluster.replace("NodeMetric", nodemetric(i % nodes, rng, clock.now()))

    def batch(s: int) -> None:
        cluster.load(shaped_pods(f"batch{s}", 100, rng))

    out: dict[str, dict[str, float]] = {}
    for kind, before in (("metrics_only", reports), ("batch_of_100", batch)):
        clocks: Clocks = {f"{name}_{c}_ms": [] for _, _, name in WALKS for c in ("cpu", "wall")}
        for s in range(sessions):
            clock.advance(1)
            before(s)
            _session(sched, clocks)
        out[kind] = {k: statistics.median(v) if v else 0.0 for k, v in clocks.items()}
    return out


def _table(out: dict[str, dict[str, float]]) -> str:
    lines = []
    for kind, r in out.items():
        lines.append(f"{kind}:")
        lines += [f"  {name:16s} CPU {r[f'{name}_cpu_ms']:7.1f}   wall {r[f'{name}_wall_ms']:7.1f}"
                  for _, _, name in WALKS]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, default, meaning in (("nodes", 5000, "nodes of the cluster"),
                                   ("pods", 11_000, "pods bound before the timed sessions"),
                                   ("sessions", 5, "sessions of each kind (medians reported)")):
        ap.add_argument(f"--{flag}", type=int, default=default, help=meaning)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    bad = [f"--{n} must be at least 1, not {getattr(args, n)}" for n in ("nodes", "pods", "sessions")
           if getattr(args, n) < 1]
    if bad:
        raise SystemExit("; ".join(bad))
    out = run(args.nodes, args.pods, args.sessions)
    if args.json:
        print(json.dumps({"nodes": args.nodes, "pods": args.pods, "sessions": args.sessions, **out}, indent=2))
    else:
        print(f"{args.nodes} nodes, {args.pods} pods bound; median of {args.sessions} session(s) of each kind, ms")
        print(_table(out))


if __name__ == "__main__":
    main()
