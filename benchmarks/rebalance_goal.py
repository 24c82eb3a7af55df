"""Issue #24's goal, measured: `loadaware-rebalance` against `loadaware-waterline`, a whole day per case.

    python benchmarks/rebalance_goal.py [--json]                  # 40 nodes seeds 1-5, and 100 nodes seed 1
    python benchmarks/rebalance_goal.py --cases 40:1,40:2         # only some cases (NODES:SEED, comma-separated)

Per case both policies run on the same workload, side by side in worker processes.  Goal: fewer hotspot
node-minutes than `loadaware-waterline` on every case (target: 30% fewer on the mean), rebalancer evictions under
1% of the submitted pods, no eviction without a proven destination, no workload pod moved twice within an hour,
and no more pods pending at the end than `loadaware-waterline`.  Also printed: the work the moves cost (run time of
moved batch pods, which restart) and where the replacements landed.

CPU time (of each run's worker process) is printed next to the cases; wall time depends on what else runs on the
machine.  A benchmark prints figures and says met / not met; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections.abc import Sequence
from typing import Any

from sim.compare import run_seeds
from sim.measures import Measures, measure, reduction
from sim.policies import load_policies
from sim.record import RunRecord
from sim.run import SimOptions
from sim.synthetic import SyntheticConfig, generate

BASE, REBALANCE = "loadaware-waterline", "loadaware-rebalance"
DEFAULT_CASES = "40:1,40:2,40:3,40:4,40:5,100:1"
TARGET_CUT_PERCENT = 30.0
MAX_EVICTION_PERCENT = 1.0


def _cases(text: str) -> list[tuple[int, int]]:
    out = []
    for part in text.split(","):
        nodes, sep, seed = part.strip().partition(":")
        if not sep or not nodes.isdigit() or not seed.isdigit():
            raise SystemExit(f"--cases: expected NODES:SEED entries, got {part!r}")
        out.append((int(nodes), int(seed)))
    return out


def _case(nodes: int, seeds: Sequence[int], hours: float, jobs: int) -> dict[int, list[RunRecord]]:
    workloads = {s: generate(SyntheticConfig(nodes=nodes, hours=hours, seed=s)) for s in seeds}
    return run_seeds(workloads, load_policies([BASE, REBALANCE]), SimOptions(hours=hours), jobs=jobs)


def _row(nodes: int, seed: int, base: Measures, reb: Measures, rec: RunRecord) -> dict[str, Any]:
    tally = rec.rebalance
    return {
        "nodes": nodes, "seed": seed,
        "hotspot_base": base.hotspot_node_minutes, "hotspot_rebalance": reb.hotspot_node_minutes,
        "cut_percent": reduction(base.hotspot_node_minutes, reb.hotspot_node_minutes),
        "evictions": reb.evictions_rebalancer, "submitted": reb.pods_submitted,
        "eviction_percent": round(100.0 * reb.evictions_rebalancer / reb.pods_submitted, 3) if reb.pods_submitted
        else 0.0,
        "other_evictions_base": base.evictions, "other_evictions_rebalance": reb.evictions - reb.evictions_rebalancer,
        "unproven": reb.rebalance_unproven, "moved_twice_within_hour": reb.rebalance_moved_twice_within_hour,
        "pending_base": base.pods_pending_end, "pending_rebalance": reb.pods_pending_end,
        "lost_pod_hours": reb.rebalance_lost_pod_hours,
        "landed": {k: tally.get(f"landed_{k}", 0) for k in ("on_destination", "on_source", "elsewhere")},
        "destination_checks": tally.get("destination_checks", 0),
        "cpu_seconds_base": base.cpu_seconds, "cpu_seconds_rebalance": reb.cpu_seconds,
    }


def _verdict(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    cuts = [r["cut_percent"] for r in rows if r["cut_percent"] is not None]
    mean_cut = round(sum(cuts) / len(cuts), 1) if cuts else None
    checks = {
        "fewer hotspots on every case": all(r["hotspot_rebalance"] < r["hotspot_base"] for r in rows),
        f"mean cut >= {TARGET_CUT_PERCENT:g}% (target)": mean_cut is not None and mean_cut >= TARGET_CUT_PERCENT,
        f"evictions < {MAX_EVICTION_PERCENT:g}% of pods on every case":
            all(r["eviction_percent"] < MAX_EVICTION_PERCENT for r in rows),
        "no eviction without a proven destination": all(r["unproven"] == 0 for r in rows),
        "no pod moved twice within an hour": all(r["moved_twice_within_hour"] == 0 for r in rows),
        "pending at end not above loadaware-waterline": all(r["pending_rebalance"] <= r["pending_base"] for r in rows),
    }
    return {"mean_cut_percent": mean_cut, "checks": checks}


def _print(rows: Sequence[dict[str, Any]], verdict: dict[str, Any], wall: float) -> None:
    print(f"{'case':<10} {'hotspot wl':>10} {'rebalance':>10} {'cut':>7} {'moves':>6} {'% pods':>7} "
          f"{'pending':>9} {'lost h':>7} {'landed d/s/e':>13} {'CPU s wl/rb':>13}")
    for r in rows:
        landed = "/".join(str(v) for v in r["landed"].values())
        cut = "n/a" if r["cut_percent"] is None else f"{-r['cut_percent']:+.1f}%"
        print(f"{r['nodes']:>3}n s{r['seed']:<4} {r['hotspot_base']:>10,.0f} {r['hotspot_rebalance']:>10,.0f} "
              f"{cut:>7} {r['evictions']:>6} {r['eviction_percent']:>6.2f}% "
              f"{r['pending_base']:>4}/{r['pending_rebalance']:<4} {r['lost_pod_hours']:>7.1f} {landed:>13} "
              f"{r['cpu_seconds_base']:>6.0f}/{r['cpu_seconds_rebalance']:<6.0f}")
    print(f"mean hotspot cut {verdict['mean_cut_percent']}%; wall time {wall:.0f} s")
    for name, ok in verdict["checks"].items():
        print(f"  {'met    ' if ok else 'NOT MET'} {name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=DEFAULT_CASES, help="NODES:SEED entries (default %(default)s)")
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2: the machine is shared)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    t0 = time.perf_counter()
    by_size: dict[int, list[int]] = {}
    for nodes, seed in _cases(args.cases):
        by_size.setdefault(nodes, []).append(seed)
    rows = []
    for nodes, seeds in by_size.items():
        for seed, (base, reb) in _case(nodes, seeds, args.hours, args.jobs).items():
            rows.append(_row(nodes, seed, measure(base), measure(reb), reb))
    verdict = _verdict(rows)
    wall = time.perf_counter() - t0
    if args.json:
        print(json.dumps({"cases": rows, **verdict, "wall_seconds": round(wall, 1)}, indent=2))
    else:
        _print(rows, verdict, wall)


if __name__ == "__main__":
    main()
