"""Scheduler throughput and cost on kube scheduler_perf's SchedulingBasic shape and on realistic workloads.

Every shape runs the default conf (which includes ``loadaware``) in-process on the memory backend, nodes of
4 CPU / 32Gi / 110 pods in 3 zones, each with a fresh NodeMetric.  As kube's scheduler_perf does, the pending pods
are created after the scheduler started, so the timed region holds their ingestion (the informer parses them) as
well as every session and its write-back.  The workload meets a scheduler that already runs, as one arriving at the
daemon (a session per second) does and as scheduler_perf times only the measured pods on warm caches: one session
runs before the pending pods are created, and its CPU and wall time (it derives every node) are reported apart
(``startup_session_cpu_ms``, ``startup_session_wall_ms``), outside the timed region.  Shapes:

* ``basic``: SchedulingBasic, 5000 nodes, 1000 pods running, 10,000 identical pending pods (100m / 500Mi);
* ``shapes20``: the same counts, pods of 20 cpu/memory shapes in random order;
* ``mixed``: ``shapes20`` plus labels, 15% nodeSelector, 10% required node affinity, 10% zone spread
  (DoNotSchedule) and 5% preferred pod anti-affinity;
* ``steady``: 5000 nodes with 11,000 pods bound, one session per (simulated) second: the CPU of a session with
  nothing pending and nothing changed (median of several), of one with nothing pending after a second's worth of
  NodeMetric reports (every node reports once a minute), then batches of 100 arriving pods, one session each;
* ``basic10k``: SchedulingBasic on 10,000 nodes;
* ``gangs``: 1000 nodes, 1000 gangs of 8.

Figures per shape: wall and process-CPU seconds of the timed region, pods/s and pods per CPU-second, p50/p99 wall
time between consecutive binds, and the process's peak RSS.  Each shape runs in a process of its own (the peak RSS
is that shape's); ``--repeat N`` runs it N times and reports the median of every figure.  kube-scheduler's CI
fails below 680 pods/s on SchedulingBasic.  The in-process API server shares the process (its CPU counts).  The
scheduler paces the garbage collector as the daemon does (``scheduler.gcpacing``: what outlives its start and each
session is frozen; its one full collection per ten minutes falls, in a run shorter than that, at the start).

Usage: python benchmarks/scheduler_throughput.py [--shape NAME ...] [--quick] [--repeat N] [--json]
       [--percentage-nodes-to-find P]
       valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/dev/null
           python benchmarks/scheduler_throughput.py --callgrind --quick --shape basic   (one command)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from common.clock import FakeClock, to_rfc3339
from common.cluster.memory import MemoryCluster
from scheduler.conf import default_conf
from scheduler.engine import Scheduler
from scheduler.framework.api import TaskInfo
from scheduler.framework.sampling import NodeSampling
from scheduler.gcpacing import CollectorPacing

KUBE_CI_THRESHOLD = 680.0
T0 = 1_700_000_000.0
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
# 20 cpu/memory request shapes (millicores, MiB)
SHAPES = [(cpu, mem) for cpu in (100, 200, 250, 300, 500) for mem in (256, 512, 1024, 2048)]
Pod = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Size:
    """How big a shape runs: full (the issue's sizes) or ``--quick`` (the same nodes, fewer pods)."""

    pods: int
    batches: int
    idle_sessions: int


FULL = Size(pods=10_000, batches=20, idle_sessions=5)
QUICK = Size(pods=2_000, batches=5, idle_sessions=3)


def node(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}",
                         "labels": {HOSTNAME: name, ZONE: f"z{i % 3}", "disktype": "ssd" if i % 2 else "hdd"}},
            "spec": {}, "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                                   "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                                   "conditions": [{"type": "Ready", "status": "True"}]}}


def nodemetric(i: int, rng: np.random.Generator, updated: float = T0) -> dict[str, Any]:
    cpu = int(rng.integers(100, 1500))
    mem = int(rng.integers(1, 8)) * 1024 ** 3
    return {"apiVersion": "slo.loadwise.io/v1alpha1", "kind": "NodeMetric", "metadata": {"name": f"node-{i:05d}"},
            "spec": {"metricCollectPolicy": {"aggregateDurationSeconds": 300, "reportIntervalSeconds": 60}},
            "status": {"updateTime": to_rfc3339(updated),
                       "nodeMetric": {"nodeUsage": {"resources": {"cpu": f"{cpu}m", "memory": str(mem)}}}}}


