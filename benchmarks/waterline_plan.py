"""Time of one waterline tick (detect + rank + evict/throttle plan, dry-run) for a node with many pods.

A synthetic node (seeded, so every run sees the same pods): each pod is BestEffort, Burstable or Guaranteed
with 1-3 containers, and every tick fires both a throttle rule (CPU usage) and an eviction rule (memory
utilisation), so each tick plans evictions and a throttle action per candidate pod.  Prints the mean and
worst wall time of a tick with its CPU time next to it (``time.process_time``: this process only), and the
last tick's actions (one per pod; a throttle lists each container's quota).  The agent ticks every 10 s.

Usage: .venv/bin/python benchmarks/waterline_plan.py [--pods 200] [--ticks 50] [--json]
       (time it under the shared lock: flock /tmp/loadwise-timing.lock ...)
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from typing import Any

from agent.qos.policy import PolicyStore
from agent.qos.runtime import TickReport, WaterlineRuntime
from agent.qos.state import ContainerState, NodeState, PodState
from common.clock import FakeClock
from common.resources import Resources

POLICY = {"kind": "WaterlinePolicy", "metadata": {"name": "bench"}, "spec": {
    "objectiveEnsurances": [
        {"name": "throttle", "metricRule": {"name": "cpu_total_usage", "value": "40000"},
         "action": {"name": "throttle", "throttle": {"cpuThrottle": {"minCPURatio": 10, "stepCPURatio": 10}}}},
        {"name": "evict", "metricRule": {"name": "memory_total_utilization", "value": "80"},
         "action": {"name": "eviction", "eviction": {}}},
    ],
    "podQOS": [{"scopeSelector": {"matchExpressions": [{"scopeName": "QOSClass", "operator": "In",
                                                        "values": ["BestEffort", "Burstable"]}]},
                "allowedActions": ["throttle", "eviction"]}]}}


def _pods(n: int, rng: random.Random) -> tuple[PodState, ...]:
    pods = []
    for i in range(n):
        qos = rng.choice(["BestEffort", "Burstable", "Guaranteed"])
        containers = tuple(ContainerState(f"c{j}", rng.randint(1, 800), rng.choice([-1, 100_000, 200_000]), 100_000)
                           for j in range(rng.randint(1, 3)))
        pods.append(PodState("bench", f"p{i}", f"u{i}", qos, rng.randint(0, 9000), "koord-batch",
                             1_000.0 + i, sum(c.cpu_usage_milli for c in containers), rng.randint(1, 4) << 30,
                             Resources(), Resources(), containers))
    return tuple(pods)


def measure(n_pods: int, ticks: int) -> dict[str, Any]:
    """Tick a dry-run engine ``ticks`` times over ``n_pods`` pods; per-tick wall and CPU seconds."""
    rng = random.Random(1)
    store = PolicyStore()
    store.upsert(POLICY)
    pods = _pods(n_pods, rng)
    clock = FakeClock(10_000.0)
    rt = WaterlineRuntime(None, "bench", clock, dry_run=True, policies=store)
    walls, cpus = [], []
    report: TickReport | None = None
    for _ in range(ticks):
        state = NodeState("bench", clock.now(), 64_000, 512 << 30, 50_000 + rng.randint(-5000, 5000), None,
                          pods, {"memory_total_utilization": 85.0})
        w0, c0 = time.perf_counter(), time.process_time()
        report = rt.tick(state)
        cpus.append(time.process_time() - c0)
        walls.append(time.perf_counter() - w0)
        clock.advance(10)
    actions = report.actions if report is not None else ()
    return {"pods": n_pods, "ticks": ticks,
            "wall_ms_mean": round(sum(walls) / len(walls) * 1000, 3), "wall_ms_worst": round(max(walls) * 1000, 3),
            "cpu_ms_mean": round(sum(cpus) / len(cpus) * 1000, 3), "cpu_ms_worst": round(max(cpus) * 1000, 3),
            "last_tick_actions": len(actions),
            "last_tick_throttled_containers": sum(len(a.containers) for a in actions)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=200, help="pods on the synthetic node (default 200)")
    parser.add_argument("--ticks", type=int, default=50, help="ticks to time (default 50)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    if args.pods < 1 or args.ticks < 1:
        parser.error("--pods and --ticks must be at least 1")
    r = measure(args.pods, args.ticks)
    if args.json:
        print(json.dumps(r))
        return 0
    print(f"waterline tick over {r['pods']} pods ({r['ticks']} ticks): wall mean {r['wall_ms_mean']:.2f} ms, "
          f"worst {r['wall_ms_worst']:.2f} ms; CPU mean {r['cpu_ms_mean']:.2f} ms, worst {r['cpu_ms_worst']:.2f} ms; "
          f"last tick {r['last_tick_actions']} actions ({r['last_tick_throttled_containers']} container quotas)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
