"""``loadwise rebalancer --config F [--scheduler-conf F] [--kubeconfig F] [--dry-run] [--once]``: the rebalancer
daemon with its own Lease leader election, and /metrics, /healthz, /readyz on one HTTP port.

It reads the cluster through the scheduler's informer cache and proves destinations with the scheduler's conf:
give it the same conf file the scheduler runs.  ``--once`` runs one round, prints the plan (``-o text|json``) and
exits; with ``--dry-run`` (or ``dryRun: true``) nothing is evicted or written.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import signal
import sys
import threading

from common.clock import SystemClock
from common.cluster import Cluster
from common.config import ConfigError
from loadwise.argtypes import port
from loadwise.flags import add_kubeconfig_flag, add_lease_flags, add_scheduler_name_flag, lease_config
from loadwise.output import add_output_flag
from rebalancer.args import load_rebalance_args
from rebalancer.daemon import RebalancerDaemon
from rebalancer.plan import Rebalancer
from rebalancer.report import plan_json, render_plan
from rebalancer.server import make_app
from scheduler.cache import SchedulerCache
from scheduler.conf import default_conf, load_conf
from scheduler.leader import LeaderElector, LeaseConfig
from scheduler.server import BackgroundServer

log = logging.getLogger("loadwise.rebalancer")
DEFAULT_PORT = 10261
DEFAULT_LEASE = "loadwise-rebalancer"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, metavar="F", help="rebalancer arguments (LowNodeLoad names)")
    parser.add_argument("--scheduler-conf", metavar="F",
                        help="the scheduler's conf file, for the destination proof; the built-in default when omitted")
    add_kubeconfig_flag(parser)
    add_scheduler_name_flag(parser, "rebalance")
    parser.add_argument("--dry-run", action="store_true", help="plan only: evict nothing, write nothing")
    parser.add_argument("--once", action="store_true", help="run one round, print the plan and exit")
    add_output_flag(parser)
    parser.add_argument("--listen", default="0.0.0.0", metavar="ADDRESS",
                        help="address for /metrics, /healthz, /readyz (default %(default)s)")
    parser.add_argument("--port", type=port, default=DEFAULT_PORT, metavar="N",
                        help="port for /metrics, /healthz, /readyz (default %(default)s)")
    add_lease_flags(parser, DEFAULT_LEASE)


def _loop(daemon: RebalancerDaemon, stop: threading.Event, period: float, elector: LeaderElector | None) -> None:
    """One round per ``period`` while this replica leads; a failing round is logged and the next starts afresh."""
    while not stop.is_set():
        leading = elector is None or elector.is_leader()
        daemon.metrics.is_leader.set(1 if leading else 0)
        if leading:
            try:
                result = daemon.run_once()
                for m in result.evicted:
                    log.info("moved %s from %s, expected on %s: %s", m.pod, m.source, m.destination, m.reason)
            except Exception:
                log.exception("rebalancing round failed")
        stop.wait(period)


def run(args: argparse.Namespace) -> int:
    try:
        rb_args = load_rebalance_args(args.config)
        if args.dry_run:
            rb_args = dataclasses.replace(rb_args, dry_run=True)
        conf = load_conf(args.scheduler_conf) if args.scheduler_conf else default_conf()
        lease = lease_config(args)
        from common.cluster.kube import load_cluster

        cluster: Cluster = load_cluster(args.kubeconfig)
    except (ConfigError, ValueError) as exc:
        print(f"loadwise rebalancer: {exc}", file=sys.stderr)
        return 2
    clock = SystemClock()
    cache = SchedulerCache(cluster, clock)
    daemon = RebalancerDaemon(cluster, Rebalancer(rb_args, conf, scheduler_name=args.scheduler_name), clock,
                              cache.snapshot)
    cache.start()
    if args.once:
        result = daemon.run_once()
        print(json.dumps(plan_json(result.plan), indent=2) if args.output == "json" else render_plan(result.plan))
        cache.stop()
        return 0
    return _serve(args, daemon, cache, cluster, lease)


def _serve(args: argparse.Namespace, daemon: RebalancerDaemon, cache: SchedulerCache, cluster: Cluster,
           lease: LeaseConfig) -> int:
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = BackgroundServer(make_app(daemon.metrics, cache), args.listen, args.port)
    try:
        server.start()
    except OSError as exc:
        print(f"loadwise rebalancer: cannot listen on {args.listen}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 2
    elector: LeaderElector | None = None
    threads: list[threading.Thread] = []
    if args.leader_elect:
        elector = LeaderElector(cluster, daemon.clock, lease)
        threads.append(threading.Thread(target=elector.run, args=(stop,), name="leader", daemon=True))
        threads[-1].start()
    log.info("rebalancing every %gs%s", daemon.rebalancer.args.interval_seconds,
             " (dry run)" if daemon.rebalancer.args.dry_run else "")
    try:
        _loop(daemon, stop, daemon.rebalancer.args.interval_seconds, elector)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=5)
        cache.stop()
        server.stop()
    return 0