def pod(name: str, *, node_name: str = "", group: str = "", cpu: int = 100, memory: int = 500,
        labels: dict[str, str] | None = None, extra: dict[str, Any] | None = None) -> Pod:
    ann = {"scheduling.loadwise.io/group-name": group} if group else {}
    spec: dict[str, Any] = {"schedulerName": "loadwise-scheduler",
                            "containers": [{"name": "c", "image": "pause",
                                            "resources": {"requests": {"cpu": f"{cpu}m",
                                                                       "memory": f"{memory}Mi"}}}]}
    spec.update(extra or {})
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench", "uid": f"uid-{name}", "annotations": ann,
                         "labels": labels or {}, "creationTimestamp": to_rfc3339(T0)},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def basic_pods(prefix: str, count: int, rng: np.random.Generator, nodes: int = 0) -> list[Pod]:
    """SchedulingBasic's identical pods (bound round-robin when ``nodes``)."""
    return [pod(f"{prefix}-{j}", node_name=f"node-{j % nodes:05d}" if nodes else "") for j in range(count)]


def shaped_pods(prefix: str, count: int, rng: np.random.Generator, nodes: int = 0) -> list[Pod]:
    """Pods of the 20 shapes in random order, each labelled with one of 10 apps."""
    picks = rng.integers(0, len(SHAPES), count)
    out = []
    for j, k in enumerate(picks):
        cpu, mem = SHAPES[int(k)]
        out.append(pod(f"{prefix}-{j}", node_name=f"node-{j % nodes:05d}" if nodes else "", cpu=cpu, memory=mem,
                       labels={"app": f"app-{j % 10}"}))
    return out


def _constraint(app: str, roll: float) -> dict[str, Any]:
    """The scheduling constraint of a mixed-shape pod drawn at ``roll`` in [0, 1)."""
    selector = {"matchLabels": {"app": app}}
    if roll < 0.15:
        return {"nodeSelector": {"disktype": "ssd"}}
    if roll < 0.25:
        term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z0", "z1"]}]}
        return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term]}}}}
    if roll < 0.35:
        return {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE,
                                               "whenUnsatisfiable": "DoNotSchedule", "labelSelector": selector}]}
    if roll < 0.40:
        return {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": {"topologyKey": HOSTNAME, "labelSelector": selector}}]}}}
    return {}


def mixed_pods(prefix: str, count: int, rng: np.random.Generator, nodes: int = 0) -> list[Pod]:
    """``shaped_pods`` with the mixed constraints (pending pods only; bound ones carry labels alone)."""
    out = shaped_pods(prefix, count, rng, nodes)
    if nodes:
        return out
    for p, roll in zip(out, rng.random(count), strict=True):
        p["spec"].update(_constraint(p["metadata"]["labels"]["app"], float(roll)))
    return out


PodMaker = Callable[[str, int, np.random.Generator, int], list[Pod]]


class TimedScheduler(Scheduler):
    """Records the wall time of every bind: the per-pod scheduling cost is the gap between consecutive ones."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.bind_times: list[float] = []
        original = self.binder.bind

        def bind(task: TaskInfo, node: str) -> bool:
            ok = original(task, node)
            self.bind_times.append(time.perf_counter())
            return ok
        self.binder.bind = bind  # type: ignore[method-assign]


def bench_cluster(nodes: int, running: list[Pod], extra: Iterable[dict[str, Any]] = ()) -> tuple[MemoryCluster, FakeClock]:
    """The in-memory cluster of these benchmarks (``nodes`` in 3 zones, fresh NodeMetrics, ``running`` bound) and
    its clock; the other scheduler benchmarks build theirs with it too."""
    rng = np.random.default_rng(1)
    clock = FakeClock(T0 + 30)
    # the scheduler's informers are subscriptions: the API server needs no watch history to replay
    cluster = MemoryCluster(clock=clock, history=1)
    cluster.load([node(i) for i in range(nodes)])
    cluster.load([nodemetric(i, rng) for i in range(nodes)])
    cluster.load(running)
    cluster.load(extra)
    return cluster, clock


def bench_scheduler(cluster: MemoryCluster, clock: FakeClock, percentage: int) -> TimedScheduler:
    """The scheduler under test: the default conf, write-back on, the daemon's collector pacing."""
    # as the daemon runs it: what outlives a session frozen, one full collection per ten minutes
    sched = TimedScheduler(cluster, default_conf(), clock=clock, write_back=True,
                           node_sampling=NodeSampling(percentage=percentage), gc_pacing=CollectorPacing())
    sched.start()   # informers list and parse what exists before the clock starts, as scheduler_perf warms up
    return sched


def drain(sched: Scheduler, total: int, max_sessions: int = 50) -> tuple[int, int]:
    """Sessions until ``total`` pods are bound or one binds nothing: (pods bound, sessions)."""
    bound = sessions = 0
    while bound < total and sessions < max_sessions:
        res = sched.run_once()
        sessions += 1
        got = sum(1 for v in res.placements.values() if v)
        bound += got
        if got == 0:
            break
    return bound, sessions


def _figures(bound: int, total: int, sessions: int, wall: float, cpu: float, t0: float,
             bind_times: list[float]) -> dict[str, float]:
    gaps = np.diff(np.array([t0, *bind_times]))
    return {"bound": bound, "total": total, "sessions": sessions, "wall_seconds": wall, "cpu_seconds": cpu,
            "pods_per_second": bound / wall if wall else 0.0,
            "pods_per_cpu_second": bound / cpu if cpu else 0.0,
            "p50_ms": float(np.percentile(gaps, 50) * 1000) if gaps.size else 0.0,
            "p99_ms": float(np.percentile(gaps, 99) * 1000) if gaps.size else 0.0}


def _startup_session(sched: Scheduler) -> dict[str, float]:
    """The scheduler's first session, before any pending pod exists (it derives every node): CPU and wall ms."""
    t0, c0 = time.perf_counter(), time.process_time()
    sched.run_once()
    return {"startup_session_cpu_ms": (time.process_time() - c0) * 1000,
            "startup_session_wall_ms": (time.perf_counter() - t0) * 1000}


# --callgrind: this process runs under valgrind's callgrind with its instrumentation off at the start
_CALLGRIND = {"on": False}


def _instrument(on: bool) -> None:
    """Switch callgrind's instrumentation of this process on or off (with ``--callgrind``): valgrind then counts
    the instructions of the timed region only, a figure the load of other work on the machine does not move."""
    if _CALLGRIND["on"]:
        subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(os.getpid())], check=True,
                       capture_output=True)


