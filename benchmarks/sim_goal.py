"""The simulator's goal, measured: `loadaware-waterline` against `kube-default` over several seeds, and run times.

    python benchmarks/sim_goal.py [--json]            # both parts below (run it under the timing lock)
    python benchmarks/sim_goal.py --part seeds        # only the 5-seed comparison
    python benchmarks/sim_goal.py --part default      # only the default `loadwise sim` run, timed
    python benchmarks/sim_goal.py --part rebalance    # issue #24's rebalancing goal (not in "all": 12 simulated days)

* **seeds** — a whole day on 40 nodes for seeds 1-5, the three default policies on each seed's workload, all
  runs side by side in worker processes as `loadwise sim --seeds 1-5 --nodes 40` does.  Goal, for
  `loadaware-waterline` against `kube-default`: hotspot node-minutes at least 50% fewer on the mean of the seeds;
  `service_latency_inflation_p99` lower on every seed; `batch_stretch_p95` at most 5% above kube-default's on
  every seed; `pods_pending_end` no higher on every seed; evictions under 1% of pods on every seed; the 5-seed
  run under 3 minutes of wall time.
* **default** — `loadwise sim` with its defaults (100 nodes, a day, seed 1, three policies): under 60 s of wall
  time on 2 cores.
* **rebalance** — `loadaware-rebalance` against `loadaware-waterline`, the same measurement as
  `benchmarks/rebalance_goal.py` (whose function it calls): a whole day on 40 nodes seeds 1-5 and on 100 nodes
  seed 1; its goal items are listed there.

Wall time depends on what else runs on the machine; CPU time (summed over the worker processes) is printed next to
it, per policy and by phase of the simulated loop (where a budget has to be found).  A benchmark prints figures and
says met / not met; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections.abc import Sequence
from typing import Any

from rebalance_goal import measure_goal, print_table

from loadwise.cmd_sim import DEFAULT_HOURS, DEFAULT_NODES, DEFAULT_START_HOUR, DEFAULT_TICK_SECONDS
from sim.compare import default_jobs, measure_all, parse_seeds, run_seeds
from sim.measures import Measures, reduction
from sim.policies import BASELINE, DEFAULT_COMPARE, load_policies
from sim.run import SimOptions
from sim.synthetic import SyntheticConfig, generate

BEST = "loadaware-waterline"
DEFAULT_BUDGET_SECONDS = 60.0
SEEDS_BUDGET_SECONDS = 180.0
HOTSPOT_CUT_PERCENT = 50.0
STRETCH_MARGIN = 1.05
EVICTION_PERCENT = 1.0


def _timed_runs(nodes: int, seeds: Sequence[int]) -> tuple[dict[int, dict[str, Measures]], float, float,
                                                              dict[str, dict[str, float]]]:
    """Every default policy on each seed's whole-day workload: measures per seed and policy, wall s, CPU s, and
    each policy's seconds per phase of the loop (summed over the seeds)."""
    policies = load_policies(list(DEFAULT_COMPARE))
    t0 = time.perf_counter()
    workloads = {s: generate(SyntheticConfig(nodes=nodes, hours=DEFAULT_HOURS, seed=s)) for s in seeds}
    options = SimOptions(hours=DEFAULT_HOURS, start_hour=DEFAULT_START_HOUR, tick_seconds=DEFAULT_TICK_SECONDS,
                         seed=seeds[0])
    records = run_seeds(workloads, policies, options, jobs=default_jobs(len(policies) * len(seeds)))
    wall = time.perf_counter() - t0
    cpu = sum(r.cpu_seconds for recs in records.values() for r in recs)
    phases: dict[str, dict[str, float]] = {}
    for recs in records.values():
        for r in recs:
            mine = phases.setdefault(r.policy, {})
            for name, secs in r.phase_seconds.items():
                mine[name] = round(mine.get(name, 0.0) + secs, 1)
    return {s: {m.policy: m for m in measure_all(recs)} for s, recs in records.items()}, wall, cpu, phases


# What the README reports of the default run, per policy.
_HEADLINE = ("hotspot_node_minutes", "p99_cpu_percent", "pods_pending_end", "wait_max_seconds", "waited_percent",
             "eviction_rate_percent", "throttle_minutes", "cpu_demand_served_percent", "best_effort_cpu_served_percent",
             "service_latency_inflation_mean", "service_latency_inflation_p99", "batch_stretch_p50",
             "batch_stretch_p95", "best_effort_stretch_p95", "session_cpu_mean_ms")


