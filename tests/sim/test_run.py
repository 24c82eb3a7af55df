"""The simulation loop: lifecycle, agents, evictions, determinism, and that the simulated parts are the real ones."""

from __future__ import annotations

import inspect
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import agent.nodemetric
import agent.qos.runtime
import agent.qos.state
import scheduler.engine
import sim.agents
import sim.waterline
from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from common.objects import NodeMetricView
from scheduler.conf import parse_conf
from scheduler.framework.plugin import plugin_builders
from sim.measures import measure
from sim.model import GroupSpec, NodeSpec, PodKind, PodSpec, UsageProfile, Workload
from sim.policies import BUILTIN, CONF_DIR, USAGE_PLUGINS, load_policies, reads_usage
from sim.run import Policy, SimOptions, Simulation, run
from sim.synthetic import SyntheticConfig, generate

GiB = 1024**3


class RoundRobinBinder:
    """A minimal in-test scheduler: binds pending pods to nodes in turn; can evict one pod on request."""

    def __init__(self, cluster: MemoryCluster, conf: Any, clock: FakeClock) -> None:
        self.cluster = cluster
        self.next = 0
        self.evict_at: set[float] = set(conf.get("evict_at", ())) if isinstance(conf, dict) else set()
        self.clock = clock

    def run_once(self) -> Any:
        nodes = [n["metadata"]["name"] for n in self.cluster.list("Node").items]
        placements: dict[str, str | None] = {}
        evictions: list[str] = []
        pods = self.cluster.list("Pod").items
        for pod in pods:
            meta = pod["metadata"]
            if pod["spec"].get("nodeName"):
                continue
            node = nodes[self.next % len(nodes)]
            self.next += 1
            self.cluster.bind(meta["namespace"], meta["name"], node)
            placements[f"{meta['namespace']}/{meta['name']}"] = node
        if self.clock.now() in self.evict_at:
            victim = next(p for p in pods if p["spec"].get("nodeName"))
            self.cluster.evict(victim["metadata"]["namespace"], victim["metadata"]["name"])
            evictions.append(victim["metadata"]["name"])

        class Result:
            pass

        r = Result()
        r.placements, r.evictions, r.pending_messages = placements, evictions, {}  # type: ignore[attr-defined]
        return r


def _tiny_workload() -> Workload:
    nodes = (NodeSpec("n0", 4000, 16 * GiB), NodeSpec("n1", 4000, 16 * GiB))
    prof = UsageProfile(cpu_base_milli=1000.0, memory_base_bytes=float(GiB))
    pods = (
        PodSpec("svc", PodKind.SERVICE, 0.0, None, 1000, GiB, prof, cpu_limit_milli=2000, priority=9500,
                priority_class_name="loadwise-prod", namespace="prod"),
        PodSpec("g-0", PodKind.BATCH, 30.0, 300.0, 1000, GiB, prof, group="g", namespace="batch"),
        PodSpec("g-1", PodKind.BATCH, 30.0, 300.0, 1000, GiB, prof, group="g", namespace="batch"),
        PodSpec("be", PodKind.BEST_EFFORT, 60.0, 600.0, 0, 0, UsageProfile(cpu_base_milli=500.0)),
    )
    return Workload("tiny", nodes, pods, groups=(GroupSpec("g", 2, namespace="batch"),))


def test_lifecycle_with_an_in_test_binder() -> None:
    w = _tiny_workload()
    opts = SimOptions(hours=0.5, tick_seconds=30, system_cpu_fraction=0.0, system_memory_bytes=0)
    simulation = Simulation(w, Policy("rr", {}), opts, scheduler_factory=RoundRobinBinder)
    rec = simulation.run()
    assert (rec.submitted, rec.ran, rec.bindings, rec.pending_end) == (4, 4, 4, 0)
    assert sorted(rec.wait_classes) == ["best-effort", "gang", "gang", "service"]  # one per binding, as waits
    assert 0 < rec.cpu_seconds and rec.session_cpu_seconds.size == rec.session_seconds.size > 0
    # svc runs forever; the gang (t 30..330) and the best-effort pod (t 60..660) come and go.
    assert rec.running.tolist()[:3] == [1, 3, 4]
    assert rec.running[-1] == 1
    assert simulation.cluster.list("PodGroup").items == []  # deleted with its last pod
    pods = simulation.cluster.list("Pod").items
    assert [p["metadata"]["name"] for p in pods] == ["svc"]
    assert pods[0]["status"]["phase"] == "Running"
    assert {c["type"] for c in pods[0]["status"]["conditions"]} >= {"PodScheduled", "Ready"}
    # Node usage = pods' usage (no system overhead here): svc alone on n0 at the end, 1000m of 4000m.
    assert rec.cpu_util[0, -1] == pytest.approx(0.25)
    assert rec.cpu_util[1, -1] == pytest.approx(0.0)