def throughput(nodes: int, running: list[Pod], pending: list[Pod], percentage: int,
               extra: Iterable[dict[str, Any]] = ()) -> dict[str, float]:
    """After a start-up session (measured apart), create ``pending``, then sessions until they are bound: timed."""
    cluster, clock = bench_cluster(nodes, running, extra)
    sched = bench_scheduler(cluster, clock, percentage)
    startup = _startup_session(sched)
    clock.advance(1)   # the next session a second later, as the daemon runs them
    _instrument(True)
    t0, c0 = time.perf_counter(), time.process_time()
    cluster.load(pending)
    bound, sessions = drain(sched, len(pending))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    _instrument(False)
    return {**_figures(bound, len(pending), sessions, wall, cpu, t0, sched.bind_times), **startup}


def steady(nodes: int, bound_pods: int, size: Size, percentage: int) -> dict[str, float]:
    """Idle-session CPU at ``bound_pods`` pods bound, then batches of 100 arriving pods, one session each."""
    rng = np.random.default_rng(2)
    cluster, clock = bench_cluster(nodes, shaped_pods("bound", bound_pods, rng, nodes))
    sched = bench_scheduler(cluster, clock, percentage)
    startup = _startup_session(sched)   # it derives everything; the idle ones after it have nothing new
    idle_cpu, idle_wall = [], []
    for _ in range(size.idle_sessions):
        clock.advance(1)   # one session per second, as the daemon runs them
        t0, c0 = time.perf_counter(), time.process_time()
        sched.run_once()
        idle_wall.append(time.perf_counter() - t0)
        idle_cpu.append(time.process_time() - c0)
    # nothing pending, but the NodeMetrics of a minute's reports (every node once a minute) arrive each second
    churn_cpu = []
    per_second = nodes // 60
    for s in range(size.idle_sessions):
        clock.advance(1)
        c0 = time.process_time()
        for i in range(s * per_second, (s + 1) * per_second):
            cluster.replace("NodeMetric", nodemetric(i % nodes, rng, clock.now()))
        sched.run_once()
        churn_cpu.append(time.process_time() - c0)
    batches = [shaped_pods(f"batch{b}", 100, rng) for b in range(size.batches)]
    bound = sessions = 0
    _instrument(True)
    t0, c0 = time.perf_counter(), time.process_time()
    for batch in batches:
        clock.advance(1)
        cluster.load(batch)
        sched.run_once()
        sessions += 1
    bound = sum(1 for k, _ in cluster.bindings if k.startswith("bench/batch"))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    _instrument(False)
    out = _figures(bound, 100 * size.batches, sessions, wall, cpu, t0, sched.bind_times)
    out["idle_session_cpu_ms"] = statistics.median(idle_cpu) * 1000
    out["idle_session_wall_ms"] = statistics.median(idle_wall) * 1000
    out["metrics_only_session_cpu_ms"] = statistics.median(churn_cpu) * 1000
    return {**out, **startup}


