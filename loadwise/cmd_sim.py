"""``loadwise sim``: replay a workload against several scheduler confs and compare hot nodes, evictions, pods.

Every compared policy runs the real scheduler, agent and waterline code on a simulated clock against an
in-memory cluster (see ``sim``).  Output: a progress bar (stderr), a comparison table (stdout), ``--json`` for
machines, and ``--out DIR`` for ``report.html`` (self-contained, with plots) and ``results.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

from common.config import ConfigError
from loadwise.argtypes import non_negative_int, positive_float, positive_int

# Defaults sized to finish in under a minute on 2 idle cores: 100 nodes over a whole day from midnight (services
# peak around 14:00), in steps of a minute - the NodeMetric report interval, so each agent reports once a step.
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
                   help="simulated time (default %(default)s: a whole day, under a minute at 100 nodes on 2 cores)")
    w.add_argument("--seed", type=int, default=1, help="workload and usage-noise seed (default %(default)s)")
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
                        "%(default)s; 30 halves the step and about doubles the run time)")
    s.add_argument("--start-hour", type=float, default=DEFAULT_START_HOUR,
                   help="time of day the simulation starts at, 0-24 (default %(default)s; services peak at 14:00)")
    s.add_argument("--report-interval", type=positive_int, default=60,
                   help="NodeMetric reportIntervalSeconds (default 60)")
    s.add_argument("--jobs", type=non_negative_int, default=0, help="policies run in parallel processes (default 0: all at once)")
    o = parser.add_argument_group("output")
    o.add_argument("--out", type=Path, help="write report.html and results.json into this directory")
    o.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    o.add_argument("--no-progress", action="store_true", help="no progress bar")


def _workload(args: argparse.Namespace) -> Any:
    from sim.replay import default_trace_dir, resolve_sources, trace_workload
    from sim.synthetic import SyntheticConfig, generate

    # The workload is made for the whole day (or up to the run's end), then seen through the run's window: a run
    # from 11:00 starts where a run from midnight would be at 11:00 (warm start, ``Workload.window``).
    start, end = args.start_hour * 3600.0, (args.start_hour + args.hours) * 3600.0
    made_for = max(24.0, args.start_hour + args.hours)
    if not (args.trace or args.machine_usage or args.openb_nodes or args.openb_pods):
        return generate(SyntheticConfig(nodes=args.nodes, hours=made_for, seed=args.seed)).window(start, end), []
    trace_dir = args.trace_dir if args.trace_dir is not None else default_trace_dir()
    sources = resolve_sources(
        args.trace, trace_dir, machine_usage=args.machine_usage, openb_nodes=args.openb_nodes,
        openb_pods=args.openb_pods,
    )
    workload = trace_workload(sources, nodes=args.nodes, hours=made_for, seed=args.seed,
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


def run(args: argparse.Namespace) -> int:
    from sim.compare import default_jobs, measure_all, run_all, summary
    from sim.html import render_html
    from sim.measures import comparison, table
    from sim.policies import load_policies, parse_assignments
    from sim.run import SimOptions

    logging.getLogger("agent").setLevel(logging.ERROR)
    logging.getLogger("scheduler").setLevel(logging.ERROR)
    try:
        names = [n.strip() for n in args.compare.split(",") if n.strip()]
        if not names:
            raise ConfigError("name at least one policy", field="--compare")
        policies = load_policies(
            names, confs=parse_assignments(args.conf, "--conf"), waterlines=parse_assignments(args.waterline, "--waterline")
        )
        workload, cites = _workload(args)
        options = SimOptions(
            hours=args.hours, tick_seconds=args.tick, report_interval_seconds=args.report_interval, seed=args.seed,
            start_hour=args.start_hour,
        )
    except (ConfigError, ValueError) as exc:
        print(f"loadwise sim: {exc}", file=sys.stderr)
        return 2
    jobs = args.jobs if args.jobs > 0 else default_jobs(len(policies))
    total = options.ticks * len(policies)
    bar: Any = None
    if not args.no_progress:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="tick", desc=f"simulating {len(policies)} policies", file=sys.stderr,
                   dynamic_ncols=True)
    t0 = time.perf_counter()
    try:
        records = run_all(workload, policies, options, jobs=jobs, progress=bar.update if bar is not None else None)
    finally:
        if bar is not None:
            bar.close()
    elapsed = time.perf_counter() - t0
    results = measure_all(records)
    doc = summary(workload, options, policies, results, records=records,
                  extra={"wall_seconds": round(elapsed, 2), "jobs": jobs, "sources": cites})
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        settings = {**doc["options"], "jobs": jobs, "wall seconds": round(elapsed, 1)}
        page = render_html(records, results, title=f"loadwise sim — {workload.name}", workload_notes=workload.notes,
                           settings=settings, sources=cites)
        (args.out / "report.html").write_text(page, encoding="utf-8")
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    print(f"workload: {workload.name}")
    for note in workload.notes:
        print(f"  {note}")
    print()
    _print_table(table(results), sys.stdout)
    comp = comparison(results)
    if comp:
        print()
        for name, c in comp.items():
            red = c["hotspot_reduction_percent"]
            red_text = "n/a" if red is None else f"{red:.1f}% fewer"
            print(f"{name} vs {c['baseline']}: hotspot node-minutes {red_text}, "
                  f"{c['scheduled_difference']:+d} pods scheduled, {c['eviction_rate_percent']:.2f}% of pods evicted")
    print(f"\n{len(policies)} policies, {options.ticks} ticks each, {elapsed:.1f} s wall ({jobs} job(s))")
    if args.out is not None:
        print(f"report: {args.out / 'report.html'}")
    return 0
