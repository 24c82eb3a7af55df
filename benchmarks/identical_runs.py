"""What allocate's runs of identical pods save: a throughput shape with the runs on and off, alternately.

Runs ``scheduler_throughput``'s shape (default ``basic``: kube's SchedulingBasic, 5000 nodes, identical pods) in a
process of its own per run, with allocate evaluating runs of identical pods only on the nodes each placement
changed (``on``) or every pod on every node (``off``), the two taking turns so that the machine's load weighs on
both alike.  Figures per mode (medians over the runs): the shape's pods per CPU-second and per second, and the CPU
and wall time inside the allocate action per pod (its evaluation, placements, binds and write-back calls).

Usage: python benchmarks/identical_runs.py [--shape basic|basic10k|shapes20|...] [--repeat N] [--full] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scheduler_throughput  # noqa: E402  (the benchmark next to this one)

from scheduler.actions.allocate import Allocate  # noqa: E402
from scheduler.framework.plugin import register_action  # noqa: E402
from scheduler.framework.session import Session  # noqa: E402

MODES = ("on", "off")
FIGURES = ("pods_per_cpu_second", "pods_per_second", "allocate_cpu_ms_per_pod", "allocate_wall_ms_per_pod")


class TimedAllocate(Allocate):
    """Allocate, adding up the CPU and wall time of its runs."""

    cpu = 0.0
    wall = 0.0

    def execute(self, ssn: Session) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        super().execute(ssn)
        TimedAllocate.wall += time.perf_counter() - t0
        TimedAllocate.cpu += time.process_time() - c0


def measure(shape: str, runs_on: bool, quick: bool) -> dict[str, float]:
    """One run of ``shape`` in this process with the runs on or off."""
    register_action("allocate")(lambda: TimedAllocate(identical_runs=runs_on))
    out = scheduler_throughput.run_shape(shape, quick, 100)
    bound = max(out["bound"], 1)
    return {"pods_per_cpu_second": out["pods_per_cpu_second"], "pods_per_second": out["pods_per_second"],
            "allocate_cpu_ms_per_pod": TimedAllocate.cpu * 1000 / bound,
            "allocate_wall_ms_per_pod": TimedAllocate.wall * 1000 / bound}


def _child(shape: str, mode: str, quick: bool) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--in-process", mode, "--shape", shape, *([] if quick else ["--full"])]
    done = subprocess.run(cmd, check=True, capture_output=True, text=True)
    got: dict[str, float] = json.loads(done.stdout)
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="basic", choices=[s for s in scheduler_throughput.ALL_SHAPES if s != "steady"])
    ap.add_argument("--repeat", type=int, default=3, help="runs per mode, taking turns (median reported)")
    ap.add_argument("--full", action="store_true", help="the shape's full size (default: its --quick size)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--in-process", choices=MODES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.repeat < 1:
        raise SystemExit("--repeat: must be at least 1")
    if args.in_process:
        print(json.dumps(measure(args.shape, args.in_process == "on", not args.full)))
        return
    runs: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    for _ in range(args.repeat):
        for mode in MODES:
            runs[mode].append(_child(args.shape, mode, not args.full))
    result: dict[str, Any] = {"shape": args.shape, "runs": args.repeat, **{
        mode: {k: statistics.median(r[k] for r in rs) for k in FIGURES} for mode, rs in runs.items()}}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for mode in MODES:
        r = result[mode]
        print(f"{args.shape}, identical runs {mode}: {r['pods_per_cpu_second']:.0f} pods per CPU-second, "
              f"{r['pods_per_second']:.0f} pods/s; allocate {r['allocate_cpu_ms_per_pod']:.3f} ms CPU, "
              f"{r['allocate_wall_ms_per_pod']:.3f} ms wall per pod (median of {args.repeat})")


if __name__ == "__main__":
    main()
