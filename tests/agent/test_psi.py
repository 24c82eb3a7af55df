"""Pressure stall information: parsing, the node's real /proc/pressure, a real cgroup v2 pod's
{cpu,memory,io}.pressure through the whole agent (collector, /metrics, NodeMetric, waterline state)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from agent.collect.cgroups import detect_layout
from agent.collect.psi import NodePressureSource, PressureRates, nodemetric_pressure, parse_pressure
from agent.config import AgentConfig
from common.clock import SystemClock
from loadwise.cmd_agent import build_agent

CPU_FIXTURE = b"some avg10=1.53 avg60=0.87 avg300=0.42 total=25712345\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
UNIFIED = Path("/sys/fs/cgroup/unified")


def test_parse_both_lines_and_an_old_kernels_cpu_file_without_full() -> None:
    p = parse_pressure(CPU_FIXTURE)
    assert (p.some.avg10, p.some.avg60, p.some.avg300, p.some.total_us) == (1.53, 0.87, 0.42, 25712345)
    assert p.full is not None and p.full.total_us == 0
    old = parse_pressure(b"some avg10=0.10 avg60=0.20 avg300=0.30 total=7\n")
    assert old.full is None and old.line("full") is None
    assert nodemetric_pressure({"cpu": old}) == {"cpu": {"some": {"avg10": 0.1, "avg60": 0.2, "avg300": 0.3,
                                                                  "totalSeconds": 7e-06}}}


@pytest.mark.parametrize("bad", [b"", b"full avg10=0 avg60=0 avg300=0 total=0\n", b"some avg10=x avg60=0 avg300=0 total=0\n",
                                 b"some avg10=0 avg60=0 total=0\n"])
def test_malformed_files_name_the_source(bad: bytes) -> None:
    with pytest.raises(ValueError, match="/proc/pressure/cpu"):
        parse_pressure(bad, "/proc/pressure/cpu")


def test_total_rate_is_the_stalled_fraction_between_readings() -> None:
    rates = PressureRates()
    assert rates.update(0.0, {"cpu": parse_pressure(b"some avg10=0 avg60=0 avg300=0 total=1000000\n")}) == {}
    got = rates.update(2.0, {"cpu": parse_pressure(b"some avg10=0 avg60=0 avg300=0 total=1500000\n")})
    assert got == {("cpu", "some"): pytest.approx(0.25)}  # 0.5 s stalled in 2 s


def test_the_real_node_pressure_files() -> None:
    src = NodePressureSource()
    if not src.available():
        pytest.skip("this kernel has no /proc/pressure (CONFIG_PSI off or psi=0)")
    first = src.read()
    assert set(first) == {"cpu", "memory", "io"}
    assert all(0 <= p.some.avg10 <= 100 for p in first.values())
    src.rates(time.monotonic(), first)
    end = time.monotonic() + 0.3
    while time.monotonic() < end:  # keep a CPU busy so the counters have a reason to move
        pass
    second = src.read()
    rates = src.rates(time.monotonic(), second)
    assert second["cpu"].some.total_us >= first["cpu"].some.total_us
    assert {("cpu", "some"), ("memory", "some"), ("io", "some")} <= set(rates)
    assert all(0 <= r <= 1.05 for r in rates.values())


def test_a_real_v2_pod_cgroup_reports_its_pressure_through_the_agent() -> None:
    if os.geteuid() != 0 or not (UNIFIED / "cgroup.controllers").exists():
        pytest.skip("needs root and a cgroup v2 mount at /sys/fs/cgroup/unified")
    if not NodePressureSource().available():
        pytest.skip("this kernel has no PSI")
    parent = f"loadwise-psi-test-{uuid.uuid4().hex[:8]}"
    uid = str(uuid.uuid4())
    pod_rel = Path(parent) / "kubepods.slice" / "kubepods-besteffort.slice" / f"kubepods-besteffort-pod{uid.replace('-', '_')}.slice"
    leaf = UNIFIED / pod_rel / f"cri-containerd-{'ab' * 32}.scope"
    leaf.mkdir(parents=True)
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        (leaf / "cgroup.procs").write_text(str(burner.pid))
        cfg = AgentConfig.from_mapping({"cgroupRoot": "/sys/fs/cgroup", "cgroupParent": parent, "cgroupVersion": "v2",
                                        "cgroupDriver": "systemd", "waterline": {"enabled": False}})
        agent = build_agent(cfg, "psi", cluster=None, clock=SystemClock(),
                            layout=detect_layout(cfg.cgroup_root, version="v2", driver="systemd", parent=parent))
        agent.collect_once()
        time.sleep(1.0)
        tick = agent.collect_once()
        pressure = tick.pods[uid].pressure
        assert pressure is not None and set(pressure) == {"cpu", "memory", "io"}
        assert pressure["cpu"].some.total_us >= 0 and pressure["memory"].full is not None
        assert set(tick.pressure) == {"cpu", "memory", "io"}
        text = generate_latest(agent.metrics.registry).decode()
        assert f'loadwise_agent_pod_pressure_stalled_seconds_total{{kind="some",namespace="",node="psi",pod="{uid}",' \
               'resource="cpu"}' in text
        assert 'loadwise_agent_node_pressure_stalled_ratio{kind="some",node="psi",resource="io",window="60s"}' in text
        assert 'loadwise_agent_node_pressure_stalled_interval_ratio{kind="some",node="psi",resource="cpu"}' in text
        assert tick.pressure_rates[("cpu", "some")] >= 0
        ext = agent.nodemetric()["status"]["nodeMetric"]["extensions"]["pressure"]
        assert set(ext) == {"cpu", "memory", "io"} and set(ext["cpu"]["some"]) == {"avg10", "avg60", "avg300",
                                                                                   "totalSeconds"}
        state = agent.node_state()
        assert state is not None and "cpu_pressure_some" in state.extra_metrics
        assert state.extra_metrics["cpu_pressure_some"] == tick.pressure["cpu"].some.avg10
    finally:
        burner.kill()
        burner.wait()
        for d in [leaf, *leaf.parents]:
            if d == UNIFIED:
                break
            try:
                d.rmdir()
            except OSError:
                pass
