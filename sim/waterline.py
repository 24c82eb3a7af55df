"""The waterline engine on simulated nodes: the real ``WaterlineRuntime`` with simulated actuators.

Per node, the simulator builds the same :class:`agent.qos.state.NodeState` the agent builds from cgroups and
hands it to :meth:`WaterlineRuntime.tick`.  The actuators are the agent's own where the action goes through
the API (eviction via ``pods/eviction`` and the node taint, both into the in-memory cluster); only the cgroup
write is simulated: a CPU quota the engine sets is remembered here and caps the pod's simulated usage until the
engine raises it again.

Nodes below every waterline with nothing to undo are not ticked (see :meth:`SimWaterline.due`): a node
is ticked from the first sample at or above one of its lines until its rules have had time to restore and cool
down (``linger``) and no throttle is left; outside that, a tick could only reset counters already at zero, so
skipping it changes no decision and saves most of the engine's cost on a large cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from prometheus_client import CollectorRegistry

from agent.qos.actuate import Actuation, ClusterEvictor, NodeScheduling
from agent.qos.plan import ActResult, Outcome
from agent.qos.policy import PolicyStore
from agent.qos.runtime import TickReport, WaterlineRuntime
from agent.qos.state import (
    CPU_TOTAL_USAGE,
    CPU_TOTAL_UTILIZATION,
    MEMORY_TOTAL_USAGE,
    MEMORY_TOTAL_UTILIZATION,
    ContainerState,
    NodeState,
    PodState,
)
from common.clock import Clock
from common.cluster import Cluster
from common.config import ConfigError
from sim.model import NodeSpec
from sim.objects import node_labels

__all__ = ["SimQuotaWriter", "SimWaterline", "CPU_PERIOD_US", "NEAR_FRACTION"]

CPU_PERIOD_US = 100_000
# A node is ticked once any watched usage reaches this fraction of its lowest waterline (1.0 is exact; a test
# checks that ticking every node on every tick decides exactly the same).
NEAR_FRACTION = 1.0
_PERCENT_METRICS = {CPU_TOTAL_UTILIZATION, MEMORY_TOTAL_UTILIZATION}
_WATCHABLE = {CPU_TOTAL_USAGE, CPU_TOTAL_UTILIZATION, MEMORY_TOTAL_USAGE, MEMORY_TOTAL_UTILIZATION}


@dataclass
class SimQuotaWriter:
    """The cgroup stand-in: remembers the CFS quota the engine wrote for each pod (by UID)."""

    quotas: dict[str, tuple[int, int]] = field(default_factory=dict)
    writes: int = 0

    def set_cpu_quota(self, pod: PodState, container: ContainerState, quota_us: int, period_us: int) -> ActResult:
        self.quotas[pod.uid] = (quota_us, period_us)
        self.writes += 1
        return ActResult(Outcome.ACCEPTED)

    def forget(self, uid: str) -> None:
        self.quotas.pop(uid, None)


class SimWaterline:
    """One ``WaterlineRuntime`` per node, sharing one store of WaterlinePolicies."""

    def __init__(
        self,
        cluster: Cluster,
        clock: Clock,
        nodes: Sequence[NodeSpec],
        policy_objects: Sequence[Mapping[str, Any]],
        *,
        tick_seconds: float,
        source: str = "",
    ) -> None:
        self.store = PolicyStore(None, clock)
        rejections = self.store.replace_all(policy_objects)
        if rejections:
            r = rejections[0]
            raise ConfigError(f"WaterlinePolicy {r.policy}: {r.text}", source=source)
        if not self.store.policies():
            raise ConfigError("no WaterlinePolicy in the file", source=source)
        self.quota = SimQuotaWriter()
        self.nodes = list(nodes)
        self.runtimes = [
            WaterlineRuntime(
                cluster,
                n.name,
                clock,
                Actuation(self.quota, ClusterEvictor(cluster), NodeScheduling(cluster, n.name, clock)),
                policies=self.store,
                registry=CollectorRegistry(),
            )
            for n in self.nodes
        ]
        self.tick_seconds = tick_seconds
        near = [self._near_lines(n) for n in self.nodes]
        # Per node: always ticked (a rule watches something else), the usage per watched metric from which it is
        # ticked (inf: not watched), and how long it stays ticked after that.
        self._always = np.array([lines is None for lines in near], dtype=bool)
        self._lines = {m: np.array([lines.get(m, np.inf) if lines else np.inf for lines in near]) for m in _WATCHABLE}
        self._linger = np.array([lines["_linger"] if lines else 0.0 for lines in near])
        self._capacity_cpu = np.array([float(n.capacity_cpu) for n in self.nodes])
        self._capacity_memory = np.array([float(n.capacity_memory) for n in self.nodes])
        self._active_until = np.full(len(self.nodes), -np.inf)
        self.ticks = 0

    def _near_lines(self, node: NodeSpec) -> dict[str, float] | None:
        """Per watched metric, the usage from which this node must be ticked; None = always tick."""
        lines: dict[str, float] = {}
        linger = 0.0
        for p in self.store.applicable(node_labels(node)):
            for r in p.rules:
                metric = r.metric.name
                if metric not in _WATCHABLE or not r.metric.selector.empty:
                    return None
                lines[metric] = min(lines.get(metric, float("inf")), float(r.metric.value) * NEAR_FRACTION)
                linger = max(linger, float(r.action.cool_down_seconds) + (r.restore_threshold + 2) * self.tick_seconds)
        lines["_linger"] = linger
        return lines

    def due(self, t: float, cpu_milli: npt.NDArray[np.float64], memory_bytes: npt.NDArray[np.float64]) -> list[int]:
        """The nodes a tick at ``t`` can affect, given every node's usage: those near one of their waterlines
        or still recovering from one (throttled pods, restore counts and cool-downs still running)."""
        lines = self._lines
        near = (
            (cpu_milli >= lines[CPU_TOTAL_USAGE])
            | (100.0 * cpu_milli / self._capacity_cpu >= lines[CPU_TOTAL_UTILIZATION])
            | (memory_bytes >= lines[MEMORY_TOTAL_USAGE])
            | (100.0 * memory_bytes / self._capacity_memory >= lines[MEMORY_TOTAL_UTILIZATION])
        )
        active = near | np.fromiter((bool(r.memory.throttled) for r in self.runtimes), dtype=bool,
                                    count=len(self.runtimes))
        self._active_until[active] = t + self._linger[active]
        return np.flatnonzero(self._always | (t <= self._active_until)).tolist()

    def tick(self, node: int, state: NodeState) -> TickReport:
        self.ticks += 1
        return self.runtimes[node].tick(state)

    @staticmethod
    def node_metrics(node: NodeSpec, cpu_milli: float, memory_bytes: float) -> dict[str, float]:
        """The node-local metrics the agent publishes each tick (crane's names and units)."""
        return {
            CPU_TOTAL_USAGE: cpu_milli,
            CPU_TOTAL_UTILIZATION: 100.0 * cpu_milli / node.capacity_cpu,
            MEMORY_TOTAL_USAGE: memory_bytes,
            MEMORY_TOTAL_UTILIZATION: 100.0 * memory_bytes / node.capacity_memory,
        }

    @staticmethod
    def node_state(
        node: NodeSpec, t: float, metrics: Mapping[str, float], pods: Sequence[PodState],
        labels: Mapping[str, str] | None = None,
    ) -> NodeState:
        """The agent's snapshot of ``node``; ``labels`` are the Node object's (default: :func:`node_labels`)."""
        labels = node_labels(node) if labels is None else labels
        extra = {k: v for k, v in metrics.items() if k in _PERCENT_METRICS}
        return NodeState(
            node=node.name,
            time=t,
            cpu_capacity_milli=node.capacity_cpu,
            memory_capacity_bytes=node.capacity_memory,
            cpu_usage_milli=int(metrics[CPU_TOTAL_USAGE]),
            memory_usage_bytes=int(metrics[MEMORY_TOTAL_USAGE]),
            pods=tuple(pods),
            extra_metrics=extra,
            labels=labels,
        )
