"""Property: over random clusters, every pod the rebalancer evicts has a destination the next scheduling session
accepts: with the reservations the rebalancer wrote in force, that session binds the pod's replacement, to a node
other than its source that was not hot, and its expected destination passes every filter."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from rebalancer.args import parse_rebalance_args
from rebalancer.classify import NodeClass
from rebalancer.daemon import RebalancerDaemon
from rebalancer.destination import pending_copy
from rebalancer.plan import Rebalancer
from scheduler.cache import SchedulerCache
from scheduler.explain import explain
from scheduler.framework.snapshot import DEFAULT_SCHEDULER_NAME
from tests.rebalancer.helpers import GI, T0, Cluster, args, conf

_pod = st.tuples(st.integers(100, 4000), st.sampled_from(["100m", "500m", "1", "2", "4"]),
                 st.sampled_from([None, 5500, 9500]))
_node = st.tuples(st.sampled_from([4, 8, 16]), st.lists(_pod, max_size=6))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_node, min_size=2, max_size=6), st.integers(1, 3))
def test_every_eviction_lands_where_the_next_session_accepts_it(nodes: list[tuple[int, list[tuple[int, str, int | None]]]],
                                                                per_node: int) -> None:
    c = Cluster()
    for i, (cores, pods) in enumerate(nodes):
        name = f"n{i}"
        c.node(name)
        c.nodes[name]["status"]["allocatable"]["cpu"] = str(cores)
        c.nodes[name]["status"]["capacity"]["cpu"] = str(cores)
        for j, (milli, request, priority) in enumerate(pods):
            c.pod(f"p{i}-{j}", name, milli, GI // 2, request=request, priority=priority)
    clock = FakeClock(T0 + 10)
    cluster = MemoryCluster(clock=clock)
    for obj in c.objects():
        cluster.create(obj["kind"], obj)
    cache = SchedulerCache(cluster, clock)
    cache.start()
    rb = Rebalancer(parse_rebalance_args(args(maxEvictionsPerNode=per_node)), conf())
    before = cache.snapshot()
    result = RebalancerDaemon(cluster, rb, clock, cache.snapshot).run_once()
    hot = {n.name for n in result.plan.nodes if n.kind is NodeClass.HIGH}
    if not result.evicted:
        return
    after = cache.snapshot()
    originals = {p.key: p for p in before.pods}
    for m in result.evicted:
        trial = replace(after, pods=[*after.pods, pending_copy(originals[m.pod], DEFAULT_SCHEDULER_NAME, T0 + 20)])
        report = explain(trial, conf(), clock=FakeClock(T0 + 20))
        node = report["placements"].get(m.pod)
        assert node is not None, f"{m.pod} found no node: {report['pods'][m.pod]['message']}"
        assert node != m.source and node not in hot
        assert node == m.destination, f"{m.pod} went to {node}, not to its reserved {m.destination}"
