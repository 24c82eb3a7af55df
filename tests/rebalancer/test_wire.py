"""The rebalancer over real HTTP: a round on a :class:`KubeCluster` against the kmock emulator.

Covers what goes over the wire: the reservation written into the destination's annotations (a merge patch), the
eviction through ``pods/eviction`` (policy/v1), a 429 refusal that is no move (the reservation withdrawn, a
Warning event), the node condition and the Events, and leader election on the rebalancer's own Lease.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from common.clock import FakeClock
from common.cluster.kube import KubeCluster
from common.reservation import RESERVATIONS_ANNOTATION
from loadwise.cmd_rebalancer import DEFAULT_LEASE
from rebalancer.args import parse_rebalance_args
from rebalancer.daemon import CONDITION_TYPE, RebalancerDaemon, RoundResult
from rebalancer.plan import Rebalancer
from scheduler.cache import SchedulerCache
from scheduler.leader import LeaderElector, LeaseConfig
from tests.rebalancer.helpers import T0, Cluster, args, conf
from tests.scheduler.kmock_util import ApiState, events_posted, eventually, kube_cluster, patches, posts

pytestmark = pytest.mark.kmock


@pytest.fixture
async def api(kmock: Any) -> ApiState:
    state = ApiState()
    state.install(kmock)
    return state


def _seed(api: ApiState) -> None:
    c = Cluster(cpu=10, memory=32)
    for n in ("hot", "cool"):
        c.node(n)
    c.pod("a", "hot", 4000)
    c.pod("b", "hot", 3000)
    for obj in c.objects():
        api.seed(obj["kind"], obj)


async def _round(kmock: Any, api: ApiState) -> tuple[RoundResult, KubeCluster]:
    cluster = kube_cluster(kmock, instance="rebalancer-0")
    clock = FakeClock(T0 + 10)
    cache = SchedulerCache(cluster, clock)
    cache.start()
    try:
        await eventually(lambda: cache.has_synced() and len(cache.snapshot().pods) == 2
                         and len(cache.snapshot().node_metrics) == 2)
        daemon = RebalancerDaemon(cluster, Rebalancer(parse_rebalance_args(args()), conf()), clock, cache.snapshot)
        return await asyncio.to_thread(daemon.run_once), cluster
    finally:
        await asyncio.to_thread(cache.stop)


async def test_a_round_reserves_evicts_and_reports_over_http(kmock: Any, api: ApiState) -> None:
    _seed(api)
    result, _ = await _round(kmock, api)
    assert [m.pod for m in result.evicted] == ["default/a"]
    (evict,) = posts(kmock, "/api/v1/namespaces/default/pods/a/eviction")
    assert evict.data["apiVersion"] == "policy/v1" and evict.data["kind"] == "Eviction"
    assert api.get("Pod", "a", "default") is None
    (reserve,) = patches(kmock, "/api/v1/nodes/cool")
    assert reserve.headers["Content-Type"].startswith("application/merge-patch+json")
    (entry,) = json.loads(reserve.data["metadata"]["annotations"][RESERVATIONS_ANNOTATION])
    assert (entry["pod"], entry["source"], entry["usage"]["cpu"]) == ("default/a", "hot", 4000)
    cool = api.get("Node", "cool")
    assert cool is not None and RESERVATIONS_ANNOTATION in cool["metadata"]["annotations"]
    hot = api.get("Node", "hot")
    assert hot is not None
    cond = next(c for c in hot["status"]["conditions"] if c["type"] == CONDITION_TYPE)
    assert cond["status"] == "True"
    (event,) = events_posted(kmock, "Rebalanced", pod="a")
    assert event["type"] == "Normal" and "expected on cool" in event["note"]


async def test_a_429_is_no_move_and_the_reservation_is_withdrawn(kmock: Any, api: ApiState) -> None:
    _seed(api)
    api.pdb_protected.add("default/a")
    result, _ = await _round(kmock, api)
    assert [m.pod for m in result.refused] == ["default/a"] and result.evicted == []
    assert api.get("Pod", "a", "default") is not None
    reserve, withdraw = patches(kmock, "/api/v1/nodes/cool")
    assert RESERVATIONS_ANNOTATION in reserve.data["metadata"]["annotations"]
    assert withdraw.data["metadata"]["annotations"][RESERVATIONS_ANNOTATION] is None
    cool = api.get("Node", "cool")
    assert cool is not None and RESERVATIONS_ANNOTATION not in (cool["metadata"].get("annotations") or {})
    (event,) = events_posted(kmock, "RebalanceRefused", pod="a")
    assert event["type"] == "Warning" and "disruption budget" in event["note"]
    assert patches(kmock, "/api/v1/nodes/hot/status") == []  # nothing moved: no condition


async def test_the_rebalancer_leads_on_its_own_lease(kmock: Any, api: ApiState) -> None:
    clock = FakeClock(T0)
    one, two = (LeaderElector(kube_cluster(kmock, instance=i), clock, LeaseConfig(name=DEFAULT_LEASE, identity=i))
                for i in ("rebalancer-1", "rebalancer-2"))
    scheduler = LeaderElector(kube_cluster(kmock, instance="sched-1"), clock, LeaseConfig(identity="sched-1"))
    assert await asyncio.to_thread(one.try_acquire_or_renew)
    assert not await asyncio.to_thread(two.try_acquire_or_renew)
    assert await asyncio.to_thread(scheduler.try_acquire_or_renew)  # the scheduler's lease is another one
    lease = api.get("Lease", DEFAULT_LEASE, "loadwise-system")
    assert lease is not None and lease["spec"]["holderIdentity"] == "rebalancer-1"
    clock.advance(16)  # rebalancer-1 stopped renewing: its lease expires and the standby takes over
    assert await asyncio.to_thread(two.try_acquire_or_renew)
    lease = api.get("Lease", DEFAULT_LEASE, "loadwise-system")
    assert lease is not None and lease["spec"]["holderIdentity"] == "rebalancer-2"
    assert not one.is_leader()