def test_nodemetrics_are_reported_every_interval_on_staggered_phases() -> None:
    w = _tiny_workload()
    opts = SimOptions(hours=0.1, tick_seconds=30, report_interval_seconds=60)
    simulation = Simulation(w, Policy("rr", {}), opts, scheduler_factory=RoundRobinBinder)
    simulation.run()
    metrics = {m["metadata"]["name"]: NodeMetricView.parse(m) for m in simulation.cluster.list("NodeMetric").items}
    # 12 ticks: node 0 reports on even ticks (last at 300 s), node 1 on odd ones (last at 330 s).
    assert metrics["n0"].update_time == opts.start_time + 300
    assert metrics["n1"].update_time == opts.start_time + 330
    assert simulation.agents.reports == 13  # everyone at t = 0, then one node per tick
    assert metrics["n0"].report_interval_seconds == 60
    assert {p.name for p in metrics["n0"].pods} == {"svc", "g-1"}  # bound in turn: svc, g-0, g-1, be


@pytest.mark.parametrize(("tick", "interval"), [(60.0, 60), (30.0, 60), (60.0, 120), (45.0, 60), (60.0, 20)])
def test_agents_report_once_an_interval_on_their_own_phase_before_or_after_the_session(tick: float, interval: int) -> None:
    """Report times are spread evenly over the interval; one in a tick's first half goes before its session, one in
    its second half after it, so the data a session reads is on average half an interval old, as in a cluster."""
    n = 100
    nodes = [NodeSpec(f"n{i}", 4000, 8 * GiB) for i in range(n)]
    agents = sim.agents.SimAgents(MemoryCluster(clock=FakeClock(0.0)), nodes,
                                  agent.nodemetric.MetricCollectPolicy(report_interval_seconds=interval, durations=()),
                                  tick_seconds=tick)
    ticks = 48
    before, after = agents.due(0)
    assert before == list(range(n)) and after == []  # everyone at once on the first tick
    seen: dict[int, list[tuple[float, bool]]] = {i: [] for i in range(n)}  # (tick start, before the session)
    ages = []
    last = dict.fromkeys(range(n), 0.0)  # when the data the scheduler holds for the node was sampled
    for k in range(1, ticks):
        before, after = agents.due(k)
        assert not set(before) & set(after)
        for i in before:
            seen[i].append((k * tick, True))
            last[i] = k * tick
        ages += [k * tick - last[i] for i in range(n)]  # the session runs now
        for i in after:
            seen[i].append((k * tick, False))
            last[i] = k * tick
    per_tick = max(1.0, interval / tick)
    for reports in seen.values():
        # once a tick at most, and about once an interval
        assert len({t for t, _ in reports}) == len(reports)
        assert abs(len(reports) - (ticks - 1) / per_tick) <= 1.0
    # when the interval spans ticks, both kinds happen, and the data is half an interval old on average
    if interval >= tick:
        assert sum(len(r) for r in seen.values()) > 0
        assert any(b for r in seen.values() for _, b in r) and any(not b for r in seen.values() for _, b in r)
        assert np.mean(ages) == pytest.approx(interval / 2, rel=0.1)
    else:
        assert all(b for r in seen.values() for _, b in r)  # a report every tick, before its session


