"""Issue #24's goal, measured: `loadaware-rebalance` against `loadaware-waterline`, a whole day per case.

    python benchmarks/rebalance_goal.py [--json]                  # 40 nodes seeds 1-5, and 100 nodes seed 1
    python benchmarks/rebalance_goal.py --cases 40:1,40:2         # only some cases (NODES:SEED, comma-separated)

Per case both policies run on the same workload, side by side in worker processes.  Goal: fewer hotspot
node-minutes than `loadaware-waterline` on every case (target: 30% fewer on the mean), rebalancer evictions under
1% of the submitted pods, no eviction without a proven destination, no workload pod moved twice within an hour,
and no more pods pending at the end than `loadaware-waterline`.  Also printed: the work the moves cost (run time of
moved batch pods, which restart), where the replacements landed, and what held candidates back (per kind: the
limit or cool-down, ``too small``, ``no destination``).

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
from sim.rebalance import HELD, SKIPPED
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
        "skipped": {k.removeprefix(SKIPPED): int(v) for k, v in tally.items() if k.startswith(SKIPPED)},
        "rounds": int(tally.get("rounds", 0)),
        "rounds_held": {k.removeprefix(HELD): int(v) for k, v in tally.items() if k.startswith(HELD)},
        "cpu_seconds_base": base.cpu_seconds, "cpu_seconds_rebalance": reb.cpu_seconds,
    }


def _item(name: str, value: Any, target: str, met: bool) -> dict[str, Any]:
    return {"item": name, "value": value, "target": target, "met": met}


def _verdict(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The mean cut and the goal items, each with its value per case and its target."""
    cuts = [r["cut_percent"] for r in rows if r["cut_percent"] is not None]
    mean_cut = round(sum(cuts) / len(cuts), 1) if cuts else None

    def per_case(key: str | tuple[str, str]) -> dict[str, Any]:
        keys = (key,) if isinstance(key, str) else key
        return {f"{r['nodes']}:{r['seed']}": [r[k] for k in keys] if len(keys) > 1 else r[keys[0]] for r in rows}

    goal = [
        _item("hotspot node-minutes fewer than loadaware-waterline on every case",
              per_case(("hotspot_base", "hotspot_rebalance")), f"{REBALANCE} < {BASE}",
              all(r["hotspot_rebalance"] < r["hotspot_base"] for r in rows)),
        _item("hotspot cut on the mean of the cases, %", mean_cut, f">= {TARGET_CUT_PERCENT:g}",
              mean_cut is not None and mean_cut >= TARGET_CUT_PERCENT),
        _item("rebalancer evictions % of pods on every case", per_case("eviction_percent"),
              f"< {MAX_EVICTION_PERCENT:g}", all(r["eviction_percent"] < MAX_EVICTION_PERCENT for r in rows)),
        _item("evictions without a proven destination", sum(r["unproven"] for r in rows), "0",
              all(r["unproven"] == 0 for r in rows)),
        _item("pods moved twice within an hour", sum(r["moved_twice_within_hour"] for r in rows), "0",
              all(r["moved_twice_within_hour"] == 0 for r in rows)),
        _item("pods pending at the end", per_case(("pending_base", "pending_rebalance")), f"{REBALANCE} <= {BASE}",
              all(r["pending_rebalance"] <= r["pending_base"] for r in rows)),
    ]
    return {"mean_cut_percent": mean_cut, "goal": goal}


def print_table(doc: dict[str, Any]) -> None:
    """The cases of :func:`measure_goal`'s result, one line each, then the mean cut and the run's times."""
    rows = doc["cases"]
    print(f"{'case':<10} {'hotspot wl':>10} {'rebalance':>10} {'cut':>7} {'moves':>6} {'% pods':>7} "
          f"{'pending':>9} {'lost h':>7} {'landed d/s/e':>13} {'CPU s wl/rb':>13}")
    for r in rows:
        landed = "/".join(str(v) for v in r["landed"].values())
        cut = "n/a" if r["cut_percent"] is None else f"{-r['cut_percent']:+.1f}%"
        print(f"{r['nodes']:>3}n s{r['seed']:<4} {r['hotspot_base']:>10,.0f} {r['hotspot_rebalance']:>10,.0f} "
              f"{cut:>7} {r['evictions']:>6} {r['eviction_percent']:>6.2f}% "
              f"{r['pending_base']:>4}/{r['pending_rebalance']:<4} {r['lost_pod_hours']:>7.1f} {landed:>13} "
              f"{r['cpu_seconds_base']:>6.0f}/{r['cpu_seconds_rebalance']:<6.0f}")
    print(f"mean hotspot cut {doc['mean_cut_percent']}%; {doc['wall_seconds']:.0f} s wall, "
          f"{doc['cpu_seconds']:.0f} s CPU (summed over the runs)")


def measure_goal(cases: str = DEFAULT_CASES, hours: float = 24.0, jobs: int = 2) -> dict[str, Any]:
    """Run every case (``NODES:SEED`` entries) and return the rows, the verdict, wall and CPU seconds."""
    t0 = time.perf_counter()
    by_size: dict[int, list[int]] = {}
    for nodes, seed in _cases(cases):
        by_size.setdefault(nodes, []).append(seed)
    rows = []
    for nodes, seeds in by_size.items():
        for seed, (base, reb) in _case(nodes, seeds, hours, jobs).items():
            rows.append(_row(nodes, seed, measure(base), measure(reb), reb))
    cpu = sum(r["cpu_seconds_base"] + r["cpu_seconds_rebalance"] for r in rows)
    return {"cases": rows, **_verdict(rows), "wall_seconds": round(time.perf_counter() - t0, 1),
            "cpu_seconds": round(cpu, 1)}


def print_goal(doc: dict[str, Any]) -> None:
    """The table and the goal items of :func:`measure_goal`'s result, for people."""
    print_table(doc)
    for r in doc["cases"]:
        held = ", ".join(f"{k} {v:,}" for k, v in r["skipped"].items()) or "nothing"
        print(f"  {r['nodes']}n s{r['seed']}: {r['destination_checks']:,} destination checks; held back: {held}")
        stopped = ", ".join(f"{k} {v:,}" for k, v in r["rounds_held"].items()) or "none"
        print(f"    {r['rounds']:,} rounds; stopped before looking at pods: {stopped}")
    for item in doc["goal"]:
        print(f"  [{'met' if item['met'] else 'NOT met'}] {item['item']}: {item['value']} (target {item['target']})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=DEFAULT_CASES, help="NODES:SEED entries (default %(default)s)")
    ap.add_argument("--hours", type=float, default=24.0, help="simulated hours per case (default: a whole day)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2: the machine is shared)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    doc = measure_goal(args.cases, args.hours, args.jobs)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print_goal(doc)


if __name__ == "__main__":
    main()
