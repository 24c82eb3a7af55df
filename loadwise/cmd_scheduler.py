"""``loadwise scheduler [--kubeconfig F] [--config F]``: the scheduler daemon with Lease leader election,
conf hot reload, and /metrics, /healthz, /readyz on one HTTP port (:mod:`scheduler.server`)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from common.clock import SystemClock
from common.cluster import Cluster
from common.config import ConfigError
from loadwise.argtypes import port, positive_float
from loadwise.flags import add_kubeconfig_flag, add_lease_flags, add_scheduler_name_flag, lease_config
from scheduler.conf import ConfHolder
from scheduler.engine import Scheduler
from scheduler.framework.sampling import DEFAULT_MINIMUM_NODES, DEFAULT_MINIMUM_PERCENTAGE, NodeSampling
from scheduler.gcpacing import CollectorPacing
from scheduler.leader import LeaderElector
from scheduler.server import BackgroundServer, make_app

log = logging.getLogger("loadwise.scheduler")
DEFAULT_PORT = 10259


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_kubeconfig_flag(parser)
    parser.add_argument("--memory", action="store_true", help="run against an empty embedded in-memory cluster")
    parser.add_argument("--config", metavar="F",
                        help="scheduler conf file (hot reloaded); the built-in default when omitted")
    add_scheduler_name_flag(parser, "schedule")
    parser.add_argument("--schedule-period", type=positive_float, default=1.0, metavar="SECONDS",
                        help="seconds from the start of one scheduling session to the next (default %(default)s)")
    parser.add_argument("--percentage-nodes-to-find", type=int, default=100,
                        help="stop a task's search for feasible nodes once this share of the nodes was found: 100 "
                             "checks every node (default); 0 or less: Volcano's adaptive 50 - nodes/125 percent")
    parser.add_argument("--minimum-feasible-nodes", type=int, default=DEFAULT_MINIMUM_NODES,
                        help="clusters up to this size are always searched whole, and a search never looks for "
                             "fewer (default %(default)s)")
    parser.add_argument("--minimum-percentage-nodes-to-find", type=int, default=DEFAULT_MINIMUM_PERCENTAGE,
                        help="the adaptive share's floor, percent (default %(default)s)")
    parser.add_argument("--listen", default="0.0.0.0", metavar="ADDRESS",
                        help="address for /metrics, /healthz, /readyz (default %(default)s)")
    parser.add_argument("--port", type=port, default=DEFAULT_PORT, metavar="N",
                        help="port for /metrics, /healthz, /readyz (default %(default)s)")
    add_lease_flags(parser, "loadwise-scheduler")


def run(args: argparse.Namespace) -> int:
    try:
        holder = ConfHolder(args.config)
        cluster: Cluster
        if args.memory:
            from common.cluster.memory import MemoryCluster

            cluster = MemoryCluster()
        else:
            from common.cluster.kube import load_cluster

            cluster = load_cluster(args.kubeconfig)
        sampling = NodeSampling(args.percentage_nodes_to_find, args.minimum_feasible_nodes,
                                args.minimum_percentage_nodes_to_find)
        lease = lease_config(args)
    except (ConfigError, ValueError) as exc:
        print(f"loadwise scheduler: {exc}", file=sys.stderr)
        return 2
    clock = SystemClock()
    sched = Scheduler(cluster, holder, clock=clock, scheduler_name=args.scheduler_name, node_sampling=sampling,
                      gc_pacing=CollectorPacing())
    stop = threading.Event()
    ready = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = BackgroundServer(make_app(sched, ready), args.listen, args.port)
    try:
        server.start()
    except OSError as exc:
        print(f"loadwise scheduler: cannot listen on {args.listen}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 2
    sched.start()
    ready.set()
    threads: list[threading.Thread] = []
    is_leader = lambda: True  # noqa: E731
    if args.leader_elect and not args.memory:
        elector = LeaderElector(cluster, clock, lease)
        threads.append(threading.Thread(target=elector.run, args=(stop,), name="leader", daemon=True))
        threads[-1].start()
        is_leader = elector.is_leader
    log.info("scheduling pods with schedulerName=%s, conf %s", args.scheduler_name, holder.conf.source)
    try:
        sched.run_forever(stop, period=args.schedule_period, is_leader=is_leader)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=5)
        sched.stop()
        server.stop()
    return 0
