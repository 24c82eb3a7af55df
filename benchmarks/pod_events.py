"""What a pod costs the scheduler process at the edge: its ingestion and its binding, per pod.

The in-memory API server and the scheduler's cache share the process, as in ``scheduler_throughput.py``: creating
a pod stores a copy and emits it to the cache's informer, which parses it; binding it (through the scheduler's
binder, with its Scheduled event) stores the new version and emits it, and the cache derives the bound pod's view.
SchedulingBasic's pods (100m / 500Mi) on 50 nodes; what lives before the clock starts is frozen for the garbage
collector, as the scheduler's pacing does.  Figures: CPU and wall microseconds per pod of the creation (ingestion)
and of the binding, medians over the runs.

Usage: python benchmarks/pod_events.py [--pods N] [--repeat N] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time

import numpy as np
from scheduler_throughput import T0, basic_pods, node

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from scheduler.binder import Binder, EventLimiter
from scheduler.cache import SchedulerCache
from scheduler.framework.api import TaskInfo, TaskStatus

NODES = 50
_NO_VECTOR = np.zeros(0, dtype=np.int64)


def _started() -> tuple[MemoryCluster, SchedulerCache, FakeClock]:
    clock = FakeClock(T0 + 30)
    cluster = MemoryCluster(clock=clock, history=1)
    cluster.load([node(i) for i in range(NODES)])
    cache = SchedulerCache(cluster, clock)
    cache.start()
    return cluster, cache, clock


def _tasks(cache: SchedulerCache, pods: int) -> list[TaskInfo]:
    """The tasks the binder is handed: only the pod view of each is read."""
    views = [cache.pod(f"bench/pending-{j}") for j in range(pods)]
    return [TaskInfo(v.uid, "", v, v.requests, TaskStatus.PENDING, "", 0, True, "", False, _NO_VECTOR)
            for v in views if v is not None]


def run(pods: int) -> dict[str, float]:
    """One run: ``pods`` pods created, then each bound; CPU and wall microseconds per pod of each step."""
    cluster, cache, clock = _started()
    objects = basic_pods("pending", pods, np.random.default_rng(0))
    gc.collect()
    gc.freeze()
    try:
        c0, w0 = time.process_time(), time.perf_counter()
        cluster.load(objects)
        c1, w1 = time.process_time(), time.perf_counter()
        binder = Binder(cluster, cache, EventLimiter(cluster, clock.now))
        tasks = _tasks(cache, pods)
        c2, w2 = time.process_time(), time.perf_counter()
        for j, task in enumerate(tasks):
            binder.bind(task, f"node-{j % NODES:05d}")
        c3, w3 = time.process_time(), time.perf_counter()
    finally:
        gc.unfreeze()
    if len(binder.stats.bound) != pods:
        raise SystemExit(f"bound {len(binder.stats.bound)} of {pods} pods: {binder.stats.failed}")
    scale = 1e6 / pods
    return {"create_cpu_us": (c1 - c0) * scale, "create_wall_us": (w1 - w0) * scale,
            "bind_cpu_us": (c3 - c2) * scale, "bind_wall_us": (w3 - w2) * scale}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=4000, help="pods created and bound per run")
    ap.add_argument("--repeat", type=int, default=5, help="runs; the median of each figure is reported")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    if args.pods < 1 or args.repeat < 1:
        raise SystemExit(f"--pods and --repeat must be at least 1, not {args.pods} and {args.repeat}")
    runs = [run(args.pods) for _ in range(args.repeat)]
    out = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    if args.json:
        print(json.dumps({"pods": args.pods, "runs": args.repeat, **out}, indent=2))
        return
    print(f"{args.pods} pods, median of {args.repeat} runs, per pod:")
    print(f"  ingestion (create, informer parse): CPU {out['create_cpu_us']:.1f} us, wall {out['create_wall_us']:.1f} us")
    print(f"  bind (binder, API version, cache refresh): CPU {out['bind_cpu_us']:.1f} us, wall {out['bind_wall_us']:.1f} us")


if __name__ == "__main__":
    main()
