"""NodeMetric reporting over real HTTP: the kube backend (official client) against the kmock emulator.

The emulator gains resourceVersions, merge patches and the status subresource from the wire tests'
``ApiState`` reactions; here it additionally fails the first status patches with a 500 so the
reporter's retry is exercised on the wire.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import kmock
import pytest
from kubernetes import client as kclient

from agent.config import AgentConfig
from agent.nodemetric import MetricCollectPolicy, PodMeta, PodUsage, UsageSample, UsageStore, build_nodemetric_status
from agent.reporter import NodeMetricReporter
from common.clock import FakeClock
from common.cluster.kube import KubeCluster
from common.objects import NodeMetricView
from loadwise.cmd_agent import build_agent
from tests.common.test_kube_wire import ApiState, fail

pytestmark = pytest.mark.kmock

FIXTURES = Path(__file__).parent / "fixtures"
G = "0a1b2c3d-0000-4000-8000-000000000001"


class FlakyStatus(ApiState):
    def __init__(self) -> None:
        super().__init__()
        self.fail_status = 0

    def _patch(self, req: kmock.Request, key: tuple[str, str, str], cur: dict[str, Any], kind: str) -> Any:
        if req.subresource == "status" and kind == "NodeMetric" and self.fail_status > 0:
            self.fail_status -= 1
            return fail(500, "InternalError", "etcdserver: request timed out")
        return super()._patch(req, key, cur, kind)


@pytest.fixture
async def api(kmock: Any) -> FlakyStatus:
    state = FlakyStatus()
    state.install(kmock)
    return state


def _requests(server: Any, method: str, fragment: str) -> list[kmock.Request]:
    return [r for r in server if fragment in r.url.path and r.method.value.upper() == method]


async def test_nodemetric_is_created_then_status_patched_and_a_failed_patch_retried(kmock: Any, api: FlakyStatus) -> None:
    clock = FakeClock(1_700_000_000.0)
    cluster = KubeCluster(kclient.ApiClient(kclient.Configuration(host=str(kmock.url).rstrip("/"))), clock=clock)
    policy = MetricCollectPolicy()
    store = UsageStore(policy, 1.0)
    reporter = NodeMetricReporter(cluster, "n1", clock, policy, qps=100.0, burst=100)
    pods = [PodMeta("default", "web", "u1", "koord-prod", "LS")]

    def tick(seconds: int, cpu: float) -> None:
        for _ in range(seconds):
            clock.advance(1)
            store.record(clock.now(), UsageSample(node_cpu_cores=cpu, node_memory_bytes=8 * 2**30,
                                                  pods={"u1": PodUsage(0.25, 2**30)}))

    def build(p: MetricCollectPolicy) -> dict[str, Any]:
        return build_nodemetric_status(store, clock.now(), p, pods)

    tick(400, 1.5)
    first = await asyncio.to_thread(reporter.report, build)
    assert first.ok and first.created
    (create,) = _requests(kmock, "POST", "/apis/slo.loadwise.io/v1alpha1/nodemetrics")
    assert create.data["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] == 60
    (patch,) = _requests(kmock, "PATCH", "/apis/slo.loadwise.io/v1alpha1/nodemetrics/n1/status")
    assert patch.headers["Content-Type"] == "application/merge-patch+json"
    stored = api.get("NodeMetric", "n1")
    assert stored is not None
    view = NodeMetricView.parse(stored)
    assert view.node_usage["cpu"] == 1500 and [p.key for p in view.pods] == ["default/web"]
    assert set(view.aggregated[300.0]) == {"avg", "p50", "p90", "p95", "p99"} and view.aggregated[1800.0] == {}

    # The API server fails the next two status writes; the reporter backs off and lands the third.
    api.fail_status = 2
    tick(60, 3.0)
    outcomes = []
    for _ in range(3):
        clock.advance(max(0.0, reporter.next_due - clock.now()))
        outcomes.append(await asyncio.to_thread(reporter.report, build))
    assert [o.ok for o in outcomes] == [False, False, True]
    assert "500" in outcomes[0].error or "request timed out" in outcomes[0].error
    assert outcomes[1].at - outcomes[0].at == 1.0 and outcomes[2].at - outcomes[1].at == 2.0
    assert len(_requests(kmock, "PATCH", "/nodemetrics/n1/status")) == 4
    assert len(_requests(kmock, "POST", "/nodemetrics")) == 1  # created once only
    stored = api.get("NodeMetric", "n1")
    assert stored is not None
    after = NodeMetricView.parse(stored)
    assert after.update_time == outcomes[2].at // 1
    assert after.aggregated[300.0]["p99"]["cpu"] == 3000  # the landed report has the current windows


async def test_whole_agent_over_http_watches_its_pods_and_reports(kmock: Any, api: FlakyStatus, tmp_path: Path) -> None:
    """``loadwise agent --kubeconfig``'s wiring: informers over HTTP feed the pods, the report lands."""
    for name, src in (("cg", FIXTURES / "cgroups" / "v2-systemd" / "tick1"), ("proc", FIXTURES / "proc" / "tick1")):
        shutil.copytree(src, tmp_path / name)
    api.seed("Node", {"metadata": {"name": "n1", "labels": {"pool": "x"}}})
    api.seed("Pod", {
        "metadata": {"name": "web", "namespace": "team", "uid": G},
        "spec": {"nodeName": "n1", "containers": [{"name": "app", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": "Running", "qosClass": "Guaranteed",
                   "containerStatuses": [{"name": "app", "containerID": f"containerd://{'a1' * 32}"}]},
    })
    api.seed("Pod", {"metadata": {"name": "other", "namespace": "team", "uid": "u-other"},
                     "spec": {"nodeName": "n2", "containers": [{"name": "app"}]}})
    clock = FakeClock(1_700_000_000.0)
    cluster = KubeCluster(kclient.ApiClient(kclient.Configuration(host=str(kmock.url).rstrip("/"))), clock=clock)
    config = AgentConfig.from_mapping({"cgroupRoot": str(tmp_path / "cg"), "procRoot": str(tmp_path / "proc"),
                                       "reportJitterFraction": 0, "waterline": {"enabled": False}})
    agent = build_agent(config, "n1", cluster=cluster, clock=clock)
    await asyncio.to_thread(agent.start)
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 5
        while not agent.informers_synced() or agent.node_obj is None:
            assert loop.time() < deadline, "informers did not sync"
            await asyncio.sleep(0.02)
        assert set(agent.pods.snapshot()) == {G}  # the field selector keeps other nodes' pods out
        assert agent.node_obj["metadata"]["labels"] == {"pool": "x"}
        await asyncio.to_thread(agent.collect_once)
        for name, src in (("cg", FIXTURES / "cgroups" / "v2-systemd" / "tick2"), ("proc", FIXTURES / "proc" / "tick2")):
            shutil.rmtree(tmp_path / name)
            shutil.copytree(src, tmp_path / name)
        clock.advance(10)
        await asyncio.to_thread(agent.collect_once)
        assert agent.ready() == (True, "ok")
        outcome = await asyncio.to_thread(agent.report_if_due)
        assert outcome is not None and outcome.ok and outcome.created
        stored = api.get("NodeMetric", "n1")
        assert stored is not None
        view = NodeMetricView.parse(stored)
        assert [(p.key, p.usage["cpu"], p.qos) for p in view.pods] == [("team/web", 1500, "LSR")]
        assert view.node_usage["cpu"] == 410
    finally:
        await asyncio.to_thread(agent.stop)
