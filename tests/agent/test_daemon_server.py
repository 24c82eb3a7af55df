"""The agent end to end on a fixture cgroup tree and MemoryCluster: pod matching, NodeMetric
reporting, the HTTP endpoints through aiohttp's test client, NodeState for the waterline engine."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client.parser import text_string_to_metric_families

from agent.collect.cgroups import detect_layout
from agent.config import AgentConfig
from agent.daemon import Agent
from agent.server import make_app, make_debug_app
from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from common.objects import NodeMetricView
from loadwise.cmd_agent import build_agent

FIXTURES = Path(__file__).parent / "fixtures"
G = "0a1b2c3d-0000-4000-8000-000000000001"
BU = "0a1b2c3d-0000-4000-8000-000000000002"
BE = "0a1b2c3d-0000-4000-8000-000000000003"


def _install(tmp: Path, tick: int, layout: str = "v1-systemd") -> None:
    for name, src in (("cg", FIXTURES / "cgroups" / layout / f"tick{tick}"), ("proc", FIXTURES / "proc" / f"tick{tick}")):
        shutil.rmtree(tmp / name, ignore_errors=True)
        shutil.copytree(src, tmp / name)
    (tmp / "proc" / "loadavg").write_text("0.50 0.40 0.30 2/345 6789\n")


def _pod(name: str, uid: str, *, ns: str = "default", qos: str = "Burstable", containers: dict[str, str] | None = None,
         priority: int | None = None, node: str = "n1") -> dict[str, Any]:
    containers = containers or {"app": "b1" * 32}
    res = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}} if qos != "BestEffort" else {}
    spec: dict[str, Any] = {"nodeName": node, "containers": [{"name": n, "resources": res} for n in containers]}
    if priority is not None:
        spec["priority"] = priority
    return {
        "metadata": {"name": name, "namespace": ns, "uid": uid},
        "spec": spec,
        "status": {
            "phase": "Running",
            "qosClass": qos,
            "startTime": "2023-11-14T20:00:00Z",
            "containerStatuses": [{"name": n, "containerID": f"containerd://{cid}"} for n, cid in containers.items()],
        },
    }


def _agent(tmp: Path, cluster: MemoryCluster | None, clock: FakeClock, **cfg: Any) -> Agent:
    _install(tmp, 1)
    config = AgentConfig.from_mapping(
        {"procRoot": str(tmp / "proc"), "cgroupRoot": str(tmp / "cg"), "reportJitterFraction": 0, **cfg}
    )
    agent = build_agent(config, "n1", cluster=cluster, clock=clock, layout=detect_layout(str(tmp / "cg")))
    agent.start()
    return agent


def _cluster(clock: FakeClock) -> MemoryCluster:
    c = MemoryCluster(clock=clock)
    c.create("Node", {"metadata": {"name": "n1", "labels": {"pool": "x"}},
                      "status": {"allocatable": {"cpu": "2", "memory": "16Gi"}}})
    c.create("Pod", _pod("guaranteed", G, qos="Guaranteed", containers={"app": "a1" * 32, "sidecar": "a2" * 32},
                         priority=9500))
    c.create("Pod", _pod("burstable", BU, ns="team"))
    c.create("Pod", _pod("pending", "99999999-0000-4000-8000-000000000000", ns="team"))  # no cgroup yet
    c.create("Pod", _pod("elsewhere", BE, node="n2"))  # another node's pod: never matched here
    return c


def _two_ticks(agent: Agent, tmp: Path, clock: FakeClock) -> None:
    agent.collect_once()
    agent.node_state()  # a waterline tick reads the container counters: the next one has their rates
    _install(tmp, 2)
    clock.advance(10)
    agent.collect_once()


def test_pods_match_cgroups_by_uid_and_the_report_carries_them(tmp_path: Path) -> None:
    clock = FakeClock(1_700_000_000.0)
    cluster = _cluster(clock)
    agent = _agent(tmp_path, cluster, clock)
    assert set(agent.pods.snapshot()) == {G, BU, "99999999-0000-4000-8000-000000000000"}
    _two_ticks(agent, tmp_path, clock)
    outcome = agent.report_if_due()
    assert outcome is not None and outcome.ok and outcome.created
    view = NodeMetricView.parse(cluster.get("NodeMetric", "n1"))
    assert view.node_usage["cpu"] == 410
    # Memory has a sample at both ticks (cpu only at the second): the average of the two.
    assert view.node_usage["memory"] == (16384000 - 12000000 + 16384000 - 11000000) // 2 * 1024
    assert [(p.key, p.usage["cpu"], p.priority, p.qos) for p in view.pods] == [
        ("default/guaranteed", 1500, "koord-prod", "LSR"),
        ("team/burstable", 250, "koord-prod", "LS"),
    ]
    assert agent.report_if_due() is None  # not due again for a minute
    view_now = agent.usage_view()
    # BestEffort and the new pod have cgroups but no pod in the cluster (yet): not reported, only counted.
    assert (view_now.pods_matched, view_now.pods_without_cgroup, view_now.cgroups_without_pod) == (2, 1, 2)


def test_node_state_names_containers_and_points_at_their_cpu_cgroups(tmp_path: Path) -> None:
    clock = FakeClock(1_700_000_000.0)
    agent = _agent(tmp_path, _cluster(clock), clock)
    _two_ticks(agent, tmp_path, clock)
    state = agent.node_state()
    assert state is not None
    assert state.labels == {"pool": "x"} and state.cpu_capacity_milli == 2000 and state.cpu_usage_milli == 410
    assert state.extra_metrics["cpu_total_utilization"] == pytest.approx(20.5)
    assert state.extra_metrics["cpu_load_1_min"] == 0.5
    pods = {p.name: p for p in state.pods}
    assert set(pods) == {"guaranteed", "burstable", "pending"}
    g = pods["guaranteed"]
    assert (g.qos_class, g.priority, g.priority_class, g.cpu_usage_milli) == ("Guaranteed", 9500, "koord-prod", 1500)
    assert [c.name for c in g.containers] == ["app", "sidecar"]  # the pause container is left out
    app = g.containers[0]
    assert (app.cpu_usage_milli, app.cpu_quota_us, app.cpu_period_us) == (1400, 200_000, 100_000)
    assert app.cgroup_dir == str(tmp_path / "cg" / "cpu" / "kubepods.slice" / f"kubepods-pod{G.replace('-', '_')}.slice"
                                 / f"cri-containerd-{'a1' * 32}.scope")
    assert (Path(app.cgroup_dir) / "cpu.cfs_quota_us").read_text().strip() == "200000"
    assert app.limits["cpu"] == 2000
    assert pods["pending"].containers == () and pods["pending"].cpu_usage_milli == 0
    # The /debug/state document is the qos-plan state format.
    from agent.qos.state import NodeState

    assert NodeState.from_json(state.to_json()).pods[0].name == "guaranteed"


def test_waterline_runtime_acts_on_the_collected_state(tmp_path: Path) -> None:
    clock = FakeClock(1_700_000_000.0)
    cluster = _cluster(clock)
    cluster.create("Pod", _pod("be", BE, qos="BestEffort", containers={"app": "c1" * 32}))
    cluster.create("WaterlinePolicy", {
        "metadata": {"name": "cpu-guard"},
        "spec": {
            "objectiveEnsurances": [{"name": "cpu", "metricRule": {"name": "cpu_total_usage", "value": "300"},
                                     "action": {"name": "eviction", "eviction": {}}}],
            "podQOS": [{"name": "be", "allowedActions": ["eviction"], "scopeSelector": {"matchExpressions": [
                {"scopeName": "QOSClass", "operator": "In", "values": ["BestEffort"]}]}}],
        },
    })
    agent = _agent(tmp_path, cluster, clock)
    _two_ticks(agent, tmp_path, clock)
    report = agent.waterline_once()
    assert report is not None and report.triggered == ("cpu-guard.cpu",)
    assert cluster.evictions == ["default/be"]


def test_the_every_second_tick_reads_no_container_files_and_an_idle_waterline_reads_nothing(tmp_path: Path) -> None:
    clock = FakeClock(1_700_000_000.0)
    agent = _agent(tmp_path, _cluster(clock), clock)
    tick = agent.collect_once()
    assert tick.pods[G].containers == ()  # only the waterline engine needs containers
    assert agent.runtime is not None and not agent.runtime.idle()  # the first tick reconciles the node
    assert agent.waterline_once() is not None
    assert agent.runtime.idle()  # no policy and nothing to undo
    assert agent.waterline_once() is None


def test_standalone_uses_pod_cgroups_as_pods_and_is_dry_run(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock(1_700_000_000.0)
    with caplog.at_level("WARNING", logger="loadwise.agent"):
        agent = _agent(tmp_path, None, clock, waterline={"dryRun": False})
    assert agent.reporter is None and agent.runtime is not None and agent.runtime.dry_run
    assert "runs dry" in caplog.text and "dryRun: false does not apply" in caplog.text
    _two_ticks(agent, tmp_path, clock)
    obj = agent.nodemetric()
    names = {p["name"]: p for p in obj["status"]["podsMetric"]}
    assert set(names) == {G, BU, BE, "0a1b2c3d-0000-4000-8000-000000000005"}
    assert names[G]["podUsage"]["resources"]["cpu"] == "1500m" and names[G]["qos"] == "LSR"
    assert names[BE]["priority"] == "koord-batch"
    state = agent.node_state()
    assert state is not None and {c.name for c in next(p for p in state.pods if p.uid == G).containers} == {
        ("a1" * 32)[:12], ("a2" * 32)[:12], ("af" * 32)[:12]}


async def test_http_endpoints(tmp_path: Path) -> None:
    clock = FakeClock(1_700_000_000.0)
    cluster = _cluster(clock)
    agent = _agent(tmp_path, cluster, clock)
    client = TestClient(TestServer(make_app(agent)))
    debug = TestClient(TestServer(make_debug_app(agent)))
    await client.start_server()
    await debug.start_server()
    try:
        assert (await client.get("/readyz")).status == 503  # no collection yet
        # what names the node's pods is served on the debug listener only
        assert (await client.get("/debug/state")).status == 404
        assert (await client.get("/nodemetric")).status == 404
        resp = await debug.get("/debug/state")
        assert resp.status == 503
        _two_ticks(agent, tmp_path, clock)
        assert (await client.get("/readyz")).status == 200
        assert (await client.get("/healthz")).status == 200

        nm = await (await debug.get("/nodemetric")).json()
        assert nm["kind"] == "NodeMetric" and nm["metadata"]["name"] == "n1"
        assert nm["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"] == "410m"
        assert cluster.list("NodeMetric").items == []  # showing is not writing

        agent.report_if_due()
        clock.advance(5)
        text = await (await client.get("/metrics")).text()
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for fam in text_string_to_metric_families(text) for s in fam.samples}
        assert samples[("loadwise_agent_node_cpu_usage_cores", (("node", "n1"),))] == pytest.approx(0.41)
        assert samples[("loadwise_agent_pod_cpu_usage_cores", (("namespace", "default"), ("node", "n1"),
                                                               ("pod", "guaranteed")))] == pytest.approx(1.5)
        assert ("loadwise_agent_pod_memory_working_set_bytes",
                (("namespace", "team"), ("node", "n1"), ("pod", "burstable"))) in samples
        assert samples[("loadwise_agent_nodemetric_reports_total", (("node", "n1"), ("result", "success")))] == 1
        assert samples[("loadwise_agent_nodemetric_last_success_timestamp_seconds", (("node", "n1"),))] == 1_700_000_010
        assert samples[("loadwise_agent_nodemetric_report_age_seconds", (("node", "n1"),))] == 5
        assert samples[("loadwise_agent_collect_duration_seconds_count", (("node", "n1"),))] == 2
        assert samples[("loadwise_agent_pods", (("node", "n1"), ("state", "without_cgroup")))] == 1
        assert ("loadwise_agent_self_rss_bytes", (("node", "n1"),)) in samples
        # 10 s of data: every window is still cold, so no percentile series yet.
        assert not any(name == "loadwise_agent_node_cpu_usage_aggregated_cores" for name, _ in samples)

        state = await (await debug.get("/debug/state")).json()
        assert state["node"]["name"] == "n1" and {p["name"] for p in state["pods"]} == {"guaranteed", "burstable", "pending"}
        assert state["report"]["failures"] == 0

        # A collect loop that stops makes the liveness probe fail.
        clock.advance(60)
        resp = await client.get("/healthz")
        assert resp.status == 503 and "last collection" in await resp.text()
    finally:
        await client.close()
        await debug.close()
    agent.stop()


def test_aggregated_series_appear_once_windows_are_warm(tmp_path: Path) -> None:
    clock = FakeClock(1_700_000_000.0)
    agent = _agent(tmp_path, None, clock)
    for _ in range(200):
        agent.collect_once()
        clock.advance(1)
    view = agent.usage_view()
    assert {(a.window, a.aggregation) for a in view.aggregates} == {("5m0s", k) for k in ("avg", "p50", "p90", "p95", "p99")}
    assert all(a.cpu_cores is not None for a in view.aggregates)  # node cpu: unchanged fixture -> 0.0
