"""``loadwise sim``: replay a workload against several scheduler confs and compare hot nodes, evictions, pods.

Every compared policy runs the real scheduler, agent and waterline code on a simulated clock against an
in-memory cluster (see ``sim``).  Output: a progress bar (stderr), a comparison table (stdout), ``-o json`` for
machines, and ``--out DIR`` for ``report.html`` (self-contained, with plots) and ``results.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from common.config import ConfigError
from loadwise.argtypes import non_negative_int, positive_float, positive_int
from loadwise.output import add_output_flag

# Defaults: 100 nodes over a whole day from midnight (services peak around 14:00), in steps of a minute - the
# NodeMetric report interval, so each agent reports once a step (its run time: README, "Run time").
DEFAULT_NODES = 100
DEFAULT_HOURS = 24.0
DEFAULT_START_HOUR = 0.0
DEFAULT_TICK_SECONDS = 60.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("what to compare")
    g.add_argument("--compare", default="kube-default,loadaware,loadaware-waterline",
                   help="comma-separated policy names, the first being the baseline unless kube-default is "
                        "compared (default %(default)s; also built in: loadaware-waterline-capped, requests, binpack)")
    g.add_argument("--conf", action="append", default=[], metavar="NAME=PATH",
                   help="scheduler conf (Volcano format) for policy NAME; overrides a built-in of that name")
    g.add_argument("--waterline", action="append", default=[], metavar="NAME=PATH",
                   help="WaterlinePolicy objects the node agents run for policy NAME")
    w = parser.add_argument_group("workload")
    w.add_argument("--nodes", type=positive_int, default=DEFAULT_NODES, help="cluster size (default %(default)s)")
    w.add_argument("--hours", type=positive_float, default=DEFAULT_HOURS,
                   help="simulated time (default %(default)s: a whole day)")
    w.add_argument("--seed", type=int, default=1, help="workload and usage-noise seed (default %(default)s)")
    w.add_argument("--seeds", metavar="LIST",
                   help="several seeds, e.g. 1-5 or 1,3,7: every policy runs on each seed's workload and the table "
                        "gives each measure's mean [min - max] over them (overrides --seed)")
    w.add_argument("--trace", action="append", default=[], choices=("alibaba-v2018", "openb", "all"),
                   help="replay public traces instead of the synthetic workload (repeatable)")
    w.add_argument("--trace-dir", type=Path, help="where the traces live (default: ../shared/traces if present)")
    w.add_argument("--machine-usage", type=Path, help="a v2018-format machine_usage.csv (implies usage shapes)")
    w.add_argument("--openb-nodes", type=Path, help="an OpenB-format node list (with --openb-pods)")
    w.add_argument("--openb-pods", type=Path, help="an OpenB-format pod list (with --openb-nodes)")
    w.add_argument("--trace-load", type=positive_float, default=0.7,
                   help="OpenB replay: requests of the scarcest resource (CPU, memory or GPU) as a fraction of "
                        "allocatable (default %(default)s)")
    s = parser.add_argument_group("simulation")
    s.add_argument("--tick", type=positive_float, default=DEFAULT_TICK_SECONDS,
                   help="simulated seconds per step: usage sample, waterline check, scheduling session (default "
                        "%(default)s; 30 halves the step at a higher CPU cost, measured in the README)")
    s.add_argument("--start-hour", type=float, default=DEFAULT_START_HOUR,
                   help="time of day the simulation starts at, 0-24 (default %(default)s; services peak at 14:00)")
    s.add_argument("--report-interval", type=positive_int, default=60,
                   help="NodeMetric reportIntervalSeconds (default 60)")
    s.add_argument("--jobs", type=non_negative_int, default=0,
                   help="runs (policies x seeds) in parallel processes (default 0: up to twice the cores)")
    o = parser.add_argument_group("output")
    o.add_argument("--out", type=Path, help="write report.html and results.json into this directory")
    add_output_flag(parser, table=True)
    o.add_argument("--no-progress", action="store_true", help="no progress bar")


def _workload(args: argparse.Namespace, seed: int) -> Any:
    from sim.replay import default_trace_dir, resolve_sources, trace_workload
    from sim.synthetic import SyntheticConfig, generate

    # The workload is made for the whole day (or up to the run's end), then seen through the run's window: a run
    # from 11:00 starts where a run from midnight would be at 11:00 (warm start, ``Workload.window``).
    start, end = args.start_hour * 3600.0, (args.start_hour + args.hours) * 3600.0
    made_for = max(24.0, args.start_hour + args.hours)
    if not (args.trace or args.machine_usage or args.openb_nodes or args.openb_pods):
        return generate(SyntheticConfig(nodes=args.nodes, hours=made_for, seed=seed)).window(start, end), []
    trace_dir = args.trace_dir if args.trace_dir is not None else default_trace_dir()
    sources = resolve_sources(
        args.trace, trace_dir, machine_usage=args.machine_usage, openb_nodes=args.openb_nodes,
        openb_pods=args.openb_pods,
    )
    workload = trace_workload(sources, nodes=args.nodes, hours=made_for, seed=seed,
                              load=args.trace_load).window(start, end)
    cites = []
    if sources.machine_usage is not None:
        cites.append("Alibaba cluster-trace-v2018 machine usage (github.com/alibaba/clusterdata), "
                     f"file {sources.machine_usage}")
    if sources.openb:
        cites.append("Alibaba cluster-trace-gpu-v2023 / OpenB node and pod lists (github.com/alibaba/clusterdata), "
                     f"files {sources.openb_nodes}, {sources.openb_pods}")
    return workload, cites


def _print_table(rows: list[list[str]], out: Any) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for k, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        print("  ".join(cells), file=out)
        if k == 0:
            print("  ".join("-" * w for w in widths), file=out)


def _setup(args: argparse.Namespace) -> tuple[list[Any], dict[int, Any], list[str], Any]:
    """Policies, one workload per seed, the trace citations and the options; a bad value raises ConfigError or
    ValueError naming it."""
    from sim.compare import parse_seeds
    from sim.policies import load_policies, parse_assignments
    from sim.run import SimOptions

    names = [n.strip() for n in args.compare.split(",") if n.strip()]
    if not names:
        raise ConfigError("name at least one policy", field="--compare")
    policies = load_policies(
        names, confs=parse_assignments(args.conf, "--conf"), waterlines=parse_assignments(args.waterline, "--waterline")
    )
    seeds = parse_seeds(args.seeds) if args.seeds else [args.seed]
    options = SimOptions(
        hours=args.hours, tick_seconds=args.tick, report_interval_seconds=args.report_interval, seed=seeds[0],
        start_hour=args.start_hour,
    )
    made = {s: _workload(args, s) for s in seeds}
    return policies, {s: w for s, (w, _) in made.items()}, made[seeds[0]][1], options


def _simulate(args: argparse.Namespace, policies: list[Any], workloads: dict[int, Any], options: Any,
              jobs: int) -> dict[int, list[Any]]:
    """Every policy on every seed's workload, with a progress bar unless ``--no-progress``."""
    from sim.compare import run_seeds

    bar: Any = None
    if not args.no_progress:
        from tqdm import tqdm

        bar = tqdm(total=options.ticks * len(policies) * len(workloads), unit="tick",
                   desc=f"simulating {len(policies)} policies x {len(workloads)} seed(s)", file=sys.stderr,
                   dynamic_ncols=True)
    try:
        return run_seeds(workloads, policies, options, jobs=jobs, progress=bar.update if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()


def _document(workloads: dict[int, Any], options: Any, policies: list[Any], records: dict[int, list[Any]],
              results: dict[int, list[Any]], extra: dict[str, Any]) -> dict[str, Any]:
    """The ``-o json`` / results.json document: one seed's as ever plus ``summary``; for several seeds, the
    summary with every seed's document under ``runs``."""
    from dataclasses import replace

    from sim.compare import summary
    from sim.measures import DEFINITIONS, across_seeds

    stats = across_seeds(results)
    docs = {s: summary(workloads[s], replace(options, seed=s), policies, results[s], records=records[s])
            for s in workloads}
    if len(workloads) == 1:
        return {**next(iter(docs.values())), "summary": stats, **extra}
    return {"seeds": list(workloads), "summary": stats, "definitions": dict(DEFINITIONS),
            "runs": {str(s): d for s, d in docs.items()}, **extra}


def _print_comparisons(stats: dict[str, Any], out: Any) -> None:
    for name, c in stats["comparison"].items():
        cut = c["hotspot_reduction_percent"]
        if cut is None:
            text = "n/a"
        elif len(cut["by_seed"]) == 1:
            text = f"{cut['mean']:.1f}% fewer"
        else:
            text = f"{cut['mean']:.1f}% fewer on average ({cut['min']:.1f}% to {cut['max']:.1f}% over the seeds)"
        print(f"{name} vs {c['baseline']}: hotspot node-minutes {text}", file=out)


def run(args: argparse.Namespace) -> int:
    from sim.compare import default_jobs, measure_all
    from sim.measures import seed_table, table

    logging.getLogger("agent").setLevel(logging.ERROR)
    logging.getLogger("scheduler").setLevel(logging.ERROR)
    try:
        policies, workloads, cites, options = _setup(args)
    except (ConfigError, ValueError) as exc:
        print(f"loadwise sim: {exc}", file=sys.stderr)
        return 2
    jobs = args.jobs if args.jobs > 0 else default_jobs(len(policies) * len(workloads))
    t0 = time.perf_counter()
    records = _simulate(args, policies, workloads, options, jobs)
    elapsed = time.perf_counter() - t0
    results = {s: measure_all(r) for s, r in records.items()}
    doc = _document(workloads, options, policies, records, results,
                    {"wall_seconds": round(elapsed, 2), "jobs": jobs, "sources": cites})
    first = next(iter(workloads))
    if args.out is not None:
        from sim.html import render_html  # matplotlib: imported only when a report is written

        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        settings = {**asdict(options), "seeds": ",".join(map(str, workloads)), "jobs": jobs,
                    "wall seconds": round(elapsed, 1)}
        seeds_rows = seed_table(doc["summary"]) if len(workloads) > 1 else None
        page = render_html(records[first], results[first], title=f"loadwise sim — {workloads[first].name}",
                           workload_notes=workloads[first].notes, settings=settings, sources=cites,
                           seeds_rows=seeds_rows)
        (args.out / "report.html").write_text(page, encoding="utf-8")
    if args.output == "json":
        print(json.dumps(doc, indent=2))
        return 0
    print(f"workload: {workloads[first].name}" + (f" (and seeds {', '.join(map(str, list(workloads)[1:]))})"
                                                   if len(workloads) > 1 else ""))
    for note in workloads[first].notes:
        print(f"  {note}")
    print()
    _print_table(table(results[first]) if len(workloads) == 1 else seed_table(doc["summary"]), sys.stdout)
    print()
    _print_comparisons(doc["summary"], sys.stdout)
    runs = len(policies) * len(workloads)
    print(f"\n{runs} run(s) of {options.ticks} ticks each, {elapsed:.1f} s wall ({jobs} job(s))")
    if args.out is not None:
        print(f"report: {args.out / 'report.html'}")
    return 0
