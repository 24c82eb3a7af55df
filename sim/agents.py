"""The simulated node agents: koordlet-style NodeMetric reports of simulated usage, built as the real agent builds them.

Every tick the simulator records each node's and its pods' true usage.  A real agent keeps its node's history in an
:class:`agent.nodemetric.UsageStore`; the simulated agents all sample at the same instants, so they keep theirs
as rows of one :class:`sim.samples.SampleTable`, every node and pod written in a few NumPy calls a tick, and the
windows of a batch of reports averaged in a few more.  Every ``reportIntervalSeconds`` (each node on its own
phase, as independent agents would) a node's report becomes the NodeMetric status written into the cluster: the
texts and typed values exactly those :func:`agent.nodemetric.build_nodemetric_status` makes from a store of the
same samples (``tests/sim/test_samples.py``).  The scheduler therefore sees what it sees in production: window
averages that lag the real usage by up to a report interval plus the averaging window.

A report is built when something may read it: the simulator calls :meth:`SimAgents.publish` before every
scheduling session and rebalancing round.  A report that no reader could see before the node's next one replaces
it is never built, so every reader sees the same.  Built late it is what it would have been on time: the builder
reads only the samples up to the report's time, and a deferred report is built before its node records twice
more, while the table still holds every sample its window needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from agent.nodemetric import MetricCollectPolicy, PodMeta, nodemetric_object, status_of
from agent.statuses import reported_pairs, status_layout
from common.cluster.memory import MemoryCluster
from sim.model import NodeSpec
from sim.objects import with_uid
from sim.samples import SampleTable

__all__ = ["SimAgents"]

FloatArray = npt.NDArray[np.float64]
_POD_ORDER = attrgetter("namespace", "name")  # podsMetric order, as build_nodemetric_status sorts it
# Rows the sample table keeps beyond a window's: a report is built at most two ticks after it was made.
_LATE_ROWS = 3


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
        if policy.durations:
            raise ValueError("the simulated agents report no aggregated usages: policy.durations must be empty, "
                             f"not {policy.durations}")
        self.samples = SampleTable(len(self.nodes), math.ceil(policy.window_seconds / tick_seconds) + _LATE_ROWS)
        # Agents start at different moments: their report times are spread evenly over the interval.
        self.interval = float(policy.interval_seconds)
        n = len(self.nodes)
        # seconds from the start: each agent's next report
        self._next = np.array([self.interval * i / n for i in range(n)], dtype=np.float64)
        self.reports = 0  # made by the agents, whether built or replaced unread
        self.built = 0
        # per node, its report not built yet (in the order they were made)
        self._deferred: dict[int, _Deferred] = {}
        # per node, the pods of its last report built and their podsMetric order
        self._order: dict[int, tuple[list[PodMeta], list[PodMeta]]] = {}
        # whether reports wait for a reader: only when a late build is exact, the pod history keeping a pod at
        # least a tick past its last sample (false: each report is built at once, as tests compare)
        self.defer = policy.window_seconds >= tick_seconds

    def create_nodemetrics(self) -> None:
        """What koord-manager does when a node joins: a NodeMetric with the collect policy in its spec."""
        for n in self.nodes:
            self.cluster.create("NodeMetric", with_uid("NodeMetric", nodemetric_object(n.name, self.policy)))

    def record(self, t: float, node_cpu: FloatArray, node_memory: FloatArray, pod_node: npt.NDArray[np.int64],
               uids: Sequence[str], pod_cpu: FloatArray, pod_memory: FloatArray) -> None:
        """One collect tick of every node: per node its CPU (cores) and memory (bytes), per running pod (UIDs unique)
        its node, CPU and memory.  A report still unbuilt from before the node's last tick is built first."""
        late = sorted(node for node, waiting in self._deferred.items() if waiting.recorded_since)
        if late:
            self._build([(node, self._deferred.pop(node)) for node in late])
        for waiting in self._deferred.values():
            waiting.recorded_since = True
        self.samples.record(t, node_cpu, node_memory, pod_node, uids, pod_cpu, pod_memory)

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
        reads the NodeMetrics."""
        deferred, self._deferred = self._deferred, {}
        if deferred:
            self._build(list(deferred.items()))

    def _build(self, reports: list[tuple[int, _Deferred]]) -> None:
        """Each node's NodeMetric status at its report's time, written (status subresource), in order: the windows
        of all of them averaged in one batch, their quantities truncated in one more."""
        ordered = [self._ordered(node, waiting.pods) for node, waiting in reports]
        means = self.samples.means(
            [(waiting.t, node, [m.uid for m in metas]) for (node, waiting), metas in zip(reports, ordered, strict=True)],
            float(self.policy.window_seconds),
        )
        # every report's node and system pair, then every pod's, truncated in one call
        pairs = reported_pairs(np.concatenate([means.nodes.reshape(-1), means.pods.reshape(-1)]),
                               np.concatenate([np.repeat(means.node_counts, 4), np.repeat(means.pod_counts, 2)]))
        k = 2 * len(reports)
        for b, ((node, waiting), metas) in enumerate(zip(reports, ordered, strict=True)):
            own = pairs[2 * b : 2 * b + 2] + pairs[k : k + len(metas)]
            k += len(metas)
            # Typed: the scheduler takes the pods' usage as built, rather than parsing it back from the text.
            self._write(node, status_of(waiting.t, metas, own, ([], []), typed=True))

    def _ordered(self, node: int, pods: list[PodMeta]) -> list[PodMeta]:
        """``pods`` in podsMetric order (namespace, then name); the node's last order again while its pods are the
        same (the usual report: a node's pods change far less often than it reports)."""
        last = self._order.get(node)
        if last is not None and last[0] == pods:
            return last[1]
        ordered = sorted(pods, key=_POD_ORDER)
        self._order[node] = (pods, ordered)
        return ordered

    def _write(self, node: int, status: dict[str, Any]) -> None:
        """Node ``node``'s NodeMetric status written (status subresource)."""
        # A fresh status nobody else holds: handed over to the cluster rather than copied in and out, with its
        # layout, so that replacing a report of the same layout is not a walk through both.
        self.cluster.write_status("NodeMetric", self.nodes[node].name, status, layout=status_layout(status))
        self.built += 1