def gangs(nodes: int, count: int, size: int, percentage: int) -> dict[str, float]:
    groups, members = [], []
    for g in range(count):
        groups.append({"apiVersion": "scheduling.loadwise.io/v1alpha1", "kind": "PodGroup",
                       "metadata": {"name": f"gang-{g}", "namespace": "bench", "uid": f"pg-{g}",
                                    "creationTimestamp": to_rfc3339(T0)},
                       "spec": {"minMember": size, "queue": "default"}, "status": {"phase": "Pending"}})
        members += [pod(f"gang-{g}-{k}", group=f"gang-{g}") for k in range(size)]
    return throughput(nodes, [], members, percentage, extra=groups)


def run_shape(shape: str, quick: bool, percentage: int) -> dict[str, float]:
    """One shape in this process, with its peak RSS."""
    size = QUICK if quick else FULL
    rng = np.random.default_rng(3)
    makers: dict[str, tuple[int, PodMaker]] = {"basic": (5000, basic_pods), "shapes20": (5000, shaped_pods),
                                               "mixed": (5000, mixed_pods), "basic10k": (10_000, basic_pods)}
    if shape in makers:
        nodes, make = makers[shape]
        out = throughput(nodes, make("running", 1000, rng, nodes), make("pending", size.pods, rng, 0), percentage)
    elif shape == "steady":
        out = steady(5000, 11_000, size, percentage)
    elif shape == "gangs":
        out = gangs(1000, size.pods // 8 if quick else 1000, 8, percentage)
    else:
        raise SystemExit(f"--shape: unknown shape {shape!r} (one of {', '.join(ALL_SHAPES)})")
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


ALL_SHAPES = ("basic", "shapes20", "mixed", "steady", "basic10k", "gangs")


def _child(shape: str, quick: bool, percentage: int) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--in-process", "--shape", shape, "--percentage-nodes-to-find",
           str(percentage), *(["--quick"] if quick else [])]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    figures: dict[str, float] = json.loads(done.stdout)[shape]
    return figures


def _median(runs: list[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    out["runs"] = len(runs)
    return out


def _print(shape: str, r: dict[str, Any]) -> None:
    print(f"{shape}: bound {r['bound']:.0f}/{r['total']:.0f} over {r['sessions']:.0f} session(s)")
    print(f"  wall {r['wall_seconds']:.2f} s, CPU {r['cpu_seconds']:.2f} s; {r['pods_per_second']:.0f} pods/s, "
          f"{r['pods_per_cpu_second']:.0f} pods per CPU-second ({r['pods_per_cpu_second'] / KUBE_CI_THRESHOLD:.2f}"
          f" x kube's 680 floor)")
    print(f"  per pod p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms; peak RSS {r['peak_rss_mib']:.0f} MiB")
    print(f"  start-up session (not timed above): CPU {r['startup_session_cpu_ms']:.0f} ms, "
          f"wall {r['startup_session_wall_ms']:.0f} ms")
    if "idle_session_cpu_ms" in r:
        print(f"  idle session: CPU {r['idle_session_cpu_ms']:.1f} ms, wall {r['idle_session_wall_ms']:.1f} ms; "
              f"with a second's NodeMetric reports ({5000 // 60} of them, ingestion included): CPU "
              f"{r['metrics_only_session_cpu_ms']:.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", action="append", choices=ALL_SHAPES,
                    help="run only this shape (repeatable; default: all)")
    ap.add_argument("--quick", action="store_true", help="2000 pending pods per shape and 5 batches of 100")
    ap.add_argument("--repeat", type=int, default=1, help="runs per shape; the median of each figure is reported")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--percentage-nodes-to-find", type=int, default=100, help="0: Volcano's adaptive default")
    ap.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--callgrind", action="store_true",
                    help="run in this process under `valgrind --tool=callgrind --instr-atstart=no`, instrumenting "
                         "only the timed region of the basic, shapes20, mixed, basic10k and steady shapes (steady: "
                         "its batches' sessions; valgrind prints its instruction count)")
    args = ap.parse_args()
    _CALLGRIND["on"] = args.callgrind
    if args.repeat < 1:
        raise SystemExit(f"--repeat must be at least 1, not {args.repeat}")
    shapes = args.shape or list(ALL_SHAPES)
    pct = args.percentage_nodes_to_find
    if args.in_process or args.callgrind:
        print(json.dumps({s: run_shape(s, args.quick, pct) for s in shapes}))
        return
    results = {s: _median([_child(s, args.quick, pct) for _ in range(args.repeat)]) for s in shapes}
    if args.json:
        print(json.dumps({"quick": args.quick, "percentage_nodes_to_find": pct, "shapes": results}, indent=2))
        return
    print(f"default conf + loadaware; {'quick' if args.quick else 'full'} sizes; median of {args.repeat} run(s)")
    for s, r in results.items():
        _print(s, r)


if __name__ == "__main__":
    main()
