"""Throughput of the load-aware vector filter + score + reserve over many nodes (prints pods/s).

Usage: .venv/bin/python benchmarks/loadaware_vector.py [nodes] [pods]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from common.clock import to_rfc3339
from common.objects import NodeMetricView, PodView
from scheduler.loadaware.args import parse_loadaware_args
from scheduler.loadaware.cache import AssignedPodCache, assigned_pod
from scheduler.loadaware.estimator import estimate_pod, estimate_vector
from scheduler.loadaware.evaluate import LoadAwareState


def main() -> int:
    nodes = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    pods = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    rng = np.random.default_rng(1)
    args = parse_loadaware_args(None)
    names = [f"node-{i}" for i in range(nodes)]
    alloc = np.tile(np.array([[32000, 128 * 1024**3]], dtype=np.int64), (nodes, 1))
    metrics = {}
    for n in names:
        cpu, mem = int(rng.integers(0, 20000)), int(rng.integers(0, 100 * 1024**3))
        metrics[n] = NodeMetricView.parse({"metadata": {"name": n}, "status": {
            "updateTime": to_rfc3339(1000.0), "nodeMetric": {"nodeUsage": {"resources": {
                "cpu": f"{cpu}m", "memory": str(mem)}}}}})
    t0 = time.perf_counter()
    state = LoadAwareState(args, names, alloc, [{} for _ in names], metrics, AssignedPodCache(), 1010.0)
    t1 = time.perf_counter()
    pod = PodView.parse({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}})
    e = estimate_vector(estimate_pod(pod, args.estimated_scaling_factors), args.resource_names)
    t2 = time.perf_counter()
    for j in range(pods):
        res = state.filter(e, is_prod=True, is_daemonset=False)
        score = np.where(res.mask, state.score(e, is_prod=True), -1)
        best = int(np.argmax(score))
        p = PodView.parse({"metadata": {"name": f"p{j}", "namespace": "default"}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}})
        state.reserve(assigned_pod(p, names[best], 1010.0, args))
    t3 = time.perf_counter()
    print(f"nodes={nodes} session-open={t1 - t0:.3f}s pods={pods} "
          f"filter+score+reserve={pods / (t3 - t2):.0f} pods/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
