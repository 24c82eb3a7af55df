"""The rebalancer daemon's HTTP surface: /metrics from its registry, /healthz, and /readyz on the cache."""

from __future__ import annotations

from aiohttp.test_utils import TestClient, TestServer

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from rebalancer.daemon import RebalancerMetrics
from rebalancer.server import make_app
from scheduler.cache import SchedulerCache


async def test_metrics_health_and_readiness() -> None:
    cluster = MemoryCluster(clock=FakeClock())
    cache = SchedulerCache(cluster, FakeClock())
    metrics = RebalancerMetrics()
    metrics.evictions.labels("evicted").inc(2)
    client = TestClient(TestServer(make_app(metrics, cache)))
    await client.start_server()
    try:
        body = await (await client.get("/metrics")).text()
        assert 'loadwise_rebalancer_evictions_total{result="evicted"} 2.0' in body
        assert (await client.get("/healthz")).status == 200
        cache.start()  # synced at once on the embedded cluster
        ready = await client.get("/readyz")
        assert ready.status == 200 and await ready.text() == "ok"
        cache.stop()
        cache._informers.append(_NeverSynced())
        assert (await client.get("/readyz")).status == 503
    finally:
        await client.close()


class _NeverSynced:
    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None

    def has_synced(self) -> bool:
        return False
