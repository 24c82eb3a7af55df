"""Agent config validation, the agent and doctor command lines, and a standalone agent process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agent.config import DEFAULT_PORT, AgentConfig
from agent.doctor import AGENT_API_ACCESS, check_api, check_rbac
from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from common.config import ConfigError
from loadwise.cli import main

FIXTURES = Path(__file__).parent / "fixtures"


def test_defaults_and_a_full_file(tmp_path: Path) -> None:
    assert AgentConfig().port == DEFAULT_PORT and AgentConfig().collect_interval_seconds == 1.0
    f = tmp_path / "agent.yaml"
    f.write_text(
        "nodeName: n7\ncollectIntervalSeconds: 2\ncgroupRoot: /host-cgroup\ncgroupDriver: systemd\nport: 9400\n"
        "podMetrics: false\nmetricCollectPolicy:\n  reportIntervalSeconds: 30\n  nodeAggregatePolicy: {durations: [1m]}\n"
        "waterline: {dryRun: true, intervalSeconds: 5}\n"
    )
    cfg = AgentConfig.load(f)
    assert (cfg.node_name, cfg.collect_interval_seconds, cfg.cgroup_root, cfg.cgroup_driver, cfg.port) == (
        "n7", 2.0, "/host-cgroup", "systemd", 9400)
    assert not cfg.pod_metrics and cfg.waterline.dry_run and cfg.waterline.interval_seconds == 5
    assert cfg.metric_collect_policy.report_interval_seconds == 30 and cfg.metric_collect_policy.durations == (60.0,)


def test_cli_rejects_bad_flags_and_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["agent", "--port", "99999"])
    assert exit_.value.code == 2 and "--port: 99999 is outside 0-65535" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["agent", "--standalone", "--kubeconfig", "k"])
    assert "not allowed with argument" in capsys.readouterr().err
    bad = tmp_path / "agent.yaml"
    bad.write_text("cgroupDriver: docker\n")
    assert main(["agent", "--standalone", "--config", str(bad)]) == 2
    assert f"{bad}: cgroupDriver: 'docker' is not one of ['auto', 'systemd', 'cgroupfs']" in capsys.readouterr().err
    assert main(["agent", "--standalone", "--config", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml: file not found" in capsys.readouterr().err
    assert main(["agent", "--kubeconfig", str(tmp_path / "missing-kubeconfig")]) == 2
    assert "kubeconfig" in capsys.readouterr().err
    forced = tmp_path / "v2.yaml"
    forced.write_text(f"cgroupRoot: {tmp_path / 'nothing'}\ncgroupVersion: v2\n")
    assert main(["agent", "--standalone", "--config", str(forced)]) == 2
    assert f"{forced}: cgroupVersion: cgroup v2: no unified mount" in capsys.readouterr().err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _fixture_config(tmp_path: Path, layout: str = "v2-cgroupfs", **extra: str) -> Path:
    shutil.copytree(FIXTURES / "cgroups" / layout / "tick2", tmp_path / "cg")
    shutil.copytree(FIXTURES / "proc" / "tick2", tmp_path / "proc")
    cfg = tmp_path / "agent.yaml"
    lines = [f"cgroupRoot: {tmp_path / 'cg'}", f"procRoot: {tmp_path / 'proc'}", "listenAddress: 127.0.0.1"]
    lines += [f"{k}: {v}" for k, v in extra.items()]
    cfg.write_text("\n".join(lines) + "\n")
    return cfg


def test_standalone_agent_process_serves_and_stops_cleanly(tmp_path: Path) -> None:
    port, debug_port = _free_port(), _free_port()
    cfg = _fixture_config(tmp_path, debugPort=str(debug_port))
    proc = subprocess.Popen(
        [sys.executable, "-m", "loadwise", "agent", "--standalone", "--node", "local", "--config", str(cfg),
         "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(Path.cwd())},
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60  # a loaded 2-core CI machine starts Python slowly
        while True:
            try:
                with urllib.request.urlopen(base + "/readyz", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.1)
        # what names the node's pods is on the debug listener (127.0.0.1 by default), not the metrics port
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(base + "/nodemetric", timeout=20)
        assert missing.value.code == 404
        with urllib.request.urlopen(f"http://127.0.0.1:{debug_port}/nodemetric", timeout=20) as r:
            obj = json.load(r)
        assert obj["metadata"]["name"] == "local"
        assert {p["name"] for p in obj["status"]["podsMetric"]} == {
            "0a1b2c3d-0000-4000-8000-000000000001", "0a1b2c3d-0000-4000-8000-000000000002",
            "0a1b2c3d-0000-4000-8000-000000000003", "0a1b2c3d-0000-4000-8000-000000000005"}
        with urllib.request.urlopen(base + "/metrics", timeout=20) as r:
            assert b'loadwise_agent_collections_total{node="local"}' in r.read()
        with urllib.request.urlopen(base + "/healthz", timeout=20) as r:
            assert r.status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out.decode()


@pytest.mark.parametrize("layout", ["v1-systemd", "v2-cgroupfs"])
def test_doctor_reports_version_driver_and_paths(tmp_path: Path, layout: str, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _fixture_config(tmp_path, layout)
    assert main(["doctor", "--no-api", "--config", str(cfg), "--node", "n1"]) == 0
    text = capsys.readouterr().out
    version, driver = layout.split("-")
    assert f"version {version}, driver {driver}" in text
    assert "4 found (Guaranteed 1, Burstable 1, BestEffort 2)" in text
    assert "[SKIP] api" in text and "all checks passed" in text
    assert main(["doctor", "--no-api", "--config", str(cfg), "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["cgroup"]["version"] == version and doc["cgroup"]["driver"] == driver and doc["ok"]


def test_doctor_fails_without_cgroups(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "agent.yaml"
    cfg.write_text(f"cgroupRoot: {tmp_path / 'none'}\n")
    assert main(["doctor", "--no-api", "--config", str(cfg)]) == 1
    assert "[FAIL] cgroup" in capsys.readouterr().out


def test_doctor_api_and_rbac_checks() -> None:
    cluster = MemoryCluster(clock=FakeClock())
    cluster.create("Node", {"metadata": {"name": "n1"}})
    verdicts = {c.name: c.verdict for c in check_api(cluster, "n1")}
    assert verdicts == {"api: reachable": "ok", "api: node": "ok", "api: pods on node": "ok", "api: nodemetric": "ok"}
    assert {c.name: c.verdict for c in check_api(cluster, "n2")}["api: node"] == "fail"
    denied = {("patch", "nodemetrics", "status")}
    checks = check_rbac(lambda a: (a.verb, a.resource, a.subresource) not in denied)
    assert len(checks) == len(AGENT_API_ACCESS)
    assert [c.name for c in checks if c.verdict == "fail"] == ["rbac: patch nodemetrics/status.slo.loadwise.io"]


def test_doctor_rbac_in_observe_mode_passes_the_enforce_only_denials() -> None:
    enforce_only = {(a.verb, a.resource, a.subresource) for a in AGENT_API_ACCESS if a.enforce_only}
    assert enforce_only == {("patch", "nodes", ""), ("patch", "nodes", "status"), ("create", "pods", "eviction")}
    observe_role = lambda a: (a.verb, a.resource, a.subresource) not in enforce_only  # noqa: E731
    assert [c.verdict for c in check_rbac(observe_role, enforce=False)] == ["ok"] * len(AGENT_API_ACCESS)
    notes = [c.detail for c in check_rbac(observe_role, enforce=False) if "observe mode" in c.detail]
    assert len(notes) == 3
    # enforce mode needs them, and observe mode still needs everything else
    assert sum(c.verdict == "fail" for c in check_rbac(observe_role, enforce=True)) == 3
    no_report = lambda a: a.resource != "nodemetrics"  # noqa: E731
    assert {c.verdict for c in check_rbac(no_report, enforce=False) if "nodemetrics" in c.name} == {"fail"}


def test_debug_endpoints_listen_on_localhost_by_default() -> None:
    cfg = AgentConfig()
    assert (cfg.debug_address, cfg.debug_port) == ("127.0.0.1", 9328)
    assert AgentConfig.from_mapping({"debugPort": 0}).debug_port == 0  # off
    with pytest.raises(ConfigError, match="debugPort"):
        AgentConfig.from_mapping({"debugPort": 70000})
