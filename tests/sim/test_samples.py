"""The simulated agents' sample table models the agent's own store exactly: every report they write is, JSON byte
for byte and as the scheduler parses it, what ``build_nodemetric_status`` makes from a ``UsageStore`` per node fed
the same samples, whether built on time or late, as pods come and go, slots are reused and the table's rows move."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from agent.nodemetric import MetricCollectPolicy, PodMeta, UsageStore, build_nodemetric_status
from common.clock import FakeClock
from common.cluster import WatchEvent
from common.cluster.memory import MemoryCluster
from common.objects import NodeMetricView
from sim.agents import SimAgents
from sim.model import NodeSpec
from sim.samples import SampleTable

GiB = 1024**3
# CPU cores that take every branch of the truncation: fractions, whole cores, zero, values under a millicore
CORES = [0.0, 1.0, 2.0, 0.0004, 0.9999, 1.2345, 3.000001, 7.5]
BYTES = [0.0, 1024.0, 3 * 1024.0 + 0.5, float(GiB), 123456789.25, 2.0**33 + 7]


def _pick(rng: np.random.Generator, awkward: list[float], scale: float) -> float:
    return float(rng.choice(awkward)) if rng.random() < 0.3 else float(rng.random() * scale)


class _Pods:
    """Pods coming and going on ``nodes`` nodes, each with a fresh UID and a random name and namespace."""

    def __init__(self, rng: np.random.Generator, nodes: int) -> None:
        self.rng = rng
        self.nodes = nodes
        self.running: dict[str, tuple[int, PodMeta]] = {}
        self.made = 0

    def step(self, arrivals: int) -> None:
        for uid in [u for u in self.running if self.rng.random() < 0.15]:
            del self.running[uid]
        for _ in range(arrivals):
            self.made += 1
            uid = f"uid-{self.made}"
            meta = PodMeta(str(self.rng.choice(["a", "b"])), f"p{self.rng.integers(1000)}-{self.made}", uid,
                           "koord-prod", "LS")
            self.running[uid] = (int(self.rng.integers(self.nodes)), meta)

    def on(self, node: int) -> list[PodMeta]:
        return [meta for n, meta in self.running.values() if n == node]


def _stored(cluster: MemoryCluster) -> dict[str, dict[str, Any]]:
    """The NodeMetrics as a shared informer (the scheduler's cache) receives them."""
    got: dict[str, dict[str, Any]] = {}

    def handle(event: WatchEvent) -> None:
        got[event.object["metadata"]["name"]] = event.object

    cluster.informer("NodeMetric", handle, shared=True).start()
    return got


@pytest.mark.parametrize(("tick", "window", "seed"), [(60.0, 300, 1), (60.0, 120, 2), (30.0, 300, 3), (45.0, 60, 4),
                                                      (60.0, 30, 5)])
def test_every_report_is_the_stores(tick: float, window: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 3
    policy = MetricCollectPolicy(aggregate_duration_seconds=window, durations=())
    nodes = [NodeSpec(f"n{i}", 8000, 32 * GiB) for i in range(n)]
    cluster = MemoryCluster(clock=FakeClock(0.0))
    agents = SimAgents(cluster, nodes, policy, tick_seconds=tick)
    agents.create_nodemetrics()
    seen = _stored(cluster)
    stores = [UsageStore(policy, interval_seconds=tick) for _ in nodes]
    pods = _Pods(rng, n)
    expected: dict[str, dict[str, Any]] = {}
    for k in range(160):   # past the table's buffer, so its rows move to the front; past 64 pods, so it grows
        t = 1000.0 + k * tick
        pods.step(int(rng.integers(0, 4)))
        running = list(pods.running.items())
        node_cpu = np.array([_pick(rng, CORES, 8.0) + 8.0 for _ in nodes])
        node_mem = np.array([_pick(rng, BYTES, 2.0**34) for _ in nodes])
        cpu = np.array([_pick(rng, CORES, 2.0) for _ in running])
        mem = np.array([_pick(rng, BYTES, 2.0**32) for _ in running])
        where = np.array([node for _, (node, _) in running], dtype=np.int64)
        agents.record(t, node_cpu, node_mem, where, [uid for uid, _ in running], cpu, mem)
        for i, store in enumerate(stores):
            store.record_usage(t, float(node_cpu[i]), float(node_mem[i]),
                               [(uid, float(c), float(m)) for (uid, (node, _)), c, m in
                                zip(running, cpu.tolist(), mem.tolist(), strict=True) if node == i])
        for i in np.flatnonzero(rng.random(n) < 0.6).tolist():
            metas = pods.on(i)
            if metas and rng.random() < 0.2:   # a pod never recorded (bound after the tick's samples)
                metas.append(PodMeta("a", f"new-{k}", f"unseen-{k}"))
            agents.report(t, i, metas)
            expected[nodes[i].name] = build_nodemetric_status(stores[i], t, policy, metas, typed=True)
        if rng.random() < 0.4:
            agents.publish()
            _assert_same(seen, expected)
    agents.publish()
    _assert_same(seen, expected)
    assert agents.built > 100


def _assert_same(seen: dict[str, dict[str, Any]], expected: dict[str, dict[str, Any]]) -> None:
    for name, status in expected.items():
        obj = seen[name]
        assert json.dumps(obj["status"]) == json.dumps(status)
        view = NodeMetricView.parse(obj)
        alone = NodeMetricView.parse({**obj, "status": status})
        assert view == alone and view.node_usage == alone.node_usage and tuple(view.pods) == tuple(alone.pods)


def test_a_pod_slot_is_released_once_its_samples_left_the_table_and_reused() -> None:
    table = SampleTable(1, 3)
    one = np.ones(1)
    table.record(0.0, one, one, np.zeros(1, dtype=np.int64), ["a"], one, one)
    for t in (1.0, 2.0, 3.0):
        table.record(t, one, one, np.zeros(0, dtype=np.int64), [], np.zeros(0), np.zeros(0))
    means = table.means([(3.0, 0, ["a"])], 10.0)
    assert means.pod_counts.tolist() == [0] and means.node_counts.tolist() == [3]   # rows 1, 2, 3 kept
    table.record(4.0, one, one, np.zeros(1, dtype=np.int64), ["b"], 2 * one, one)
    means = table.means([(4.0, 0, ["a", "b"])], 10.0)
    assert means.pod_counts.tolist() == [0, 1] and means.pods[1].tolist() == [2.0, 1.0]
