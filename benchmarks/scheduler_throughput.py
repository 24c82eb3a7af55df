"""Scheduler throughput on kube-scheduler's scheduler_perf ``SchedulingBasic/5000Nodes_10000Pods`` shape.

5000 nodes of 4 CPU / 32Gi / 110 pods, 1000 pods already running, then 10,000 pending pods of 100m / 500Mi,
in-process on the memory backend, with the default conf (which includes ``loadaware``) and a fresh NodeMetric on
every node.  kube-scheduler's CI fails below 680 pods/s on this shape.  Prints pods/s, p50/p99 per-pod scheduling
cost and the ratio to 680; then 1000 nodes with 1000 gangs of 8.  Every node is checked for every pod, as the
scheduler does by default; ``--percentage-nodes-to-find 0`` stops each search as Volcano's adaptive default does
(10% of 5000 nodes).

Usage: python benchmarks/scheduler_throughput.py [--nodes N] [--pods N] [--running N] [--gangs N]
       [--percentage-nodes-to-find P]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from common.clock import FakeClock, to_rfc3339
from common.cluster.memory import MemoryCluster
from scheduler.conf import default_conf
from scheduler.engine import Scheduler
from scheduler.framework.api import TaskInfo
from scheduler.framework.sampling import NodeSampling

KUBE_CI_THRESHOLD = 680.0
T0 = 1_700_000_000.0


def node(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "labels": {"kubernetes.io/hostname": name,
                                                                       "topology.kubernetes.io/zone": f"z{i % 3}"}},
            "spec": {}, "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                                   "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                                   "conditions": [{"type": "Ready", "status": "True"}]}}


def nodemetric(i: int, rng: np.random.Generator) -> dict[str, Any]:
    cpu = int(rng.integers(100, 1500))
    mem = int(rng.integers(1, 8)) * 1024 ** 3
    return {"apiVersion": "slo.loadwise.io/v1alpha1", "kind": "NodeMetric", "metadata": {"name": f"node-{i:05d}"},
            "spec": {"metricCollectPolicy": {"aggregateDurationSeconds": 300, "reportIntervalSeconds": 60}},
            "status": {"updateTime": to_rfc3339(T0),
                       "nodeMetric": {"nodeUsage": {"resources": {"cpu": f"{cpu}m", "memory": str(mem)}}}}}


def pod(name: str, *, node_name: str = "", group: str = "", cpu: str = "100m", memory: str = "500Mi"
        ) -> dict[str, Any]:
    ann = {"scheduling.loadwise.io/group-name": group} if group else {}
    spec: dict[str, Any] = {"schedulerName": "loadwise-scheduler",
                            "containers": [{"name": "c", "image": "pause",
                                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "bench", "uid": f"uid-{name}", "annotations": ann,
                         "creationTimestamp": to_rfc3339(T0)},
            "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


class TimedScheduler(Scheduler):
    """Records the wall time between consecutive binds: the per-pod scheduling cost inside a session."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.bind_times: list[float] = []
        original = self.binder.bind

        def bind(task: TaskInfo, node: str) -> bool:
            ok = original(task, node)
            self.bind_times.append(time.perf_counter())
            return ok
        self.binder.bind = bind  # type: ignore[method-assign]


def run(nodes: int, pods: int, running: int, gangs: int, gang_size: int, percentage: int = 100
        ) -> dict[str, float]:
    rng = np.random.default_rng(1)
    clock = FakeClock(T0 + 30)
    cluster = MemoryCluster(clock=clock)
    objs: list[dict[str, Any]] = [node(i) for i in range(nodes)]
    objs += [nodemetric(i, rng) for i in range(nodes)]
    objs += [pod(f"running-{j}", node_name=f"node-{j % nodes:05d}") for j in range(running)]
    if gangs:
        for g in range(gangs):
            objs.append({"apiVersion": "scheduling.loadwise.io/v1alpha1", "kind": "PodGroup",
                         "metadata": {"name": f"gang-{g}", "namespace": "bench", "uid": f"pg-{g}",
                                      "creationTimestamp": to_rfc3339(T0)},
                         "spec": {"minMember": gang_size, "queue": "default"}, "status": {"phase": "Pending"}})
            objs += [pod(f"gang-{g}-{k}", group=f"gang-{g}") for k in range(gang_size)]
    else:
        objs += [pod(f"pending-{j}") for j in range(pods)]
    cluster.load(objs)
    sched = TimedScheduler(cluster, default_conf(), clock=clock, write_back=False,
                           node_sampling=NodeSampling(percentage=percentage))
    sched.start()   # informers list and parse everything before the clock starts, as scheduler_perf warms up
    total = pods if not gangs else gangs * gang_size
    bound = 0
    t0 = time.perf_counter()
    sessions = 0
    while bound < total and sessions < 20:
        res = sched.run_once()
        sessions += 1
        got = sum(1 for v in res.placements.values() if v)
        bound += got
        if got == 0:
            break
    elapsed = time.perf_counter() - t0
    gaps = np.diff(np.array([t0, *sched.bind_times]))
    return {"bound": bound, "total": total, "seconds": elapsed, "sessions": sessions,
            "pods_per_second": bound / elapsed if elapsed else 0.0,
            "p50_ms": float(np.percentile(gaps, 50) * 1000) if gaps.size else 0.0,
            "p99_ms": float(np.percentile(gaps, 99) * 1000) if gaps.size else 0.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--running", type=int, default=1000)
    ap.add_argument("--gang-nodes", type=int, default=1000)
    ap.add_argument("--gangs", type=int, default=1000)
    ap.add_argument("--skip-gangs", action="store_true")
    ap.add_argument("--percentage-nodes-to-find", type=int, default=100, help="0: Volcano's adaptive default")
    args = ap.parse_args()
    pct = args.percentage_nodes_to_find
    r = run(args.nodes, args.pods, args.running, 0, 0, pct)
    print(f"SchedulingBasic {args.nodes} nodes, {args.running} running, {args.pods} pending (default conf + loadaware)")
    print(f"  feasible nodes searched for per pod: {NodeSampling(percentage=pct).nodes_to_find(args.nodes)}")
    print(f"  bound {r['bound']}/{r['total']} in {r['seconds']:.2f} s over {r['sessions']} session(s)")
    print(f"  throughput {r['pods_per_second']:.0f} pods/s; per-pod p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms")
    print(f"  ratio to kube-scheduler CI threshold (680 pods/s): {r['pods_per_second'] / KUBE_CI_THRESHOLD:.2f}")
    if not args.skip_gangs:
        g = run(args.gang_nodes, 0, 0, args.gangs, 8, pct)
        print(f"Gangs {args.gang_nodes} nodes, {args.gangs} gangs of 8")
        print(f"  bound {g['bound']}/{g['total']} in {g['seconds']:.2f} s over {g['sessions']} session(s)")
        print(f"  throughput {g['pods_per_second']:.0f} pods/s; per-pod p50 {g['p50_ms']:.2f} ms, "
              f"p99 {g['p99_ms']:.2f} ms")


if __name__ == "__main__":
    main()
