"""Time of one waterline tick (detect + rank + evict/throttle plan, dry-run) for a node with many pods.

Usage: .venv/bin/python benchmarks/waterline_plan.py [pods] [ticks]
Prints the mean and worst tick time; the agent ticks every 10 s, so anything in milliseconds is noise.
"""

from __future__ import annotations

import random
import sys
import time

from agent.qos.policy import PolicyStore
from agent.qos.runtime import WaterlineRuntime
from agent.qos.state import ContainerState, NodeState, PodState
from common.clock import FakeClock
from common.resources import Resources


def main() -> int:
    n_pods = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    ticks = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    rng = random.Random(1)
    be = {"scopeSelector": {"matchExpressions": [{"scopeName": "QOSClass", "operator": "In",
                                                  "values": ["BestEffort", "Burstable"]}]},
          "allowedActions": ["throttle", "eviction"]}
    store = PolicyStore()
    store.upsert({"kind": "WaterlinePolicy", "metadata": {"name": "bench"}, "spec": {
        "objectiveEnsurances": [
            {"name": "throttle", "metricRule": {"name": "cpu_total_usage", "value": "40000"},
             "action": {"name": "throttle", "throttle": {"cpuThrottle": {"minCPURatio": 10, "stepCPURatio": 10}}}},
            {"name": "evict", "metricRule": {"name": "memory_total_utilization", "value": "80"},
             "action": {"name": "eviction", "eviction": {}}},
        ],
        "podQOS": [be]}})
    pods = []
    for i in range(n_pods):
        qos = rng.choice(["BestEffort", "Burstable", "Guaranteed"])
        containers = tuple(ContainerState(f"c{j}", rng.randint(1, 800), rng.choice([-1, 100_000, 200_000]), 100_000)
                           for j in range(rng.randint(1, 3)))
        pods.append(PodState("bench", f"p{i}", f"u{i}", qos, rng.randint(0, 9000), "koord-batch",
                             1_000.0 + i, sum(c.cpu_usage_milli for c in containers), rng.randint(1, 4) << 30,
                             Resources(), Resources(), containers))
    clock = FakeClock(10_000.0)
    rt = WaterlineRuntime(None, "bench", clock, dry_run=True, policies=store)
    times = []
    for _ in range(ticks):
        state = NodeState("bench", clock.now(), 64_000, 512 << 30, 50_000 + rng.randint(-5000, 5000), None,
                          tuple(pods), {"memory_total_utilization": 85.0})
        t0 = time.perf_counter()
        report = rt.tick(state)
        times.append(time.perf_counter() - t0)
        clock.advance(10)
    mean = sum(times) / len(times)
    print(f"waterline tick over {n_pods} pods: mean {mean * 1000:.2f} ms, worst {max(times) * 1000:.2f} ms "
          f"({ticks} ticks; last tick {len(report.actions)} actions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
