"""The adapter on the embedded cluster: reserve, evict through the Eviction API, report; 429 is no move."""

from __future__ import annotations

from typing import Any

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from common.reservation import RESERVATIONS_ANNOTATION, parse_reservations
from rebalancer.args import parse_rebalance_args
from rebalancer.daemon import CONDITION_TYPE, RebalancerDaemon
from rebalancer.plan import Rebalancer
from scheduler.cache import SchedulerCache
from tests.rebalancer.helpers import T0, Cluster, args, conf


def _daemon(pdb: bool = False, **kw: Any) -> tuple[RebalancerDaemon, MemoryCluster]:
    c = Cluster(cpu=10, memory=32)
    for n in ("hot", "cool"):
        c.node(n)
    c.pod("a", "hot", 4000, labels={"app": "a"})
    c.pod("b", "hot", 3000)
    clock = FakeClock(T0 + 10)
    cluster = MemoryCluster(clock=clock)
    for obj in c.objects():
        cluster.create(obj["kind"], obj)
    if pdb:
        cluster.create("PodDisruptionBudget", {
            "kind": "PodDisruptionBudget", "metadata": {"name": "a", "namespace": "default"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "a"}}}})
    cache = SchedulerCache(cluster, clock)
    cache.start()
    rb = Rebalancer(parse_rebalance_args(args(**kw)), conf())
    return RebalancerDaemon(cluster, rb, clock, cache.snapshot), cluster


def _sample(d: RebalancerDaemon, name: str, **labels: str) -> float:
    value = d.metrics.registry.get_sample_value(name, labels or None)
    return value or 0.0


def test_accepted_eviction_reserves_reports_and_cools_down() -> None:
    d, cluster = _daemon()
    result = d.run_once()
    assert [m.pod for m in result.evicted] == ["default/a"]
    assert cluster.evictions == ["default/a"]
    node = cluster.get("Node", "cool")
    (res,) = parse_reservations(node["metadata"]["annotations"], node="cool")
    assert (res.pod, res.source, res.usage["cpu"], res.until) == ("default/a", "hot", 4000, T0 + 10 + 300)
    (event,) = [e for e in cluster.events if e.reason == "Rebalanced"]
    assert event.name == "a" and "cpu usage(70%)>threshold(65%)" in event.message and "expected on cool" in event.message
    cond = next(c for c in cluster.get("Node", "hot")["status"]["conditions"] if c["type"] == CONDITION_TYPE)
    assert (cond["status"], cond["reason"]) == ("True", "HotNodeRelieved")
    assert _sample(d, "loadwise_rebalancer_evictions_total", result="evicted") == 1
    assert _sample(d, "loadwise_rebalancer_moved_cpu_millicores_total") == 4000
    assert _sample(d, "loadwise_rebalancer_nodes", **{"class": "high"}) == 1


def test_pdb_refusal_is_not_a_move() -> None:
    d, cluster = _daemon(pdb=True)
    result = d.run_once()
    assert [m.pod for m in result.refused] == ["default/a"]
    assert result.evicted == [] and cluster.evictions == []
    assert RESERVATIONS_ANNOTATION not in (cluster.get("Node", "cool")["metadata"].get("annotations") or {})
    assert [e.type for e in cluster.events if e.reason == "RebalanceRefused"] == ["Warning"]
    assert _sample(d, "loadwise_rebalancer_evictions_total", result="refused") == 1
    assert d.rebalancer.relieved == {}  # no cool-down started: the next round may try again


def test_dry_run_writes_nothing() -> None:
    d, cluster = _daemon(dryRun=True)
    result = d.run_once()
    assert [m.pod for m in result.plan.moves] == ["default/a"]
    assert cluster.evictions == [] and cluster.events == []
    assert RESERVATIONS_ANNOTATION not in (cluster.get("Node", "cool")["metadata"].get("annotations") or {})
    assert _sample(d, "loadwise_rebalancer_evictions_total", result="planned") == 1
