"""The simulator's headline figures: the default comparison's wall time against its 60 s budget, and the goal's measures.

    python benchmarks/sim_goal.py             # the defaults of `loadwise sim` (100 nodes, a whole day, 60 s steps)
    python benchmarks/sim_goal.py --tick 30   # the same day in 30 s steps

Runs the three compared policies side by side in worker processes, as `loadwise sim` does, then prints the wall
time and its ratio to the 60 s budget, each policy's CPU time, and the goal: hotspot node-minutes of
`loadaware-waterline` against the `kube-default` baseline (at least 50% fewer), pods scheduled (at least as
many) and evictions per submitted pod (under 1%).  A benchmark prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import logging
import time

from loadwise.cmd_sim import DEFAULT_HOURS, DEFAULT_NODES, DEFAULT_START_HOUR, DEFAULT_TICK_SECONDS
from sim.compare import default_jobs, measure_all, run_all
from sim.measures import reduction
from sim.policies import BASELINE, DEFAULT_COMPARE, load_policies
from sim.run import SimOptions
from sim.synthetic import SyntheticConfig, generate

BUDGET_SECONDS = 60.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=DEFAULT_NODES)
    ap.add_argument("--hours", type=float, default=DEFAULT_HOURS)
    ap.add_argument("--start-hour", type=float, default=DEFAULT_START_HOUR)
    ap.add_argument("--tick", type=float, default=DEFAULT_TICK_SECONDS)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    hours, start = args.hours, args.start_hour
    logging.disable(logging.WARNING)
    policies = load_policies(list(DEFAULT_COMPARE))
    t0 = time.perf_counter()
    workload = generate(SyntheticConfig(nodes=args.nodes, hours=hours, seed=args.seed))
    options = SimOptions(hours=hours, start_hour=start, seed=args.seed, tick_seconds=args.tick)
    records = run_all(workload, policies, options, jobs=default_jobs(len(policies)))
    wall = time.perf_counter() - t0
    results = {m.policy: m for m in measure_all(records)}
    print(f"{workload.name}, from {start:g}:00 in {args.tick:g} s steps, {len(workload.pods):,d} pods")
    print(f"comparison wall time  {wall:6.1f} s  ({wall / BUDGET_SECONDS:.2f} × the {BUDGET_SECONDS:.0f} s budget)")
    for rec in records:
        print(f"  {rec.policy:<22} CPU {rec.cpu_seconds:6.1f} s")
    base, best = results[BASELINE], results["loadaware-waterline"]
    for m in results.values():
        cut = reduction(base.hotspot_node_minutes, m.hotspot_node_minutes)
        print(f"  {m.policy:<22} hotspot node-minutes {m.hotspot_node_minutes:9,.1f}"
              f"  ({'baseline' if m is base else 'n/a' if cut is None else f'{-cut:+.1f}%'})"
              f"  scheduled {m.pods_scheduled:,d}"
              f"  evictions/pod {m.eviction_rate_percent:.2f}%")
    cut = reduction(base.hotspot_node_minutes, best.hotspot_node_minutes)
    print(f"goal: hotspot cut {'n/a' if cut is None else f'{cut:.1f}%'} (≥ 50%), "
          f"scheduled {best.pods_scheduled - base.pods_scheduled:+d} (≥ 0), "
          f"evictions {best.eviction_rate_percent:.2f}% of pods (< 1%)")


if __name__ == "__main__":
    main()
