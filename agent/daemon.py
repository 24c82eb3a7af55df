"""The agent process: collect every second, report on the NodeMetric's schedule, run the waterline.

:class:`Agent` holds the state and does one unit of work per call (``collect_once``,
``report_if_due``, ``waterline_once``), each safe to call from a worker thread; :func:`run_agent`
schedules those calls with APScheduler (``max_instances=1``, ``coalesce=True``: a slow tick is
skipped, never stacked) and serves HTTP with aiohttp until stopped.

Pods on this node come from an informer with the field selector ``spec.nodeName=<node>`` and are
matched to pod cgroups by UID.  Standalone (no cluster) the pod cgroups found on the machine stand
in for pods, named by UID, and nothing is written anywhere.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from agent.aggregate import AGGREGATIONS, aggregate
from agent.collect.collector import Collector, Tick
from agent.collect.psi import NodePressureSource, nodemetric_pressure
from agent.config import AgentConfig
from agent.metrics import AgentMetrics, AggregateRow, PodUsageRow, UsageView
from agent.nodemetric import (
    NODE_CPU,
    MetricCollectPolicy,
    PodMeta,
    UsageStore,
    build_nodemetric_status,
    nodemetric_object,
)
from agent.qos.runtime import TickReport, WaterlineRuntime
from agent.qos.state import NodeState
from agent.reporter import NodeMetricReporter, ReportOutcome
from agent.snapshot import build_node_state
from common.clock import Clock
from common.cluster import Cluster, Informer, WatchEvent
from common.duration import format_duration

__all__ = ["PodDirectory", "Agent", "run_agent", "standalone_pod"]

log = logging.getLogger(__name__)

_KOORD_QOS = {"Guaranteed": "LSR", "Burstable": "LS", "BestEffort": "BE"}


def standalone_pod(uid: str, qos: str, container_ids: list[str]) -> dict[str, Any]:
    """A stand-in pod object for a pod cgroup seen without a cluster (named by its UID)."""
    return {
        "metadata": {"name": uid, "namespace": "", "uid": uid},
        "spec": {"containers": [{"name": cid[:12]} for cid in container_ids]},
        "status": {
            "phase": "Running",
            "qosClass": qos,
            "containerStatuses": [{"name": cid[:12], "containerID": f"cgroup://{cid}"} for cid in container_ids],
        },
    }


class PodDirectory:
    """This node's pods by UID, fed by an informer; reads are snapshots, safe from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pods: dict[str, Mapping[str, Any]] = {}
        self._metas: dict[str, tuple[str, PodMeta]] = {}  # uid -> (resourceVersion, meta)

    def handle(self, event: WatchEvent) -> None:
        meta = event.object.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        if not uid:
            return
        with self._lock:
            if event.type == "DELETED":
                self._pods.pop(uid, None)
                self._metas.pop(uid, None)
            elif event.type in ("ADDED", "MODIFIED"):
                self._pods[uid] = event.object

    def snapshot(self) -> dict[str, Mapping[str, Any]]:
        with self._lock:
            return dict(self._pods)

    def metas(self, pods: Mapping[str, Mapping[str, Any]]) -> list[PodMeta]:
        """PodMeta of each pod, parsed once per resourceVersion."""
        out: list[PodMeta] = []
        with self._lock:
            for uid, pod in pods.items():
                rv = str((pod.get("metadata") or {}).get("resourceVersion", ""))
                cached = self._metas.get(uid)
                if cached is None or cached[0] != rv or not rv:
                    cached = (rv, PodMeta.from_pod(pod))
                    self._metas[uid] = cached
                out.append(cached[1])
        return out


class StandalonePods:
    """Stand-in pod objects for the pod cgroups of a tick, rebuilt only for pods whose cgroups changed."""

    def __init__(self) -> None:
        self._pods: dict[str, tuple[tuple[str, tuple[str, ...]], dict[str, Any]]] = {}

    def pods(self, tick: Tick) -> dict[str, Mapping[str, Any]]:
        out: dict[str, Mapping[str, Any]] = {}
        cache: dict[str, tuple[tuple[str, tuple[str, ...]], dict[str, Any]]] = {}
        for uid, p in tick.pods.items():
            ids = tuple(c.id for c in p.containers)
            key = (p.qos.value, ids)
            cached = self._pods.get(uid)
            if cached is None or cached[0] != key and ids:
                cached = (key, standalone_pod(uid, p.qos.value, list(ids)))
            cache[uid] = cached
            out[uid] = cached[1]
        self._pods = cache
        return out


