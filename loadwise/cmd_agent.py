"""``loadwise agent``: the node agent daemon (collect, report NodeMetric, serve metrics, waterline).

``--standalone`` runs without a cluster on this machine's real cgroups and psutil, serving
``/metrics``, ``/healthz``, ``/readyz``, ``/nodemetric`` and ``/debug/state``; otherwise the agent
talks to the API server in-cluster or through ``--kubeconfig``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import signal
import socket
import sys
from dataclasses import replace

from prometheus_client import CollectorRegistry

from agent.collect.cgroups import CgroupLayout, CgroupReader, detect_layout
from agent.collect.collector import Collector, NodeSource
from agent.collect.procfs import ProcfsNodeSource, read_loadavg
from agent.collect.psi import NodePressureSource
from agent.collect.psutil_source import PsutilNodeSource
from agent.config import AgentConfig
from agent.daemon import Agent, run_agent
from agent.qos.policy import PolicyStore
from agent.qos.runtime import WaterlineRuntime
from common.clock import Clock, SystemClock
from common.cluster import Cluster
from common.config import ConfigError, load_objects
from loadwise.argtypes import port

__all__ = ["add_arguments", "run", "build_agent", "resolve_node_name"]

log = logging.getLogger("loadwise.agent")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--node", metavar="NAME", help="node name (default: config nodeName, $NODE_NAME, host name)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--kubeconfig", metavar="F",
                      help="kubeconfig file (default: $KUBECONFIG, then the pod's service account, then ~/.kube/config)")
    mode.add_argument("--standalone", action="store_true", help="run without a cluster on this machine's cgroups")
    parser.add_argument("--config", metavar="F", help="agent config file (YAML or JSON)")
    parser.add_argument("--port", type=port, metavar="N", help="HTTP port (overrides the config's port)")


def resolve_node_name(flag: str | None, config: AgentConfig) -> str:
    return flag or config.node_name or os.environ.get("NODE_NAME", "") or socket.gethostname()


def node_source(config: AgentConfig) -> NodeSource:
    """procfs when readable (koordlet's method), psutil otherwise."""
    procfs = ProcfsNodeSource(config.proc_root)
    if procfs.available():
        return procfs
    log.warning("%s/stat is not readable; node usage comes from psutil", config.proc_root)
    return PsutilNodeSource()


def cgroup_layout(config: AgentConfig) -> CgroupLayout | None:
    """The detected layout; ``None`` (node usage only) when nothing is mounted and nothing was forced."""
    try:
        return detect_layout(
            config.cgroup_root, version=config.cgroup_version, driver=config.cgroup_driver, parent=config.cgroup_parent
        )
    except FileNotFoundError as exc:
        if config.cgroup_version != "auto":
            raise ConfigError(str(exc), field="cgroupVersion", source=config.source or "defaults") from None
        log.warning("%s; collecting node usage only", exc)
        return None


def build_agent(
    config: AgentConfig,
    node_name: str,
    *,
    cluster: Cluster | None,
    clock: Clock | None = None,
    layout: CgroupLayout | None = None,
) -> Agent:
    """Wire collectors, the waterline runtime and the agent from a config (also used by tests)."""
    clock = clock or SystemClock()
    layout = layout if layout is not None else cgroup_layout(config)
    psi = NodePressureSource(config.proc_root)
    psi_on = config.pressure and psi.available()
    reader = (CgroupReader(layout, containers=config.collect_containers, pressure=psi_on)
              if layout is not None else None)
    collector = Collector(node_source(config), reader, clock, rate_ttl=config.rate_ttl_seconds,
                          pressure=psi if psi_on else None)
    registry = CollectorRegistry()
    runtime = None
    if config.waterline.enabled:
        policies = PolicyStore(cluster, clock)
        if config.waterline.policy_file:
            rejected = policies.replace_all(load_objects(config.waterline.policy_file))
            for r in rejected:
                raise ConfigError(r.text, field=f"waterline.policyFile ({r.policy})", source=config.source)
        if cluster is None:
            log.warning("standalone: the waterline engine runs dry (decisions are logged and counted with "
                        "dry_run=\"true\"; nothing is throttled, evicted or tainted)%s",
                        "" if config.waterline.dry_run else "; waterline.dryRun: false does not apply without a cluster")
        runtime = WaterlineRuntime(
            cluster,
            node_name,
            clock,
            dry_run=config.waterline.dry_run or cluster is None,
            registry=registry,
            policies=policies,
        )
    proc_root = config.proc_root
    return Agent(
        config,
        node_name,
        clock=clock,
        collector=collector,
        cluster=cluster,
        runtime=runtime,
        cpu_dir=layout.cpu_dir if layout is not None else "",
        load_average=functools.partial(read_loadavg, proc_root),
        registry=registry,
    )


def _fail(message: str) -> int:
    print(f"loadwise agent: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    def overrides(config: AgentConfig) -> AgentConfig:
        return config if args.port is None else replace(config, port=args.port)

    try:
        config = overrides(AgentConfig.load(args.config) if args.config else AgentConfig())
        node_name = resolve_node_name(args.node, config)
        cluster: Cluster | None = None
        if not args.standalone:
            from common.cluster.kube import load_cluster

            cluster = load_cluster(args.kubeconfig, component="loadwise-agent")
        agent = build_agent(config, node_name, cluster=cluster)
    except ConfigError as exc:
        return _fail(str(exc))
    except ValueError as exc:
        return _fail(str(exc))

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await run_agent(agent, stop, config_file=args.config, overrides=overrides)

    try:
        asyncio.run(main())
    except OSError as exc:  # the port is taken, for instance
        return _fail(f"cannot serve on {config.listen_address}:{config.port}: {exc.strerror or exc}")
    return 0