def test_scheduler_eviction_recreates_the_pod() -> None:
    w = _tiny_workload()
    opts = SimOptions(hours=0.1, tick_seconds=30)
    conf = {"evict_at": [opts.start_time + 60]}  # a session runs then: the best-effort pod arrives
    simulation = Simulation(w, Policy("rr", conf), opts, scheduler_factory=RoundRobinBinder)
    rec = simulation.run()
    assert rec.scheduler_evictions == 1 and rec.requeued == 1
    assert rec.bindings == rec.ran + 1  # the replacement was bound again
    names = {p["metadata"]["name"] for p in simulation.cluster.list("Pod").items}
    assert any(n.endswith("-r1") for n in names)


def test_the_simulated_parts_are_the_production_classes() -> None:
    w = generate(SyntheticConfig(nodes=4, hours=0.5, seed=2))
    policy = next(p for p in load_policies(["loadaware-waterline"]))
    opts = SimOptions(hours=0.25)
    simulation = Simulation(w, policy, opts)
    assert type(simulation.scheduler) is scheduler.engine.Scheduler
    assert simulation.waterline is not None
    assert all(type(r) is agent.qos.runtime.WaterlineRuntime for r in simulation.waterline.runtimes)
    assert sim.agents.status_of is agent.nodemetric.status_of  # the agent's own status layout (and test_samples)
    simulation.run()
    # Placement came from the real scheduler through pods/binding.
    assert simulation.cluster.bindings
    # The NodeMetric in the cluster is a report of the node's running pods.
    obj = simulation.cluster.get("NodeMetric", w.nodes[0].name)
    metas = [p.meta for p in simulation._running.values() if p.node == 0]
    assert {p["name"] for p in obj["status"]["podsMetric"]} <= {m.name for m in metas}


def test_only_policies_that_read_usage_run_node_agents() -> None:
    # The built-in plugins that look at NodeMetrics are exactly the ones the simulator starts agents for.
    readers = {name for name, builder in plugin_builders().items()
               if builder.__module__.startswith("scheduler.plugins.")
               and "node_metrics" in inspect.getsource(sys.modules[builder.__module__])}
    assert readers == USAGE_PLUGINS
    agents = {p.name: p.node_agents for p in load_policies(list(BUILTIN))}
    assert agents == {"kube-default": False, "loadaware": True, "loadaware-waterline": True,
                      "loadaware-waterline-capped": True, "loadaware-waterline-strict": True, "requests": False,
                      "binpack": False, "loadaware-rebalance": True}
    # A plugin Loadwise does not ship might read usage: agents run.
    custom = parse_conf({"actions": "allocate", "tiers": [{"plugins": [{"name": "somebody-elses"}]}]},
                        validate_plugins=False)
    assert reads_usage(custom)
    assert not reads_usage(parse_conf({"actions": "allocate", "tiers": [{"plugins": [{"name": "binpack"}]}]}))


def test_the_baseline_without_agents_places_exactly_as_with_them() -> None:
    w = generate(SyntheticConfig(nodes=6, hours=1.0, seed=4))
    opts = SimOptions(hours=1.0, start_hour=13, seed=4)
    baseline = load_policies(["kube-default"])[0]
    bare = Simulation(w, baseline, opts)
    without = bare.run()
    assert bare.agents is None and without.reports == 0
    assert bare.cluster.list("NodeMetric").items == []
    with_agents = run(w, replace(baseline, node_agents=True), opts)
    assert with_agents.reports > 0
    assert np.array_equal(without.cpu_util, with_agents.cpu_util)
    assert np.array_equal(without.pending, with_agents.pending)
    assert without.bindings == with_agents.bindings > 0


def _small(policy: str, waterline: Path | None = None) -> Any:
    """A hot afternoon on 6 nodes: many under-requesting services and best-effort pods, so waterlines act."""
    w = generate(SyntheticConfig(nodes=6, hours=1.5, seed=1, service_request_fraction=0.5, under_requesting_share=0.5,
                                 best_effort_per_node=3.0))
    waterlines = {policy: waterline} if waterline is not None else None
    return run(w, load_policies([policy], waterlines=waterlines)[0], SimOptions(hours=1.5, start_hour=12.5, seed=1))