def _item(name: str, value: Any, target: str, met: bool) -> dict[str, Any]:
    return {"item": name, "value": value, "target": target, "met": met}


def _seed_goal(runs: dict[int, dict[str, Measures]], wall: float, cpu: float,
               phases: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The figures of the seeds part and whether each goal item is met."""
    base = {s: r[BASELINE] for s, r in runs.items()}
    best = {s: r[BEST] for s, r in runs.items()}
    mean_base = sum(m.hotspot_node_minutes for m in base.values()) / len(runs)
    mean_best = sum(m.hotspot_node_minutes for m in best.values()) / len(runs)
    cut = reduction(mean_base, mean_best)
    per_seed = {
        s: {
            "hotspot_node_minutes": {BASELINE: base[s].hotspot_node_minutes, BEST: best[s].hotspot_node_minutes},
            "hotspot_cut_percent": reduction(base[s].hotspot_node_minutes, best[s].hotspot_node_minutes),
            "service_latency_inflation_p99": {BASELINE: base[s].service_latency_inflation_p99,
                                              BEST: best[s].service_latency_inflation_p99},
            "batch_stretch_p95": {BASELINE: base[s].batch_stretch_p95, BEST: best[s].batch_stretch_p95},
            "pods_pending_end": {BASELINE: base[s].pods_pending_end, BEST: best[s].pods_pending_end},
            "eviction_rate_percent": best[s].eviction_rate_percent,
            "wait_max_seconds": {BASELINE: base[s].wait_max_seconds, BEST: best[s].wait_max_seconds},
            "cpu_demand_served_percent": {BASELINE: base[s].cpu_demand_served_percent,
                                          BEST: best[s].cpu_demand_served_percent},
        }
        for s in runs
    }
    items = [
        _item("hotspot cut on the mean of the seeds, %", cut, f">= {HOTSPOT_CUT_PERCENT:g}",
              cut is not None and cut >= HOTSPOT_CUT_PERCENT),
        _item("service_latency_inflation_p99 lower on every seed",
              {s: [base[s].service_latency_inflation_p99, best[s].service_latency_inflation_p99] for s in runs},
              f"{BEST} < {BASELINE}",
              all(best[s].service_latency_inflation_p99 < base[s].service_latency_inflation_p99 for s in runs)),
        _item("batch_stretch_p95 at most 5% above kube-default's on every seed",
              {s: [base[s].batch_stretch_p95, best[s].batch_stretch_p95] for s in runs},
              f"{BEST} <= {STRETCH_MARGIN} x {BASELINE}",
              all(best[s].batch_stretch_p95 <= STRETCH_MARGIN * base[s].batch_stretch_p95 for s in runs)),
        _item("pods_pending_end no higher on every seed",
              {s: [base[s].pods_pending_end, best[s].pods_pending_end] for s in runs}, f"{BEST} <= {BASELINE}",
              all(best[s].pods_pending_end <= base[s].pods_pending_end for s in runs)),
        _item("evictions % of pods on every seed", {s: best[s].eviction_rate_percent for s in runs},
              f"< {EVICTION_PERCENT:g}", all(best[s].eviction_rate_percent < EVICTION_PERCENT for s in runs)),
        _item("5-seed run wall time, s", round(wall, 1), f"< {SEEDS_BUDGET_SECONDS:g}", wall < SEEDS_BUDGET_SECONDS),
    ]
    policies = next(iter(runs.values()))
    means = {p: {k: round(sum(getattr(r[p], k) for r in runs.values()) / len(runs), 3) for k in _HEADLINE}
             for p in policies}
    return {"mean_hotspot_node_minutes": {BASELINE: round(mean_base, 1), BEST: round(mean_best, 1)},
            "mean_by_policy": means, "per_seed": per_seed, "wall_seconds": round(wall, 1), "cpu_seconds": round(cpu, 1),
            "cpu_seconds_by_policy": {p: round(sum(r[p].cpu_seconds for r in runs.values()), 1) for p in policies},
            "phase_seconds_by_policy": phases, "goal": items}


def _default_goal(runs: dict[int, dict[str, Measures]], wall: float, cpu: float,
                  phases: dict[str, dict[str, float]]) -> dict[str, Any]:
    (only,) = runs.values()
    return {
        "wall_seconds": round(wall, 1), "cpu_seconds": round(cpu, 1),
        "cpu_seconds_by_policy": {p: m.cpu_seconds for p, m in only.items()},
        "phase_seconds_by_policy": phases,
        "measures": {p: {k: getattr(m, k) for k in _HEADLINE} for p, m in only.items()},
        "goal": [_item("default run wall time, s", round(wall, 1), f"< {DEFAULT_BUDGET_SECONDS:g}",
                       wall < DEFAULT_BUDGET_SECONDS)],
    }


def _print(doc: dict[str, Any]) -> None:
    seeds = doc.get("seeds")
    if seeds:
        cpu = ", ".join(f"{p} {c:.1f}" for p, c in seeds["cpu_seconds_by_policy"].items())
        print(f"seeds {', '.join(map(str, seeds['per_seed']))}: whole day, {doc['nodes']} nodes, "
              f"{seeds['wall_seconds']:.1f} s wall, {seeds['cpu_seconds']:.1f} s CPU ({cpu})")
        _print_phases(seeds["phase_seconds_by_policy"])
        for s, f in seeds["per_seed"].items():
            cut = f["hotspot_cut_percent"]
            print(f"  seed {s}: hotspot node-minutes {f['hotspot_node_minutes'][BASELINE]:,.0f} -> "
                  f"{f['hotspot_node_minutes'][BEST]:,.0f} ({'n/a' if cut is None else f'{-cut:+.1f}%'}), "
                  f"inflation p99 {f['service_latency_inflation_p99'][BASELINE]:.3f} -> "
                  f"{f['service_latency_inflation_p99'][BEST]:.3f}, stretch p95 {f['batch_stretch_p95'][BASELINE]:.3f}"
                  f" -> {f['batch_stretch_p95'][BEST]:.3f}, pending {f['pods_pending_end'][BASELINE]} -> "
                  f"{f['pods_pending_end'][BEST]}, evictions {f['eviction_rate_percent']:.2f}%")
    if "rebalance" in doc:
        print_table(doc["rebalance"])
    default = doc.get("default")
    if default:
        cpu = ", ".join(f"{p} {c:.1f}" for p, c in default["cpu_seconds_by_policy"].items())
        print(f"default run (100 nodes, a day, seed 1): {default['wall_seconds']:.1f} s wall, CPU {cpu} s")
        _print_phases(default["phase_seconds_by_policy"])
        for p, m in default["measures"].items():
            print(f"  {p:<22} " + ", ".join(f"{k} {v}" for k, v in m.items()))
    print("goal:")
    for item in doc["goal"]:
        print(f"  [{'met' if item['met'] else 'NOT met'}] {item['item']}: {item['value']} (target {item['target']})")


def _print_phases(phases: dict[str, dict[str, float]]) -> None:
    """Where each policy's CPU time went, by phase of the simulated loop."""
    for p, secs in phases.items():
        print(f"  {p:<22} CPU by phase, s: " + ", ".join(f"{k} {v:.1f}" for k, v in secs.items() if v))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("all", "seeds", "default", "rebalance"), default="all",
                    help="all: seeds and default; rebalance runs alone (default %(default)s)")
    ap.add_argument("--nodes", type=int, default=40, help="cluster size of the seeds part (default %(default)s)")
    ap.add_argument("--seeds", default="1-5", help="seeds of the seeds part (default %(default)s)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    doc: dict[str, Any] = {"baseline": BASELINE, "policy": BEST, "nodes": args.nodes, "goal": []}
    if args.part in ("all", "seeds"):
        doc["seeds"] = _seed_goal(*_timed_runs(args.nodes, parse_seeds(args.seeds)))
        doc["goal"] += doc["seeds"]["goal"]
    if args.part in ("all", "default"):
        doc["default"] = _default_goal(*_timed_runs(DEFAULT_NODES, [1]))
        doc["goal"] += doc["default"]["goal"]
    if args.part == "rebalance":
        doc["rebalance"] = measure_goal()
        doc["goal"] += doc["rebalance"]["goal"]
    doc["met"] = all(item["met"] for item in doc["goal"])
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        _print(doc)


if __name__ == "__main__":
    main()
