"""``loadwise rebalance-plan --snapshot F --config F [--scheduler-conf F] [--now T] [-o text|json]``: one
rebalancing round on a snapshot, offline, as ``explain`` runs one scheduling session.  Nothing is written.

A snapshot is one observation, so every hot node counts as confirmed (the anomaly condition needs a history the
snapshot does not have).  The time defaults to the newest NodeMetric's ``updateTime``, so that the snapshot's own
metrics are fresh.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from common.clock import parse_rfc3339
from common.config import ConfigError, load_objects
from loadwise.flags import add_scheduler_name_flag
from loadwise.output import add_output_flag
from rebalancer.args import load_rebalance_args
from rebalancer.plan import Rebalancer
from rebalancer.report import plan_json, render_plan
from scheduler.conf import default_conf, load_conf
from scheduler.framework.snapshot import Snapshot


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--snapshot", required=True, metavar="F",
                        help="objects to plan on: a YAML/JSON List or multi-document stream; - reads stdin")
    parser.add_argument("--config", required=True, help="rebalancer arguments (LowNodeLoad names)")
    parser.add_argument("--scheduler-conf", help="the scheduler's conf (Volcano format); the built-in default when "
                                                 "omitted")
    parser.add_argument("--now", help="RFC 3339 time of the round; default: the newest NodeMetric updateTime")
    add_scheduler_name_flag(parser, "rebalance")
    add_output_flag(parser)


def _now(snapshot: Snapshot, text: str | None) -> float:
    if text:
        return parse_rfc3339(text, field="--now")
    times = [m.update_time for m in snapshot.node_metrics.values() if m.update_time is not None]
    if not times:
        raise ValueError("--now: the snapshot has no NodeMetric with an updateTime; give the time of the round")
    return max(times)


def run(args: argparse.Namespace) -> int:
    try:
        rb_args = load_rebalance_args(args.config)
        conf = load_conf(args.scheduler_conf) if args.scheduler_conf else default_conf()
        snapshot = Snapshot.from_objects(load_objects(args.snapshot))
        now = _now(snapshot, args.now)
    except (ConfigError, ValueError) as exc:
        print(f"loadwise rebalance-plan: {exc}", file=sys.stderr)
        return 2
    one_look = dataclasses.replace(rb_args.anomaly_condition, consecutive_abnormalities=1)
    rebalancer = Rebalancer(dataclasses.replace(rb_args, anomaly_condition=one_look, paused=False), conf,
                            scheduler_name=args.scheduler_name)
    plan = rebalancer.plan(snapshot, now)
    print(json.dumps(plan_json(plan), indent=2) if args.output == "json" else render_plan(plan))
    return 0
