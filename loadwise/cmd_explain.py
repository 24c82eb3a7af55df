"""``loadwise explain --snapshot F [--config F] [--now RFC3339] [-o json|table]``."""

from __future__ import annotations

import argparse
import json
import sys

from common.clock import FakeClock, SystemClock, parse_rfc3339
from common.config import ConfigError, load_objects
from scheduler.conf import default_conf, load_conf
from scheduler.explain import explain, render_table
from scheduler.framework.snapshot import DEFAULT_SCHEDULER_NAME, Snapshot


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--snapshot", required=True, help="YAML/JSON List or multi-document stream of objects")
    parser.add_argument("--config", help="scheduler conf (Volcano format); the built-in default when omitted")
    parser.add_argument("--now", help="RFC 3339 time the session runs at (NodeMetric freshness); default: now")
    parser.add_argument("--scheduler-name", default=DEFAULT_SCHEDULER_NAME)
    parser.add_argument("--seed", type=int, default=0, help="tie-break seed")
    parser.add_argument("-o", "--output", choices=("json", "table"), default="json")


def run(args: argparse.Namespace) -> int:
    try:
        conf = load_conf(args.config) if args.config else default_conf()
        snapshot = Snapshot.from_objects(load_objects(args.snapshot))
        clock = FakeClock(parse_rfc3339(args.now, field="--now")) if args.now else SystemClock()
    except (ConfigError, ValueError) as exc:
        print(f"loadwise explain: {exc}", file=sys.stderr)
        return 2
    report = explain(snapshot, conf, clock=clock, scheduler_name=args.scheduler_name, seed=args.seed)
    if args.output == "json":
        print(json.dumps(report, indent=2))
    else:
        print(render_table(report))
    return 0
