"""The simulated node agents: the real koordlet-style pipeline fed with simulated usage.

Each node gets the agent's own :class:`agent.nodemetric.UsageStore`; every tick the simulator records the
node's and its pods' true usage into it, and every ``reportIntervalSeconds`` (each node on its own phase, as
independent agents would) :func:`agent.nodemetric.build_nodemetric_status` turns the history into the NodeMetric
status that is written into the cluster.  The scheduler therefore sees what it sees in production: window
averages that lag the real usage by up to a report interval plus the averaging window.

A report is built when something may read it: the simulator calls :meth:`SimAgents.publish` before every
scheduling session and rebalancing round.  A report that no reader could see before the node's next one replaces
it is never built, so every reader sees the same.  Built late it is what it would have been on time: the builder
reads only the samples up to the report's time, and a deferred report is built before its node records twice
more, while the store still holds every sample its window needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agent.nodemetric import (
    MetricCollectPolicy,
    PodMeta,
    UsageStore,
    build_nodemetric_status,
    nodemetric_object,
)
from agent.statuses import build_nodemetric_statuses, status_layout
from common.cluster.memory import MemoryCluster
from sim.model import NodeSpec
from sim.objects import with_uid

__all__ = ["SimAgents"]


@dataclass(slots=True)
class _Deferred:
    """A report not built yet: its time, the pods it covers, and whether its node recorded since."""

    t: float
    pods: list[PodMeta]
    recorded_since: bool = False


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
        # Agents start at different moments: their report times are spread evenly over the interval.
        self.interval = float(policy.interval_seconds)
        n = len(self.nodes)
        # seconds from the start: each agent's next report
        self._next = np.array([self.interval * i / n for i in range(n)], dtype=np.float64)
        self.reports = 0  # made by the agents, whether built or replaced unread
        self.built = 0
        # per node, its report not built yet (in the order they were made)
        self._deferred: dict[int, _Deferred] = {}
        # whether reports wait for a reader: only when a late build is exact, the pod history keeping a pod at
        # least a tick past its last sample (false: each report is built at once, as tests compare)
        self.defer = policy.window_seconds >= tick_seconds

    def create_nodemetrics(self) -> None:
        """What koord-manager does when a node joins: a NodeMetric with the collect policy in its spec."""
        for n in self.nodes:
            self.cluster.create("NodeMetric", with_uid("NodeMetric", nodemetric_object(n.name, self.policy)))

    def record(
        self, t: float, node: int, cpu_milli: float, memory_bytes: float, pods: Sequence[tuple[str, float, float]]
    ) -> None:
        """One collect tick of node ``node``: node usage and ``(uid, cpu millicores, memory bytes)`` per pod (UIDs
        unique, as the running pods are)."""
        self.record_cores(t, node, cpu_milli / 1000.0, memory_bytes, [(uid, cpu / 1000.0, mem) for uid, cpu, mem in pods])

    def record_cores(
        self, t: float, node: int, cpu_cores: float, memory_bytes: float, pods: Sequence[tuple[str, float, float]]
    ) -> None:
        """:meth:`record` with the CPU already in cores (``pods``: ``(uid, cpu cores, memory bytes)``), for a caller
        that converts every value at once."""
        waiting = self._deferred.get(node)
        if waiting is not None:
            if waiting.recorded_since:
                self._build(node, self._deferred.pop(node))
            else:
                waiting.recorded_since = True
        self.stores[node].record_usage(t, cpu_cores, memory_bytes, pods)

    def due(self, tick: int) -> tuple[list[int], list[int]]:
        """Nodes whose agent reports during tick number ``tick``: those that report before the tick's scheduling
        session, and those that report after it.

        A tick is ``tick_seconds`` of simulated time, and its session runs at its start.  An agent whose report
        time falls in the tick's first half reports before the session, one whose time falls in the second half
        after it, so the next session is the first to see it.  Either report carries the tick's usage (the only
        sample there is): the age of the data a session reads is then spread over ``[0, reportInterval)`` with
        the mean of a real cluster's, half the interval, whatever the tick.  An agent reports at most once a tick
        (with an interval shorter than the tick it would only repeat the same samples).

        On the first tick every agent reports, before the session: agents run before the simulated pods arrive,
        and a node whose NodeMetric has never been updated counts as expired, which would close it to the first
        burst of pods.
        """
        start = tick * self.tick_seconds
        end = start + self.tick_seconds
        eps = 1e-6 * self.tick_seconds
        nxt = self._next
        late = nxt < end - eps  # a report time in this tick
        if tick == 0:
            before: list[int] = list(range(len(self.nodes)))
            after: list[int] = []
        else:
            due = np.flatnonzero(late)
            early = nxt[due] < start + self.tick_seconds / 2 - eps
            before, after = due[early].tolist(), due[~early].tolist()
        # Past this tick: each agent's first report time at or after its end.
        if late.any():
            steps = np.ceil((end - nxt[late]) / self.interval - 1e-9)
            nxt[late] += steps * self.interval
        return before, after

    def report(self, t: float, node: int, pods: Sequence[PodMeta]) -> None:
        """Node ``node``'s report at ``t``: built and written by the next :meth:`publish`, unless the node's next
        report replaces it first."""
        self.reports += 1
        self._deferred.pop(node, None)
        self._deferred[node] = _Deferred(t, list(pods))
        if not self.defer:
            self.publish()

    def publish(self) -> None:
        """Build and write every report made and not written yet, in the order they were made: before anything
        reads the NodeMetrics.  They are built in one batch (:func:`agent.statuses.build_nodemetric_statuses`)."""
        deferred, self._deferred = self._deferred, {}
        if not deferred:
            return
        # Typed: the scheduler takes the pods' usage as built, rather than parsing it back from the text.
        statuses = build_nodemetric_statuses(
            [(self.stores[node], waiting.t, waiting.pods) for node, waiting in deferred.items()], self.policy, typed=True
        )
        for node, status in zip(deferred, statuses, strict=True):
            self._write(node, status)

    def _build(self, node: int, report: _Deferred) -> None:
        """Node ``node``'s NodeMetric status at the report's time, written (status subresource)."""
        # Typed: the scheduler takes the pods' usage as built, rather than parsing it back from the text.
        self._write(node, build_nodemetric_status(self.stores[node], report.t, self.policy, report.pods, typed=True))

    def _write(self, node: int, status: dict[str, Any]) -> None:
        """Node ``node``'s NodeMetric status written (status subresource)."""
        # A fresh status nobody else holds: handed over to the cluster rather than copied in and out, with its
        # layout, so that replacing a report of the same layout is not a walk through both.
        self.cluster.write_status("NodeMetric", self.nodes[node].name, status, layout=status_layout(status))
        self.built += 1
