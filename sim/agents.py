"""The simulated node agents: the real koordlet-style pipeline fed with simulated usage.

Each node gets the agent's own :class:`agent.nodemetric.UsageStore`; every tick the simulator records the
node's and its pods' true usage into it, and every ``reportIntervalSeconds`` (each node on its own phase, as
independent agents would) :func:`agent.nodemetric.build_nodemetric_status` turns the history into the NodeMetric
status that is written into the cluster.  The scheduler therefore sees what it sees in production: window
averages that lag the real usage by up to a report interval plus the averaging window.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent.nodemetric import (
    MetricCollectPolicy,
    PodMeta,
    UsageStore,
    build_nodemetric_status,
    nodemetric_object,
)
from common.cluster.memory import MemoryCluster
from sim.model import NodeSpec
from sim.objects import with_uid

__all__ = ["SimAgents"]


class SimAgents:
    """One agent per node: usage history, NodeMetric creation and periodic status reports."""

    def __init__(
        self,
        cluster: MemoryCluster,
        nodes: Sequence[NodeSpec],
        policy: MetricCollectPolicy,
        *,
        tick_seconds: float,
    ) -> None:
        self.cluster = cluster
        self.nodes = list(nodes)
        self.policy = policy
        self.tick_seconds = tick_seconds
        self.stores = [UsageStore(policy, interval_seconds=tick_seconds) for _ in self.nodes]
        interval = float(policy.interval_seconds)
        # Agents start at different moments: spread the report phases over the interval, on the tick grid.
        ticks_per_report = max(1, round(interval / tick_seconds))
        self._period_ticks = ticks_per_report
        self._phase = [i % ticks_per_report for i in range(len(self.nodes))]
        self.reports = 0

    def create_nodemetrics(self) -> None:
        """What koord-manager does when a node joins: a NodeMetric with the collect policy in its spec."""
        for n in self.nodes:
            self.cluster.create("NodeMetric", with_uid("NodeMetric", nodemetric_object(n.name, self.policy)))

    def record(
        self, t: float, node: int, cpu_milli: float, memory_bytes: float, pods: Sequence[tuple[str, float, float]]
    ) -> None:
        """One collect tick of node ``node``: node usage and ``(uid, cpu millicores, memory bytes)`` per pod (UIDs
        unique, as the running pods are)."""
        self.stores[node].record_usage(
            t, cpu_milli / 1000.0, memory_bytes, [(uid, cpu / 1000.0, mem) for uid, cpu, mem in pods]
        )

    def due(self, tick: int) -> list[int]:
        """Nodes whose agent reports on tick number ``tick``.

        On the first tick every agent reports: agents run before the simulated pods arrive, and a node whose
        NodeMetric has never been updated counts as expired, which would close it to the first burst of pods.
        """
        if tick == 0:
            return list(range(len(self.nodes)))
        phase = tick % self._period_ticks
        return [i for i, p in enumerate(self._phase) if p == phase]

    def report(self, t: float, node: int, pods: Sequence[PodMeta]) -> None:
        """Build node ``node``'s NodeMetric status at ``t`` and write it (status subresource)."""
        status = build_nodemetric_status(self.stores[node], t, self.policy, pods)
        # A fresh status nobody else holds: handed over to the cluster rather than copied in and out.
        self.cluster.write_status("NodeMetric", self.nodes[node].name, status)
        self.reports += 1