class Agent:
    """One node's agent.  ``cluster=None`` is standalone mode."""

    def __init__(
        self,
        config: AgentConfig,
        node_name: str,
        *,
        clock: Clock,
        collector: Collector,
        cluster: Cluster | None = None,
        runtime: WaterlineRuntime | None = None,
        cpu_dir: str = "",
        load_average: Callable[[], tuple[float, float, float]] | None = None,
        reporter: NodeMetricReporter | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.config = config
        self.node_name = node_name
        self.clock = clock
        self.collector = collector
        self.cluster = cluster
        self.runtime = runtime
        self.cpu_dir = cpu_dir
        self.load_average = load_average
        self.started = clock.now()
        self.store = UsageStore(config.metric_collect_policy, config.collect_interval_seconds)
        self.pods = PodDirectory()
        self._standalone = StandalonePods()
        self.node_obj: Mapping[str, Any] | None = None
        self.reporter = reporter
        if reporter is None and cluster is not None:
            self.reporter = NodeMetricReporter(
                cluster,
                node_name,
                clock,
                config.metric_collect_policy,
                retry_initial_seconds=config.report_retry_initial_seconds,
                retry_max_seconds=config.report_retry_max_seconds,
                jitter_fraction=config.report_jitter_fraction,
                first_report_delay=2 * config.collect_interval_seconds,
            )
        self.last_tick: Tick | None = None
        self.last_waterline: TickReport | None = None
        self.last_collect_mono: float | None = None
        self._lock = threading.Lock()  # the store: ticks append while a report or a scrape reads
        self._informers: list[Informer] = []
        self.metrics = AgentMetrics(node_name, self.usage_view, pod_metrics=config.pod_metrics, registry=registry)
        self.metrics.start_time.set(self.started)
        self.metrics.set_report_age(self._report_age)

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the pod and node informers (and the waterline policy watch) in cluster mode."""
        if self.cluster is None:
            return
        pods = self.cluster.informer("Pod", self.pods.handle, field_selector=f"spec.nodeName={self.node_name}")
        node = self.cluster.informer("Node", self._on_node, field_selector=f"metadata.name={self.node_name}")
        for inf in (pods, node):
            inf.start()
            self._informers.append(inf)
        if self.runtime is not None and self.config.waterline.policy_file == "":
            self._informers.append(self.runtime.policies.watch(self.cluster))

    def stop(self) -> None:
        for inf in self._informers:
            inf.stop()
        self._informers.clear()

    def apply_config(self, config: AgentConfig) -> None:
        """Swap a reloaded config's live keys into the running components (``agent/reload.py`` says which).

        Each component takes its settings under its own lock, between two units of work, so a collection or a
        report never sees half of the old config and half of the new.
        """
        with self._lock:
            self.store.set_interval(config.collect_interval_seconds)
        self.collector.configure(containers=config.collect_containers, pressure=self._pressure_source(config),
                                 rate_ttl=config.rate_ttl_seconds)
        self.metrics.set_pod_metrics(config.pod_metrics)
        if self.runtime is not None:
            self.runtime.set_dry_run(config.waterline.dry_run)
            self.runtime.set_enabled(config.waterline.enabled)
        if self.reporter is not None:
            self.reporter.configure(config.metric_collect_policy,
                                    retry_initial_seconds=config.report_retry_initial_seconds,
                                    retry_max_seconds=config.report_retry_max_seconds,
                                    jitter_fraction=config.report_jitter_fraction)
        self.config = config

    def _pressure_source(self, config: AgentConfig) -> NodePressureSource | None:
        """The node's PSI source for ``config``: the running one kept, a new one where the kernel has PSI."""
        if not config.pressure:
            return None
        if self.collector.pressure is not None:
            return self.collector.pressure
        psi = NodePressureSource(config.proc_root)
        return psi if psi.available() else None

    def _on_node(self, event: WatchEvent) -> None:
        if event.type in ("ADDED", "MODIFIED"):
            self.node_obj = event.object
        elif event.type == "DELETED":
            self.node_obj = None

    @property
    def policy(self) -> MetricCollectPolicy:
        return self.reporter.policy if self.reporter is not None else self.config.metric_collect_policy

    # -- pods ---------------------------------------------------------------------------------------
    def current_pods(self, tick: Tick | None = None) -> dict[str, Mapping[str, Any]]:
        """This node's pods by UID: from the cluster, or stand-ins for the pod cgroups when standalone."""
        if self.cluster is not None:
            return self.pods.snapshot()
        tick = tick or self.last_tick
        if tick is None:
            return {}
        return self._standalone.pods(tick)

    # -- work units ---------------------------------------------------------------------------------
    def collect_once(self) -> Tick:
        """Node and pod usage; container files wait for the waterline tick that needs them."""
        tick = self.collector.collect(containers=False)
        pods = self.current_pods(tick)
        sample = tick.usage_sample(set(pods))
        with self._lock:
            self.store.set_policy(self.policy)
            self.store.record(tick.time, sample)
        self.last_tick = tick
        self.last_collect_mono = self.clock.monotonic()
        self.metrics.collections.inc()
        self.metrics.collect_duration.observe(tick.duration_seconds)
        if tick.errors:
            self.metrics.collect_errors.inc(len(tick.errors))
            for e in tick.errors:
                log.debug("collect: %s", e)
        return tick

    def status(self, policy: MetricCollectPolicy | None = None) -> dict[str, Any]:
        """The NodeMetric status as of now."""
        policy = policy or self.policy
        pods = self.current_pods()
        metas = self.pods.metas(pods) if self.cluster is not None else [PodMeta.from_pod(p) for p in pods.values()]
        with self._lock:
            self.store.set_policy(policy)
            status = build_nodemetric_status(self.store, self.clock.now(), policy, metas)
        tick = self.last_tick
        if tick is not None and tick.pressure:  # a Loadwise extension: Koordinator's NodeMetric has no PSI
            status["nodeMetric"]["extensions"] = {"pressure": nodemetric_pressure(tick.pressure)}
        return status

    def nodemetric(self) -> dict[str, Any]:
        """The whole object this agent would write now (``/nodemetric``)."""
        policy = self.policy
        return nodemetric_object(self.node_name, policy, self.status(policy))

    def report_if_due(self) -> ReportOutcome | None:
        if self.reporter is None or not self.reporter.due() or self.last_tick is None:
            return None
        outcome = self.reporter.report(self.status)
        if outcome.ok:
            self.metrics.reports_ok.inc()
            self.metrics.last_report.set(outcome.at)
        elif outcome.error != "rate limited":
            self.metrics.reports_failed.inc()
        return outcome

    def node_state(self) -> NodeState | None:
        """The waterline engine's snapshot of the last tick, containers read now (``/debug/state``)."""
        tick = self.last_tick
        if tick is None:
            return None
        tick = self.collector.with_containers(tick)
        load = None
        if self.load_average is not None:
            try:
                load = self.load_average()
            except OSError:
                load = None
        pods = self.current_pods(tick)
        return build_node_state(
            self.node_name, tick, list(pods.values()), node=self.node_obj, cpu_dir=self.cpu_dir, load_average=load
        )

    def waterline_once(self) -> TickReport | None:
        if self.runtime is None or self.runtime.idle():
            return None
        state = self.node_state()
        if state is None:
            return None
        report = self.runtime.tick(state)
        self.last_waterline = report
        return report

    # -- health -------------------------------------------------------------------------------------
    def healthy(self) -> tuple[bool, str]:
        """Alive = collections keep happening (a wedged collect loop fails the liveness probe)."""
        if self.last_collect_mono is None:
            grace = max(30.0, 5 * self.config.collect_interval_seconds)
            if self.clock.now() - self.started > grace:
                return False, "no collection has completed since start"
            return True, "starting"
        age = self.clock.monotonic() - self.last_collect_mono
        limit = max(10.0, 5 * self.config.collect_interval_seconds)
        if age > limit:
            return False, f"last collection {age:.1f}s ago (limit {limit:.0f}s)"
        return True, "ok"

    def informers_synced(self) -> bool:
        return all(inf.has_synced() for inf in self._informers)

    def ready(self) -> tuple[bool, str]:
        if self.last_tick is None:
            return False, "no collection yet"
        if not self.informers_synced():
            return False, "informers not synced"
        return True, "ok"

    def _report_age(self) -> float:
        last = self.reporter.last_success if self.reporter is not None else None
        return self.clock.now() - (last if last is not None else self.started)

    # -- what /metrics shows ------------------------------------------------------------------------
    def usage_view(self) -> UsageView:
        tick = self.last_tick
        if tick is None:
            return UsageView()
        pods = self.current_pods(tick)
        rows = []
        for uid, pod in pods.items():
            usage = tick.pods.get(uid)
            if usage is None:
                continue
            meta = pod.get("metadata") or {}
            rows.append(
                PodUsageRow(
                    namespace=str(meta.get("namespace", "")),
                    pod=str(meta.get("name", "")),
                    cpu_cores=usage.cpu_cores,
                    memory_bytes=float(usage.memory.usage_without_page_cache) if usage.memory else None,
                    working_set_bytes=float(usage.working_set_bytes) if usage.working_set_bytes is not None else None,
                    pressure=usage.pressure,
                )
            )
        policy = self.policy
        with self._lock:
            mem_series = self.store.node_memory_series()
            windows = aggregate(self.store.node, self.clock.now(), policy.durations, series=(NODE_CPU, mem_series))
            history_bytes = self.store.nbytes
            history_series = len(self.store.node) + len(self.store.pods)
        aggregates = []
        for d, per in windows.items():
            for agg in AGGREGATIONS:
                cpu = per.get(NODE_CPU, {}).get(agg)
                mem = per.get(mem_series, {}).get(agg)
                if cpu is not None or mem is not None:
                    aggregates.append(AggregateRow(format_duration(d), agg, cpu, mem))
        node_mem = tick.node_memory
        matched = sum(1 for uid in pods if uid in tick.pods)
        return UsageView(
            node_cpu_cores=tick.node_cpu_cores,
            node_memory_bytes=float(node_mem.usage_without_page_cache) if node_mem else None,
            node_memory_total_bytes=float(node_mem.total) if node_mem else None,
            pods=tuple(sorted(rows, key=lambda r: (r.namespace, r.pod))),
            aggregates=tuple(aggregates),
            pods_matched=matched,
            pods_without_cgroup=len(pods) - matched,
            cgroups_without_pod=sum(1 for uid in tick.pods if uid not in pods),
            history_bytes=history_bytes,
            history_series=history_series,
            pressure=tick.pressure,
            pressure_rates=tick.pressure_rates,
        )


async def run_agent(agent: Agent, stop: asyncio.Event, *, config_file: str | None = None,
                    overrides: Callable[[AgentConfig], AgentConfig] | None = None,
                    reload_seconds: float | None = None) -> None:
    """Serve HTTP and run the jobs until ``stop`` is set; with ``config_file``, reload it when it changes.

    ``overrides`` re-applies the command line's settings to every reloaded file; ``reload_seconds`` is how
    often the file is looked at (``agent.reload.POLL_SECONDS`` by default).
    """
    from aiohttp import web
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    from agent.reload import POLL_SECONDS, ConfigReloader
    from agent.server import make_app, make_debug_app

    cfg = agent.config
    await asyncio.to_thread(agent.start)
    runners = [web.AppRunner(make_app(agent), access_log=None)]
    sites = [(cfg.listen_address, cfg.port)]
    if cfg.debug_port:
        runners.append(web.AppRunner(make_debug_app(agent), access_log=None))
        sites.append((cfg.debug_address, cfg.debug_port))
    for runner, (address, port) in zip(runners, sites, strict=True):
        await runner.setup()
        await web.TCPSite(runner, address, port).start()
    log.info("agent for node %s serving on %s:%d%s", agent.node_name, cfg.listen_address, cfg.port,
             f", debug endpoints on {cfg.debug_address}:{cfg.debug_port}" if cfg.debug_port else "")
    scheduler = AsyncIOScheduler()
    common_args: dict[str, Any] = {"max_instances": 1, "coalesce": True, "misfire_grace_time": None}
    scheduler.add_job(agent.collect_once, "interval", seconds=cfg.collect_interval_seconds, id="collect",
                      next_run_time=_now_dt(), **common_args)
    if agent.reporter is not None:
        scheduler.add_job(agent.report_if_due, "interval", seconds=1.0, id="report", **common_args)
    if agent.runtime is not None:
        scheduler.add_job(agent.waterline_once, "interval", seconds=cfg.waterline.interval_seconds, id="waterline",
                          **common_args)
    if config_file is not None:
        def reschedule(job: str, seconds: float) -> None:
            scheduler.reschedule_job(job, trigger="interval", seconds=seconds)

        reloader = ConfigReloader(agent, config_file, overrides=overrides or (lambda c: c), reschedule=reschedule)
        reloader.check()  # primes the file's version: what the agent started with is not a change
        scheduler.add_job(reloader.check, "interval", seconds=reload_seconds or POLL_SECONDS, id="config",
                          **common_args)
    scheduler.start()
    try:
        await stop.wait()
    finally:
        scheduler.shutdown(wait=False)
        for runner in runners:
            await runner.cleanup()
        await asyncio.to_thread(agent.stop)


def _now_dt() -> Any:
    from datetime import datetime

    return datetime.now().astimezone()
