"""Where a simulated run's CPU time goes: per phase of the loop, per unit of work, extrapolated to a day.

    python benchmarks/sim_runtime.py [--nodes 100] [--hours 1] [--start-hour 13] [--policies requests,...]

Prints, for each policy run alone on one core: the CPU seconds spent creating/finishing pods, computing usage,
recording agent history, building + writing NodeMetrics (including the scheduler cache's watch handling),
ticking waterline engines, and in scheduling sessions; then the cost per unit (ms per session, µs per NodeMetric
report) and what a 24-hour run at this size would take.  CPU time, not wall time: what else runs on the machine
hardly changes it.  A benchmark prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import logging

from sim.policies import DEFAULT_COMPARE, load_policies
from sim.run import SimOptions, run
from sim.synthetic import SyntheticConfig, generate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--start-hour", type=float, default=13.0)
    ap.add_argument("--policies", default=",".join(DEFAULT_COMPARE))
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    start = args.start_hour * 3600.0
    day = generate(SyntheticConfig(nodes=args.nodes, hours=max(24.0, args.start_hour + args.hours), seed=args.seed))
    workload = day.window(start, start + args.hours * 3600.0)  # warm: as `loadwise sim --start-hour` runs it
    options = SimOptions(hours=args.hours, start_hour=args.start_hour, seed=args.seed)
    print(f"{workload.name}, from {args.start_hour:g}:00, {options.ticks} ticks of {options.tick_seconds:g} s")
    scale = 24.0 / args.hours
    for policy in load_policies(args.policies.split(",")):
        rec = run(workload, policy, options)
        phases = rec.phase_seconds
        sessions = max(1, rec.session_seconds.size)
        print(f"\n{policy.name}: {rec.cpu_seconds:.1f} s CPU ({rec.wall_seconds:.1f} s wall), "
              f"{int(rec.running.mean())} running pods on average")
        for name, secs in phases.items():
            print(f"  {name:<13} {secs:8.2f} s  {100 * secs / max(rec.cpu_seconds, 1e-9):5.1f}%")
        print(f"  per session        {1000 * phases['scheduler'] / sessions:8.1f} ms ({sessions} sessions)")
        if rec.reports:
            print(f"  per NodeMetric     {1e6 * phases['agent-report'] / rec.reports:8.0f} µs ({rec.reports} reports, "
                  f"{rec.reports_built} built: the others no session read)")
        if rec.waterline_ticks:
            print(f"  per waterline tick {1e6 * phases['waterline'] / rec.waterline_ticks:8.0f} µs "
                  f"({rec.waterline_ticks} node ticks)")
        print(f"  a 24 h run at this size: about {rec.cpu_seconds * scale / 60:.1f} min of CPU")


if __name__ == "__main__":
    main()
