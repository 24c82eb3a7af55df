"""The synthetic generator's determinism and statistics, and the usage model."""

from __future__ import annotations

import numpy as np
import pytest

from sim.model import DAY_SECONDS, GroupSpec, NodeSpec, PodKind, PodSpec, UsageProfile, Workload
from sim.synthetic import BATCH_PRIORITY, FREE_PRIORITY, NODE_TYPES, PROD_PRIORITY, SyntheticConfig, generate
from sim.usage import UsageModel


@pytest.fixture(scope="module")
def day() -> Workload:
    return generate(SyntheticConfig(nodes=100, hours=24, seed=7))


def test_same_seed_same_workload_other_seed_differs() -> None:
    a = generate(SyntheticConfig(nodes=20, hours=4, seed=3))
    b = generate(SyntheticConfig(nodes=20, hours=4, seed=3))
    c = generate(SyntheticConfig(nodes=20, hours=4, seed=4))
    assert a.pods == b.pods and a.nodes == b.nodes and a.groups == b.groups
    assert a.pods != c.pods


def test_node_mix_follows_the_shares(day: Workload) -> None:
    assert len(day.nodes) == 100
    counts = {t[0]: 0 for t in NODE_TYPES}
    for n in day.nodes:
        counts[n.labels["node.kubernetes.io/instance-type"]] += 1
        assert 0 < n.cpu_milli < n.capacity_cpu and 0 < n.memory_bytes < n.capacity_memory
    assert counts == {name: round(share * 100) for name, _, _, share in NODE_TYPES}


def _concurrent(pods: list[PodSpec], t: float) -> list[PodSpec]:
    return [p for p in pods if p.arrival <= t < p.arrival + (p.duration if p.duration is not None else np.inf)]


def test_request_budgets_relative_to_the_cluster(day: Workload) -> None:
    alloc = sum(n.cpu_milli for n in day.nodes)
    services = [p for p in day.pods if p.kind is PodKind.SERVICE]
    batch = [p for p in day.pods if p.kind is PodKind.BATCH]
    svc_share = [sum(p.cpu_request_milli for p in _concurrent(services, t)) / alloc for t in (4 * 3600, 12 * 3600, 20 * 3600)]
    assert all(0.4 < s < 0.65 for s in svc_share), svc_share
    batch_share = np.mean([sum(p.cpu_request_milli for p in _concurrent(batch, t)) / alloc
                           for t in np.arange(4, 24, 2) * 3600.0])
    assert 0.12 < batch_share < 0.3, batch_share


def test_kinds_priorities_and_requests(day: Workload) -> None:
    for p in day.pods:
        if p.kind is PodKind.SERVICE:
            assert p.priority == PROD_PRIORITY and p.cpu_request_milli > 0 and p.cpu_limit_milli > p.cpu_request_milli
        elif p.kind is PodKind.BATCH:
            assert p.priority == BATCH_PRIORITY and p.cpu_request_milli > 0
        else:
            assert p.priority == FREE_PRIORITY
            assert p.cpu_request_milli == p.memory_request_bytes == p.cpu_limit_milli == 0  # BestEffort
    assert [p.arrival for p in day.pods] == sorted(p.arrival for p in day.pods)
    assert all(0 <= p.arrival < 24 * 3600 for p in day.pods)


def test_usage_ratios_over_and_under_state_requests(day: Workload) -> None:
    apps: dict[str, float] = {}
    for p in day.pods:
        if p.kind is PodKind.SERVICE:
            mean_use = p.usage.cpu_base_milli * (1 + 0.5 * p.usage.cpu_amplitude)
            apps[p.labels["app"]] = mean_use / p.cpu_request_milli
    ratios = np.array(list(apps.values()))
    under = float((ratios > 1.0).mean())
    assert 0.08 < under < 0.35, under  # about one app in five uses more than it asks for
    assert 0.3 < float(np.median(ratios)) < 0.6  # the typical app over-requests
    batch = np.array([p.usage.cpu_base_milli / p.cpu_request_milli for p in day.pods if p.kind is PodKind.BATCH])
    assert 0.6 <= batch.min() and batch.max() <= 1.15


def test_gangs_have_min_member_pods_arriving_together(day: Workload) -> None:
    assert day.groups
    members: dict[str, list[PodSpec]] = {}
    for p in day.pods:
        if p.group:
            members.setdefault(p.group, []).append(p)
    for g in day.groups:
        pods = members[g.name]
        assert len(pods) == g.min_member >= 2
        assert len({p.arrival for p in pods}) == 1 and len({p.duration for p in pods}) == 1
    share = len(day.groups) / len({p.labels["job"] for p in day.pods if p.kind is PodKind.BATCH})
    assert 0.2 < share < 0.4


