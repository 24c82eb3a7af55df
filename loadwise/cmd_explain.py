"""``loadwise explain --snapshot F [--snapshot F ...] [--config F] [--now RFC3339] [-o text|json]``."""

from __future__ import annotations

import argparse
import json
import shutil
import sys

from common.clock import FakeClock, SystemClock, parse_rfc3339
from common.config import ConfigError, load_objects
from loadwise.output import add_output_flag
from scheduler.conf import default_conf, load_conf
from scheduler.explain import adopt_pods, explain, unready_nodes
from scheduler.explain_table import render_table
from scheduler.framework.snapshot import DEFAULT_SCHEDULER_NAME, Snapshot


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--snapshot", required=True, action="append", metavar="F",
                        help="objects to schedule on: a YAML/JSON List, a multi-document stream or several "
                             "`kubectl get -o yaml` outputs; repeat for several files; - reads stdin")
    parser.add_argument("--config", metavar="F",
                        help="scheduler conf (Volcano format); the built-in default when omitted")
    parser.add_argument("--now", metavar="RFC3339",
                        help="time the session runs at (NodeMetric freshness); default: now")
    parser.add_argument("--scheduler-name", default=DEFAULT_SCHEDULER_NAME, metavar="NAME",
                        help="explain the pods whose spec.schedulerName is NAME (default %(default)s); pending "
                             "pods of other schedulers are listed as not considered")
    parser.add_argument("--all-schedulers", action="store_true",
                        help="explain every pending pod, whatever its spec.schedulerName")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="tie-break seed (default %(default)s)")
    add_output_flag(parser, table=True)


def run(args: argparse.Namespace) -> int:
    try:
        conf = load_conf(args.config) if args.config else default_conf()
        objects = [obj for path in args.snapshot for obj in load_objects(path)]
        if args.all_schedulers:
            objects = adopt_pods(objects, args.scheduler_name)
        snapshot = Snapshot.from_objects(objects)
        clock = FakeClock(parse_rfc3339(args.now, field="--now")) if args.now else SystemClock()
    except (ConfigError, ValueError) as exc:
        print(f"loadwise explain: {exc}", file=sys.stderr)
        return 2
    report = explain(snapshot, conf, clock=clock, scheduler_name=args.scheduler_name, seed=args.seed,
                     notes=unready_nodes(objects))
    if args.output == "json":
        print(json.dumps(report, indent=2))
    else:
        print(render_table(report, width=shutil.get_terminal_size((100, 24)).columns))
    return 0
