"""The agent's Prometheus series, in a registry owned by one agent instance.

Usage gauges are produced at scrape time from the agent's latest tick and its history (a custom
collector), so a tick costs nothing for Prometheus and a pod that went away simply stops being
exported.  Counters and the collection-duration histogram are ordinary client objects.

Names follow ``loadwise_agent_<what>_<unit>`` with base units; labels use kubelet's names
(``node``, ``namespace``, ``pod``) so joins with cAdvisor and kube-state-metrics work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from agent.collect.psi import KINDS, Pressure, PsiLine
from agent.collect.psutil_source import SelfUsage

__all__ = ["AgentMetrics", "UsageView", "PodUsageRow", "AggregateRow", "RELOAD_RESULTS"]

RELOAD_RESULTS = ("applied", "needs_restart", "rejected")


@dataclass(frozen=True, slots=True)
class PodUsageRow:
    namespace: str
    pod: str
    cpu_cores: float | None
    memory_bytes: float | None
    working_set_bytes: float | None
    pressure: Mapping[str, Pressure] | None = None


@dataclass(frozen=True, slots=True)
class AggregateRow:
    window: str
    aggregation: str
    cpu_cores: float | None
    memory_bytes: float | None


@dataclass(frozen=True, slots=True)
class UsageView:
    """What the scrape shows: the latest tick's values and the current window aggregates."""

    node_cpu_cores: float | None = None
    node_memory_bytes: float | None = None
    node_memory_total_bytes: float | None = None
    pods: tuple[PodUsageRow, ...] = ()
    aggregates: tuple[AggregateRow, ...] = ()
    pods_matched: int = 0
    pods_without_cgroup: int = 0
    cgroups_without_pod: int = 0
    history_bytes: int = 0
    history_series: int = 0
    extra: dict[str, float] = field(default_factory=dict)
    pressure: Mapping[str, Pressure] = field(default_factory=dict)
    pressure_rates: Mapping[tuple[str, str], float] = field(default_factory=dict)  # (resource, kind) -> fraction


class _UsageCollector(Collector):
    def __init__(self, node: str, view: Callable[[], UsageView], pod_metrics: bool) -> None:
        self._node = node
        self._view = view
        self._pod_metrics = pod_metrics
        self._self = SelfUsage()

    def set_pod_metrics(self, on: bool) -> None:
        self._pod_metrics = on

    def collect(self) -> Iterator[Metric]:
        v = self._view()
        n = self._node

        def gauge(name: str, doc: str, value: float | None) -> Iterator[Metric]:
            g = GaugeMetricFamily(name, doc, labels=["node"])
            if value is not None:
                g.add_metric([n], value)
            yield g

        yield from gauge("loadwise_agent_node_cpu_usage_cores", "Node CPU in use (busy cores), last collection", v.node_cpu_cores)
        yield from gauge(
            "loadwise_agent_node_memory_usage_bytes",
            "Node memory in use (MemTotal - MemAvailable), last collection",
            v.node_memory_bytes,
        )
        yield from gauge("loadwise_agent_node_memory_total_bytes", "Node memory (MemTotal)", v.node_memory_total_bytes)
        cpu_agg = GaugeMetricFamily(
            "loadwise_agent_node_cpu_usage_aggregated_cores",
            "Node CPU over a window: avg or nearest-rank percentile, as reported in NodeMetric",
            labels=["node", "window", "aggregation"],
        )
        mem_agg = GaugeMetricFamily(
            "loadwise_agent_node_memory_usage_aggregated_bytes",
            "Node memory over a window: avg or nearest-rank percentile, as reported in NodeMetric",
            labels=["node", "window", "aggregation"],
        )
        for a in v.aggregates:
            if a.cpu_cores is not None:
                cpu_agg.add_metric([n, a.window, a.aggregation], a.cpu_cores)
            if a.memory_bytes is not None:
                mem_agg.add_metric([n, a.window, a.aggregation], a.memory_bytes)
        yield cpu_agg
        yield mem_agg
        if self._pod_metrics:
            pc = GaugeMetricFamily("loadwise_agent_pod_cpu_usage_cores", "Pod CPU in use, last collection",
                                   labels=["node", "namespace", "pod"])
            pm = GaugeMetricFamily("loadwise_agent_pod_memory_usage_bytes",
                                   "Pod memory in use (v1: anon + unevictable, koordlet's definition; v2: memory.current - inactive_file)",
                                   labels=["node", "namespace", "pod"])
            pw = GaugeMetricFamily("loadwise_agent_pod_memory_working_set_bytes",
                                   "Pod memory working set (usage - inactive file, kubelet's definition)",
                                   labels=["node", "namespace", "pod"])
            for p in v.pods:
                if p.cpu_cores is not None:
                    pc.add_metric([n, p.namespace, p.pod], p.cpu_cores)
                if p.memory_bytes is not None:
                    pm.add_metric([n, p.namespace, p.pod], p.memory_bytes)
                if p.working_set_bytes is not None:
                    pw.add_metric([n, p.namespace, p.pod], p.working_set_bytes)
            yield pc
            yield pm
            yield pw
        yield from _pressure_families(n, v)
        pods = GaugeMetricFamily("loadwise_agent_pods", "Pods and pod cgroups on this node by matching state",
                                 labels=["node", "state"])
        pods.add_metric([n, "matched"], v.pods_matched)
        pods.add_metric([n, "without_cgroup"], v.pods_without_cgroup)
        pods.add_metric([n, "cgroup_without_pod"], v.cgroups_without_pod)
        yield pods
        yield from gauge("loadwise_agent_history_bytes", "Bytes held by the usage history ring buffers", v.history_bytes)
        yield from gauge("loadwise_agent_history_series", "Series in the usage history", v.history_series)
        cpu = CounterMetricFamily("loadwise_agent_self_cpu_seconds", "CPU time used by the agent process",
                                  labels=["node"])
        cpu.add_metric([n], self._self.cpu_seconds())
        yield cpu
        yield from gauge("loadwise_agent_self_rss_bytes", "Resident memory of the agent process", self._self.rss_bytes())