def _eager_waterline(tmp_path: Path) -> Path:
    """The shipped policies with an eviction line low enough to evict in a short run."""
    text = (CONF_DIR / "waterline.yaml").read_text()
    text = re.sub(r'(cpu_total_utilization, value: )"\d+"', r'\1"45"', text)
    text = re.sub(r"avoidanceThreshold: \d+", "avoidanceThreshold: 2", text, count=1)
    assert '"45"' in text
    path = tmp_path / "waterline.yaml"
    path.write_text(text)
    return path


@pytest.mark.slow
def test_same_seed_same_numbers() -> None:
    a, b = _small("loadaware-waterline"), _small("loadaware-waterline")
    assert np.array_equal(a.cpu_util, b.cpu_util) and np.array_equal(a.mem_util, b.mem_util)
    assert np.array_equal(a.pending, b.pending) and np.array_equal(a.throttled, b.throttled)
    ma, mb = measure(a).to_json(), measure(b).to_json()
    for timing in ("session_mean_ms", "session_p99_ms", "session_cpu_mean_ms", "per_pod_ms", "wall_seconds",
                   "cpu_seconds"):
        ma.pop(timing)
        mb.pop(timing)
    assert ma == mb


@pytest.mark.slow
def test_skipping_quiet_nodes_changes_no_waterline_decision(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    eager = _eager_waterline(tmp_path)
    skipped = _small("loadaware-waterline", eager)
    monkeypatch.setattr(sim.waterline, "NEAR_FRACTION", 0.0)  # every node near its lines: ticked every time
    always = _small("loadaware-waterline", eager)
    assert skipped.throttled.sum() > 0 and skipped.waterline_evictions > 0  # the engine did act
    assert always.waterline_ticks > skipped.waterline_ticks
    assert np.array_equal(always.cpu_util, skipped.cpu_util)
    assert np.array_equal(always.throttled, skipped.throttled)
    assert always.waterline_evictions == skipped.waterline_evictions


@pytest.mark.slow
def test_refreshing_pod_states_in_place_changes_no_waterline_decision(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    """The engine is handed the same PodState objects, refreshed, tick after tick: it must decide as it did when
    each tick handed it fresh copies (it would not if it kept a pod's state from one tick to the next)."""
    eager = _eager_waterline(tmp_path)
    in_place = _small("loadaware-waterline", eager)
    refresh = Simulation._pod_state

    def copied(self: Simulation, p: Any, cpu: float, mem: float, quotas: Any) -> agent.qos.state.PodState:
        out = refresh(self, p, cpu, mem, quotas)
        return replace(out, containers=tuple(replace(c) for c in out.containers))

    monkeypatch.setattr(Simulation, "_pod_state", copied)
    fresh = _small("loadaware-waterline", eager)
    assert in_place.throttled.sum() > 0 and in_place.waterline_evictions > 0  # the engine did act
    assert np.array_equal(fresh.cpu_util, in_place.cpu_util) and np.array_equal(fresh.mem_util, in_place.mem_util)
    assert np.array_equal(fresh.throttled, in_place.throttled) and np.array_equal(fresh.pending, in_place.pending)
    assert fresh.waterline_evictions == in_place.waterline_evictions


def test_report_plots_run_on_the_simulated_time_of_day() -> None:
    import matplotlib.pyplot as plt

    from sim.html import clock_axis, plot_hours

    w = generate(SyntheticConfig(nodes=2, hours=1.0, seed=1))
    rec = run(w, load_policies(["requests"])[0], SimOptions(hours=1.0, start_hour=23.5, seed=1))
    hours = plot_hours(rec)
    assert hours[0] == 23.5 and hours[-1] == 23.5 + (rec.ticks - 1) * rec.tick_seconds / 3600
    fig, ax = plt.subplots()
    clock_axis(ax)
    fmt = ax.xaxis.get_major_formatter()
    assert [fmt(x, 0) for x in (23.5, 24.0, 24.25)] == ["23:30", "00:00", "00:15"]  # wraps at midnight
    plt.close(fig)


class _MetricsReader:
    """The production scheduler, also keeping the NodeMetrics its cache holds as each session opens."""

    def __init__(self, cluster: MemoryCluster, conf: Any, clock: FakeClock) -> None:
        self.inner = scheduler.engine.Scheduler(cluster, conf, clock=clock)
        self.seen: list[dict[str, NodeMetricView]] = []

    def run_once(self) -> Any:
        self.inner.start()
        self.seen.append({m.name: m for m in self.inner.cache.snapshot().node_metrics.values()})
        return self.inner.run_once()


def _reading_run(defer: bool) -> tuple[Simulation, Any]:
    w = generate(SyntheticConfig(nodes=6, hours=2.0, seed=3))
    opts = SimOptions(hours=2.0, start_hour=2, seed=3)
    simulation = Simulation(w, load_policies(["loadaware"])[0], opts, scheduler_factory=_MetricsReader)
    assert simulation.agents is not None
    simulation.agents.defer = defer
    return simulation, simulation.run()


def test_reports_nobody_reads_are_not_built_and_every_session_sees_the_same() -> None:
    lazy, lazy_rec = _reading_run(True)
    eager, eager_rec = _reading_run(False)
    assert lazy.agents is not None and eager.agents is not None
    # Night: ticks without a pending pod, whose reports the node's next one replaces unread.
    assert lazy.agents.reports == eager.agents.reports == eager.agents.built > lazy.agents.built
    assert (lazy_rec.reports, lazy_rec.reports_built) == (lazy.agents.reports, lazy.agents.built)
    seen_lazy, seen_eager = lazy.scheduler.seen, eager.scheduler.seen  # type: ignore[attr-defined]
    assert len(seen_lazy) == len(seen_eager) > 0
    assert seen_lazy == seen_eager  # the views, field by field (raw aside), at every session
    assert [{k: m.raw["status"] for k, m in s.items()} for s in seen_lazy] == \
        [{k: m.raw["status"] for k, m in s.items()} for s in seen_eager]
    assert np.array_equal(lazy_rec.placed, eager_rec.placed) and lazy_rec.bindings == eager_rec.bindings
    # The run ends with every report written.
    assert [m["status"] for m in lazy.cluster.list("NodeMetric").items] == \
        [m["status"] for m in eager.cluster.list("NodeMetric").items]


def test_a_report_built_a_tick_late_is_the_one_built_on_time() -> None:
    nodes = [NodeSpec("n0", 4000, 8 * GiB)]
    policy = agent.nodemetric.MetricCollectPolicy(durations=())
    cluster = MemoryCluster(clock=FakeClock(0.0))
    agents = sim.agents.SimAgents(cluster, nodes, policy, tick_seconds=60)
    agents.create_nodemetrics()
    store = agent.nodemetric.UsageStore(policy, interval_seconds=60)  # the real agent's, fed the same samples
    meta = agent.nodemetric.PodMeta("ns", "p", "uid-p", "koord-prod", "LS")

    def record(t: float, node_cpu: float, node_mem: float, pod_cpu: float, pod_mem: float) -> None:
        agents.record(t, np.array([node_cpu]), np.array([node_mem]), np.zeros(1, dtype=np.int64), ["uid-p"],
                      np.array([pod_cpu]), np.array([pod_mem]))
        store.record_usage(t, node_cpu, node_mem, [("uid-p", pod_cpu, pod_mem)])

    for k in range(8):
        record(60.0 * k, 1.0 + 0.1 * k, GiB, 0.5 + 0.05 * k, GiB / 2)
    on_time = agent.nodemetric.build_nodemetric_status(store, 420.0, policy, [meta])
    agents.report(420.0, 0, [meta])
    assert agents.built == 0
    record(480.0, 3.0, 2 * GiB, 2.5, GiB)  # a later sample, outside the window
    agents.publish()
    assert agents.built == 1
    assert cluster.get("NodeMetric", "n0")["status"] == on_time
    # A report still unbuilt when its node records a second time is built first, from the samples it covers.
    agents.report(480.0, 0, [meta])
    on_time = agent.nodemetric.build_nodemetric_status(store, 480.0, policy, [meta])
    record(540.0, 0.5, GiB, 0.1, GiB)
    assert agents.built == 1
    record(600.0, 0.5, GiB, 0.1, GiB)
    assert agents.built == 2
    assert cluster.get("NodeMetric", "n0")["status"] == on_time
