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
import os
import signal
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from common.clock import SystemClock
from common.cluster import Cluster
from common.config import ConfigError
from loadwise.argtypes import port, positive_float
from rebalancer.args import load_rebalance_args
from rebalancer.daemon import RebalancerDaemon
from rebalancer.plan import Rebalancer
from rebalancer.report import plan_json, render_plan
from scheduler.cache import SchedulerCache
from scheduler.conf import default_conf, load_conf
from scheduler.framework.snapshot import DEFAULT_SCHEDULER_NAME
from scheduler.leader import LeaderElector, LeaseConfig

log = logging.getLogger("loadwise.rebalancer")
DEFAULT_PORT = 10261
DEFAULT_LEASE = "loadwise-rebalancer"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="rebalancer arguments (LowNodeLoad names)")
    parser.add_argument("--scheduler-conf", help="the scheduler's conf file; the built-in default when omitted")
    parser.add_argument("--kubeconfig", help="kubeconfig file; in-cluster service account when omitted")
    parser.add_argument("--scheduler-name", default=DEFAULT_SCHEDULER_NAME)
    parser.add_argument("--dry-run", action="store_true", help="plan only: evict nothing, write nothing")
    parser.add_argument("--once", action="store_true", help="run one round, print the plan and exit")
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text", help="format of --once's plan")
    parser.add_argument("--listen", default="0.0.0.0", help="address for /metrics, /healthz, /readyz")
    parser.add_argument("--port", type=port, default=DEFAULT_PORT)
    parser.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--lease-name", default=DEFAULT_LEASE)
    parser.add_argument("--lease-namespace", default=os.environ.get("POD_NAMESPACE", "loadwise-system"))
    parser.add_argument("--identity", default=os.environ.get("POD_NAME") or socket.gethostname())
    parser.add_argument("--lease-duration", type=positive_float, default=15.0)
    parser.add_argument("--renew-deadline", type=positive_float, default=10.0)
    parser.add_argument("--retry-period", type=positive_float, default=2.0)


def _server(daemon: RebalancerDaemon, cache: SchedulerCache, listen: str, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            code, body, ctype = 200, b"ok", "text/plain"
            if self.path.startswith("/metrics"):
                body, ctype = generate_latest(daemon.metrics.registry), CONTENT_TYPE_LATEST
            elif self.path.startswith("/readyz") and not cache.has_synced():
                code, body = 503, b"not synced"
            elif not self.path.startswith(("/healthz", "/readyz")):
                code, body = 404, b"not found"
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer((listen, port), Handler)
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    return server


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
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        rb_args = load_rebalance_args(args.config)
        if args.dry_run:
            rb_args = dataclasses.replace(rb_args, dry_run=True)
        conf = load_conf(args.scheduler_conf) if args.scheduler_conf else default_conf()
        lease = LeaseConfig(name=args.lease_name, namespace=args.lease_namespace, identity=args.identity,
                            lease_duration=args.lease_duration, renew_deadline=args.renew_deadline,
                            retry_period=args.retry_period)
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
    try:
        server = _server(daemon, cache, args.listen, args.port)
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
        server.shutdown()
    return 0