def _pressure_families(node: str, v: UsageView) -> Iterator[Metric]:
    """PSI: the node's kernel averages as ratios and its stall counters; each pod's counters (cgroup v2).

    The families are always declared; they have samples only where the kernel (and cgroup v2) has PSI.
    """
    ratio = GaugeMetricFamily(
        "loadwise_agent_node_pressure_stalled_ratio",
        "Fraction of time tasks stalled on the resource (kind some: at least one; full: all non-idle), "
        "the kernel's running average over window",
        labels=["node", "resource", "kind", "window"],
    )
    total = CounterMetricFamily(
        "loadwise_agent_node_pressure_stalled_seconds",
        "Cumulative time tasks stalled on the resource (the pressure file's total)",
        labels=["node", "resource", "kind"],
    )
    interval = GaugeMetricFamily(
        "loadwise_agent_node_pressure_stalled_interval_ratio",
        "Fraction of the last collection interval tasks stalled on the resource (the rate of the total)",
        labels=["node", "resource", "kind"],
    )
    for resource, kind, line in _lines(v.pressure):
        for window, avg in (("10s", line.avg10), ("60s", line.avg60), ("300s", line.avg300)):
            ratio.add_metric([node, resource, kind, window], avg / 100)
        total.add_metric([node, resource, kind], line.total_us / 1e6)
    for (resource, kind), rate in sorted(v.pressure_rates.items()):
        interval.add_metric([node, resource, kind], rate)
    pod_total = CounterMetricFamily(
        "loadwise_agent_pod_pressure_stalled_seconds",
        "Cumulative time the pod's tasks stalled on the resource (cgroup v2 <resource>.pressure total)",
        labels=["node", "namespace", "pod", "resource", "kind"],
    )
    for row in v.pods:
        for resource, kind, line in _lines(row.pressure or {}):
            pod_total.add_metric([node, row.namespace, row.pod, resource, kind], line.total_us / 1e6)
    yield ratio
    yield interval
    yield total
    yield pod_total


def _lines(pressure: Mapping[str, Pressure]) -> Iterator[tuple[str, str, PsiLine]]:
    for resource, p in sorted(pressure.items()):
        for kind in KINDS:
            line = p.line(kind)
            if line is not None:
                yield resource, kind, line


class AgentMetrics:
    """Every series of one agent; ``registry`` is what ``/metrics`` serves."""

    def __init__(self, node: str, view: Callable[[], UsageView], *, pod_metrics: bool = True,
                 registry: CollectorRegistry | None = None) -> None:
        self.node = node
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.collect_duration = Histogram(
            "loadwise_agent_collect_duration_seconds", "Time one collection (procfs + every pod cgroup) took",
            ["node"], registry=r,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
        ).labels(node)
        self.collections = Counter("loadwise_agent_collections", "Collections run", ["node"], registry=r).labels(node)
        self.collect_errors = Counter("loadwise_agent_collect_errors", "Files or sources that could not be read",
                                      ["node"], registry=r).labels(node)
        reports = Counter("loadwise_agent_nodemetric_reports", "NodeMetric status writes by result",
                          ["node", "result"], registry=r)
        self.reports_ok = reports.labels(node, "success")
        self.reports_failed = reports.labels(node, "failure")
        self.last_report = Gauge("loadwise_agent_nodemetric_last_success_timestamp_seconds",
                                 "When the NodeMetric status was last written (0 = never)", ["node"],
                                 registry=r).labels(node)
        self.report_age = Gauge("loadwise_agent_nodemetric_report_age_seconds",
                                "Seconds since the last successful NodeMetric write (since start if none)",
                                ["node"], registry=r).labels(node)
        self.start_time = Gauge("loadwise_agent_start_time_seconds", "When the agent started", ["node"],
                                registry=r).labels(node)
        reloads = Counter("loadwise_agent_config_reloads", "Changes of the config file by outcome: applied, "
                          "needs_restart (some keys wait for a restart), rejected (the last good config kept)",
                          ["node", "result"], registry=r)
        self.config_reloads = {result: reloads.labels(node, result) for result in RELOAD_RESULTS}
        self._usage = _UsageCollector(node, view, pod_metrics)
        r.register(self._usage)

    def set_pod_metrics(self, on: bool) -> None:
        """Per-pod gauges on or off from the next scrape (a reloaded ``podMetrics``)."""
        self._usage.set_pod_metrics(on)

    def set_report_age(self, age: Callable[[], float]) -> None:
        self.report_age.set_function(age)