def test_workload_validation() -> None:
    node = NodeSpec("n", 1000, 1 << 30)
    pod = PodSpec("p", PodKind.BATCH, 0.0, 60.0, 100, 1 << 20, UsageProfile(100.0), group="missing")
    with pytest.raises(ValueError, match="unknown group"):
        Workload("w", (node,), (pod,))
    with pytest.raises(ValueError, match="duplicate node"):
        Workload("w", (node, node), ())


def _one_pod_workload(**usage: float) -> Workload:
    prof = UsageProfile(cpu_base_milli=1000.0, memory_base_bytes=1e9, **usage)  # type: ignore[arg-type]
    pod = PodSpec("p", PodKind.SERVICE, 0.0, None, 1000, 1 << 30, prof, cpu_limit_milli=1500)
    return Workload("w", (NodeSpec("n", 4000, 8 << 30),), (pod,))


def test_diurnal_shape_peaks_at_its_hour_and_averages_one() -> None:
    w = _one_pod_workload(cpu_amplitude=0.5, cpu_peak=14 / 24)
    model = UsageModel(w, seed=1, tick_seconds=30)
    idx = np.array([0])
    hours = np.arange(0, 24, 0.25)
    levels = np.array([model.shape_factor(idx, h * 3600)[0] for h in hours])
    assert hours[levels.argmax()] == 14.0
    assert abs(levels.mean() - 1.0) < 1e-9
    shifted = UsageModel(w, seed=1, tick_seconds=30, day_offset=14 * 3600)
    assert shifted.shape_factor(idx, 0.0)[0] == pytest.approx(1.5)


def test_cpu_demand_is_reproducible_non_negative_and_capped_by_the_limit() -> None:
    w = _one_pod_workload(cpu_amplitude=0.4, cpu_noise=0.5)
    runs = []
    for _ in range(2):
        model = UsageModel(w, seed=5, tick_seconds=30)
        series = []
        for k in range(200):
            model.advance(k * 30.0)
            series.append(float(model.cpu_demand(np.array([0]), k * 30.0)[0]))
        runs.append(series)
    assert runs[0] == runs[1]
    arr = np.array(runs[0])
    assert arr.min() >= 0 and arr.max() <= 1500
    assert np.corrcoef(arr[:-1], arr[1:])[0, 1] > 0.5  # smooth noise, not white
    with pytest.raises(ValueError):
        model.advance(0.0)


def test_memory_warms_up_over_the_first_hour() -> None:
    w = _one_pod_workload(memory_growth=0.2)
    model = UsageModel(w, seed=1, tick_seconds=30)
    idx = np.array([0, 0, 0])
    mem = model.memory_usage(idx, np.array([0.0, 1800.0, 7200.0]))
    assert mem.tolist() == pytest.approx([1e9, 1.1e9, 1.2e9])


def test_replayed_shape_wraps_and_follows_the_grid() -> None:
    prof = UsageProfile(cpu_base_milli=100.0, shape_index=0, shape_offset=0.0)
    pod = PodSpec("p", PodKind.SERVICE, 0.0, None, 100, 1 << 20, prof)
    w = Workload("w", (NodeSpec("n", 1000, 1 << 30),), (pod,), shapes=np.array([[0.5, 1.5]]), shape_step=60.0)
    model = UsageModel(w, seed=1, tick_seconds=30)
    idx = np.array([0])
    assert [float(model.shape_factor(idx, t)[0]) for t in (0, 59, 60, 119, 120)] == [0.5, 0.5, 1.5, 1.5, 0.5]
    assert DAY_SECONDS == 86_400


def test_a_window_keeps_what_runs_at_its_start_and_shifts_what_comes_later() -> None:
    prof = UsageProfile(cpu_base_milli=100.0)
    pods = (
        PodSpec("done", PodKind.BATCH, 0.0, 100.0, 100, 0, prof),  # finished before the window
        PodSpec("mid", PodKind.BATCH, 50.0, 300.0, 100, 0, prof, group="g"),  # running at 200: 150 s left
        PodSpec("svc", PodKind.SERVICE, 60.0, None, 100, 0, prof),  # runs forever
        PodSpec("later", PodKind.BEST_EFFORT, 250.0, 30.0, 0, 0, prof),  # arrives 50 s into the window
        PodSpec("after", PodKind.BEST_EFFORT, 400.0, 30.0, 0, 0, prof),  # arrives at the window's end
    )
    w = Workload("w", (NodeSpec("n", 1000, 1 << 30),), pods, groups=(GroupSpec("g", 1), GroupSpec("gone", 1)))
    cut = w.window(200.0, 400.0)
    assert [(p.name, p.arrival, p.duration) for p in cut.pods] == [
        ("mid", 0.0, 150.0), ("svc", 0.0, None), ("later", 50.0, 30.0)]
    assert [g.name for g in cut.groups] == ["g"]
    assert cut.name == "w from 0.0555556 h" and w.window(0.0, 400.0).name == "w"
