"""Contention, throttling and their prices, pinned on hand-computed scenarios."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sim.contention import MAX_INFLATION, advance_work, cpu_shares, fair_share, latency_inflation
from sim.measures import measure
from sim.model import NodeSpec, PodKind, PodSpec, UsageProfile, Workload
from sim.run import Policy, SimOptions, Simulation
from sim.synthetic import SyntheticConfig, generate
from tests.sim.test_run import RoundRobinBinder

GiB = 1024**3


def test_shares_are_the_kubelets() -> None:
    # MilliCPUToShares: request × 1024 / 1000, at least 2 (a BestEffort pod's whole share).
    assert cpu_shares(np.array([0.0, 1.0, 1000.0, 2500.0])).tolist() == [2.0, 2.0, 1024.0, 2560.0]


def test_a_node_with_room_serves_every_demand() -> None:
    node = np.array([0, 0, 1])
    served = fair_share(node, np.array([1000.0, 500.0, 3000.0]), np.array([1024.0, 2.0, 2.0]),
                        np.array([2000.0, 4000.0]))
    assert served.tolist() == [1000.0, 500.0, 3000.0]


def test_a_saturated_node_shares_by_requests_and_best_effort_gets_what_is_left() -> None:
    # 3000m for: a service asking 1000m wanting 2500m, a batch pod asking 1000m wanting 500m, a best-effort pod
    # wanting 1000m.  The batch pod wants less than its share and keeps it; the other 2500m go 1024 : 2.
    node = np.zeros(3, dtype=np.int64)
    wanted = np.array([2500.0, 500.0, 1000.0])
    served = fair_share(node, wanted, cpu_shares(np.array([1000.0, 1000.0, 0.0])), np.array([3000.0]))
    assert served == pytest.approx([2500.0 * 1024 / 1026, 500.0, 2500.0 * 2 / 1026])
    assert served.sum() == pytest.approx(3000.0)


def test_latency_inflation_is_mm1_times_the_denied_demand_and_capped() -> None:
    rho = np.array([0.0, 0.5, 0.5, 0.75, 0.999])
    demand = np.array([100.0, 100.0, 200.0, 0.0, 100.0])
    served = np.array([100.0, 100.0, 100.0, 0.0, 100.0])
    assert latency_inflation(rho, demand, served) == pytest.approx([1.0, 2.0, 4.0, 4.0, MAX_INFLATION])


def test_a_throttled_job_finishes_later_by_the_work_it_was_denied() -> None:
    # A 600 s job wanting 2000m under a quota of 500m runs at a quarter of its speed: 540 s of work left after its
    # first (full-speed) 60 s step take 2160 s, so it ends at 60 + 2160 = 2220 s instead of 600 s.
    left, t, step = np.array([540.0]), 60.0, 60.0
    ends = np.array([np.inf])
    while left[0] > 0:
        left, ends = advance_work(left, np.array([2000.0]), np.minimum(np.array([2000.0]), 500.0), t, step)
        t += step
    assert ends[0] == pytest.approx(2220.0)


def _two_jobs_on_one_node() -> Workload:
    flat = UsageProfile(cpu_base_milli=2000.0, memory_base_bytes=float(GiB))
    jobs = tuple(PodSpec(f"job-{i}", PodKind.BATCH, 0.0, 600.0, 1000, GiB, flat, namespace="batch") for i in range(2))
    return Workload("saturated", (NodeSpec("n0", 2000, 8 * GiB),), jobs)


def test_contention_stretches_jobs_and_shows_in_the_measures() -> None:
    """Two 600 s jobs wanting 2000m each on a 2000m node get 1000m each: after the first step (run at full speed,
    before any usage sample) 540 s of work take 1080 s, so both end at 1140 s: a stretch of 1.9."""
    opts = SimOptions(hours=0.5, tick_seconds=60, system_cpu_fraction=0.0, system_memory_bytes=0)
    simulation = Simulation(_two_jobs_on_one_node(), Policy("rr", {}), opts, scheduler_factory=RoundRobinBinder)
    rec = simulation.run()
    assert rec.running[:20].tolist() == [2] * 19 + [0]  # finished at t = 1140 s, the 20th step
    assert rec.stretch["batch"] == pytest.approx([1.9, 1.9])
    assert rec.cpu_util[0, 1:19] == pytest.approx(1.0)
    m = measure(rec)
    assert m.batch_stretch_p50 == m.batch_stretch_p95 == pytest.approx(1.9)
    assert m.batch_cpu_served_percent == pytest.approx(50.0)
    assert m.cpu_demand_served_percent == pytest.approx(50.0)
    assert m.service_latency_inflation_p99 == 1.0  # no service ran
    assert m.pods_pending_end == 0


def test_a_service_on_a_busy_node_sees_its_utilisation() -> None:
    """A service wanting 1000m next to a best-effort pod wanting 2000m on a 4000m node: ρ = 0.75, inflation 4."""
    flat = UsageProfile(cpu_base_milli=1000.0, memory_base_bytes=float(GiB))
    pods = (
        PodSpec("svc", PodKind.SERVICE, 0.0, None, 1000, GiB, flat, namespace="prod"),
        PodSpec("be", PodKind.BEST_EFFORT, 0.0, 3600.0, 0, 0, UsageProfile(cpu_base_milli=2000.0)),
    )
    w = Workload("busy", (NodeSpec("n0", 4000, 8 * GiB),), pods)
    opts = SimOptions(hours=0.25, tick_seconds=60, system_cpu_fraction=0.0, system_memory_bytes=0)
    rec = Simulation(w, Policy("rr", {}), opts, scheduler_factory=RoundRobinBinder).run()
    assert rec.inflation.tolist() == pytest.approx([4.0] * (opts.ticks - 1))  # sampled from the second step
    assert measure(rec).service_latency_inflation_mean == pytest.approx(4.0)


def _running_state(simulation: Simulation) -> dict[str, float]:
    """Running pods (by workload name) and how long each still runs, as of the simulation's clock."""
    now = simulation.clock.now() - simulation.options.start_time
    return {p.spec.name: float(simulation._ends[p.index] - now) for p in simulation._running.values()}


