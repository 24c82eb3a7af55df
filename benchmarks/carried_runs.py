"""What carrying allocate's kept states from one session to the next saves in steady state.

``scheduler_throughput``'s steady shape (5000 nodes, 11,000 pods bound, batches of 100 pods of 20 shapes arriving,
one session each) with allocate's kept states per pod signature carried to the next session (``on``:
``SignatureRuns.carried``, each state recomputing the nodes changed since) or made anew in every session (``off``:
each signature's first pod of a session evaluated over every node), in processes of their own taking turns so that
the machine's load weighs on both alike.  Figures per mode (medians over the runs): CPU and wall milliseconds per
batch session after the first (the first one seeds every signature either way).  With ``--callgrind`` (one run of
the given mode, under ``valgrind --tool=callgrind --instr-atstart=no``) valgrind counts the instructions of those
sessions only, a figure other work on the machine does not move.

Usage: python benchmarks/carried_runs.py [--repeat N] [--batches N] [--json]
       valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/dev/null
           python benchmarks/carried_runs.py --callgrind on|off   (one command per mode)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scheduler_throughput as bench  # noqa: E402  (the benchmark next to this one)

from scheduler.framework.runs import SignatureRuns  # noqa: E402
from scheduler.framework.session import Session  # noqa: E402

MODES = ("on", "off")


def _anew(cls: type[SignatureRuns], ssn: Session) -> SignatureRuns:
    """Runs that carry nothing from the session before (the ``off`` mode)."""
    return cls(ssn)


def measure(carried: bool, batches: int) -> dict[str, float]:
    """CPU and wall ms of each batch session after the first (medians), in this process."""
    if not carried:
        SignatureRuns.carried = classmethod(_anew)  # type: ignore[method-assign, assignment]
    rng = np.random.default_rng(2)
    cluster, clock = bench.bench_cluster(5000, bench.shaped_pods("bound", 11_000, rng, 5000))
    sched = bench.bench_scheduler(cluster, clock, 100)
    sched.run_once()
    clock.advance(1)
    sched.run_once()
    pending = [bench.shaped_pods(f"batch{b}", 100, rng) for b in range(batches)]
    cpu: list[float] = []
    wall: list[float] = []
    for b, batch in enumerate(pending):
        clock.advance(1)
        cluster.load(batch)
        bench._instrument(b > 0)
        t0, c0 = time.perf_counter(), time.process_time()
        sched.run_once()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        bench._instrument(False)
    return {"session_cpu_ms": statistics.median(cpu[1:]) * 1000, "session_wall_ms": statistics.median(wall[1:]) * 1000}


def _child(mode: str, batches: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--in-process", mode, "--batches", str(batches)], check=True,
                         capture_output=True, text=True).stdout
    got: dict[str, float] = json.loads(out)
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per mode, taking turns (median reported)")
    ap.add_argument("--batches", type=int, default=6, help="batch sessions per run, the first not counted")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--callgrind", choices=MODES, help="one run of this mode in this process, for callgrind")
    ap.add_argument("--in-process", choices=MODES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.batches < 2:
        ap.error("--batches: at least 2 (the first batch session is not counted)")
    if args.callgrind or args.in_process:
        bench._CALLGRIND["on"] = bool(args.callgrind)
        print(json.dumps(measure((args.callgrind or args.in_process) == "on", args.batches)))
        return
    runs: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
    for _ in range(args.repeat):
        for mode in MODES:
            runs[mode].append(_child(mode, args.batches))
    out = {m: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for m, rs in runs.items()}
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"steady batch sessions after the first, medians of {args.repeat} run(s) per mode")
    for mode, r in out.items():
        print(f"  kept states carried {mode:>3}: {r['session_cpu_ms']:7.1f} ms CPU, {r['session_wall_ms']:7.1f} ms wall"
              " per session")


if __name__ == "__main__":
    main()