def test_a_warm_start_is_the_cold_runs_state_at_that_hour() -> None:
    """From 11:00 the cluster holds what a run from midnight holds at 11:00: the same pods running, each with the
    same run time left.  Nodes are big enough that nothing waits or contends, so placement cannot matter; a pod that
    arrived between two steps started at the next one in the cold run, so it may end up to a step later there."""
    day = generate(SyntheticConfig(nodes=6, hours=24, seed=3))
    big = tuple(replace(n, cpu_milli=1_000_000, cpu_capacity_milli=1_000_000, max_pods=1000) for n in day.nodes)
    day = replace(day, nodes=big)
    hour, step = 11.0, 60.0
    quiet = {"tick_seconds": step, "system_cpu_fraction": 0.0}
    cold = Simulation(day, Policy("rr", {}), SimOptions(hours=hour + step / 3600, **quiet),
                      scheduler_factory=RoundRobinBinder)
    cold.run()
    warm = Simulation(day.window(hour * 3600, 24 * 3600), Policy("rr", {}),
                      SimOptions(hours=step / 3600, start_hour=hour, **quiet), scheduler_factory=RoundRobinBinder)
    warm.run()
    cold_state, warm_state = _running_state(cold), _running_state(warm)
    assert len(cold_state) > 50
    assert set(cold_state) == set(warm_state)
    services = {p.name for p in day.pods if p.kind is PodKind.SERVICE}
    assert services & set(cold_state)  # services are deployed from the first step
    for name, left in cold_state.items():
        assert 0 <= left - warm_state[name] < step, name
