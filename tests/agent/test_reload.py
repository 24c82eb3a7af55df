"""Config hot reload on real files with the real agent: applied live, refused with the last good config kept,
restart-only keys reported, kubelet's ``..data`` symlink swap seen, one report per bad content, a cheap poll."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import generate_latest

from agent.collect.cgroups import detect_layout
from agent.config import AgentConfig, schema
from agent.daemon import Agent, run_agent
from agent.reload import LIVE_KEYS, RESTART_KEYS, ConfigReloader
from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from loadwise.cmd_agent import build_agent
from tests.agent.test_daemon_server import BE, _cluster, _install, _pod, _two_ticks

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _write(path: Path, tmp: Path, **keys: Any) -> None:
    doc = {"procRoot": str(tmp / "proc"), "cgroupRoot": str(tmp / "cg"), "reportJitterFraction": 0, **keys}
    path.write_text(yaml.safe_dump(doc))


def _agent(tmp: Path, config_file: Path, cluster: MemoryCluster | None, clock: FakeClock | None) -> Agent:
    _install(tmp, 1)
    agent = build_agent(AgentConfig.load(config_file), "n1", cluster=cluster, clock=clock,
                        layout=detect_layout(str(tmp / "cg")))
    agent.start()
    return agent


def _reloads(agent: Agent) -> dict[str, float]:
    return {result: child._value.get() for result, child in agent.metrics.config_reloads.items()}


def test_every_config_key_is_either_live_or_restart_only() -> None:
    props = schema()["properties"]
    keys = {k for k in props if k != "waterline"} | {f"waterline.{k}" for k in props["waterline"]["properties"]}
    assert LIVE_KEYS | RESTART_KEYS == keys
    assert not LIVE_KEYS & RESTART_KEYS


async def test_a_valid_change_is_applied_live_and_the_new_interval_is_used(tmp_path: Path) -> None:
    cfg = tmp_path / "agent.yaml"
    _write(cfg, tmp_path, collectIntervalSeconds=30, port=0, debugPort=0, waterline={"enabled": False})
    agent = _agent(tmp_path, cfg, None, None)
    stop = asyncio.Event()
    task = asyncio.create_task(run_agent(agent, stop, config_file=str(cfg), reload_seconds=0.05))
    try:
        await asyncio.sleep(0.6)
        assert agent.metrics.collections._value.get() == 1  # the first tick only: the next is 30 s away
        assert b"loadwise_agent_pod_memory_usage_bytes{" in generate_latest(agent.metrics.registry)
        _write(cfg, tmp_path, collectIntervalSeconds=0.1, port=0, debugPort=0, podMetrics=False,
               waterline={"enabled": False})
        for _ in range(100):  # up to 10 s on a loaded machine; usually well under 1 s
            await asyncio.sleep(0.1)
            if agent.metrics.collections._value.get() >= 5:
                break
        assert agent.metrics.collections._value.get() >= 5
    finally:
        stop.set()
        await task
    assert agent.config.collect_interval_seconds == 0.1 and agent.store.node.interval_seconds == 0.1
    assert not agent.config.pod_metrics
    assert b"loadwise_agent_pod_memory_usage_bytes{" not in generate_latest(agent.metrics.registry)
    assert _reloads(agent) == {"applied": 1, "needs_restart": 0, "rejected": 0}


def test_a_bad_edit_is_refused_once_naming_the_field_and_the_agent_keeps_working(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock(1_700_000_000.0)
    cluster = _cluster(clock)
    cfg = tmp_path / "agent.yaml"
    _write(cfg, tmp_path, collectIntervalSeconds=2)
    agent = _agent(tmp_path, cfg, cluster, clock)
    reloader = ConfigReloader(agent, cfg)
    assert reloader.check() is None  # the file the agent started with
    good = agent.config
    caplog.set_level(logging.INFO, logger="agent.reload")

    _write(cfg, tmp_path, collectIntervalSeconds="fast")
    outcome = reloader.check()
    assert outcome is not None and outcome.result == "rejected" and outcome.field == "collectIntervalSeconds"
    assert agent.config is good
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and str(cfg) in errors[0] and "collectIntervalSeconds: 'fast'" in errors[0]
    assert [e.reason for e in cluster.events if e.kind == "Node"] == ["AgentConfigRejected"]
    agent.collect_once()
    clock.advance(10)
    agent.collect_once()
    outcome_report = agent.report_if_due()
    assert outcome_report is not None and outcome_report.ok  # still collecting and reporting
    assert agent.ready() == (True, "ok") and agent.healthy() == (True, "ok")

    os.utime(cfg, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))  # touched, same bad content
    assert reloader.check() is None and reloader.check() is None
    assert len([r for r in caplog.records if r.levelno == logging.ERROR]) == 1
    assert _reloads(agent)["rejected"] == 1 and len(cluster.events) == 1

    _write(cfg, tmp_path, collectIntervalSeconds=2, waterline={"dry_run": True})
    outcome = reloader.check()
    assert outcome is not None and outcome.field == "waterline.dry_run" and _reloads(agent)["rejected"] == 2

    _write(cfg, tmp_path, collectIntervalSeconds=2)
    assert reloader.check() is None and agent.config is good
    assert "valid again" in caplog.records[-1].getMessage()


def test_restart_only_keys_are_reported_and_left_while_live_keys_apply(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock(1_700_000_000.0)
    cfg = tmp_path / "agent.yaml"
    _write(cfg, tmp_path, port=9400)
    agent = _agent(tmp_path, cfg, _cluster(clock), clock)
    reloader = ConfigReloader(agent, cfg)
    reloader.check()
    caplog.set_level(logging.INFO, logger="agent.reload")

    _write(cfg, tmp_path, port=9500, debugPort=0, collectContainers=False, reportRetryMaxSeconds=5)
    outcome = reloader.check()
    assert outcome is not None and outcome.result == "needs_restart"
    assert outcome.restart == ("debugPort", "port")
    assert outcome.applied == ("collectContainers", "reportRetryMaxSeconds")
    assert (agent.config.port, agent.config.debug_port) == (9400, 9328)
    assert agent.collector.cgroups is not None and not agent.collector.cgroups.containers
    assert agent.reporter is not None and agent.reporter.backoff.maximum == 5
    assert "debugPort, port take effect when the agent restarts" in caplog.records[-1].getMessage()
    assert _reloads(agent) == {"applied": 0, "needs_restart": 1, "rejected": 0}
    assert reloader.check() is None  # reported once


def test_the_command_line_port_is_kept_on_reload(tmp_path: Path) -> None:
    cfg = tmp_path / "agent.yaml"
    _write(cfg, tmp_path, port=9400)
    agent = _agent(tmp_path, cfg, None, FakeClock(1_700_000_000.0))
    agent.apply_config(replace(agent.config, port=9999))  # as `--port 9999` started it
    reloader = ConfigReloader(agent, cfg, overrides=lambda c: replace(c, port=9999))
    assert reloader.check() is None
    _write(cfg, tmp_path, port=9400, podMetrics=False)
    outcome = reloader.check()
    assert outcome is not None and outcome.result == "applied" and outcome.applied == ("podMetrics",)


def _kubelet_mount(mount: Path, version: str, text: str, mtime_ns: int) -> None:
    """What kubelet does to a ConfigMap volume: a new timestamped directory, then an atomic ``..data`` swap."""
    data = mount / f"..{version}"
    data.mkdir()
    (data / "agent.yaml").write_text(text)
    os.utime(data / "agent.yaml", ns=(mtime_ns, mtime_ns))
    tmp_link = mount / "..data_tmp"
    tmp_link.symlink_to(data.name)
    os.replace(tmp_link, mount / "..data")
    if not (mount / "agent.yaml").is_symlink():
        (mount / "agent.yaml").symlink_to("..data/agent.yaml")


def test_the_configmap_symlink_swap_is_noticed(tmp_path: Path) -> None:
    mount = tmp_path / "config"
    mount.mkdir()
    first = yaml.safe_dump({"procRoot": str(tmp_path / "proc"), "cgroupRoot": str(tmp_path / "cg"), "pressure": True})
    second = first.replace("pressure: true", "pressure: no  ")  # the same size and, below, the same mtime
    assert len(first) == len(second)
    mtime = 1_700_000_000 * 10**9
    _kubelet_mount(mount, "2026_11_26_22_00_00.1", first, mtime)
    agent = _agent(tmp_path, mount / "agent.yaml", None, FakeClock(1_700_000_000.0))
    reloader = ConfigReloader(agent, mount / "agent.yaml")
    assert reloader.check() is None
    _kubelet_mount(mount, "2026_11_26_22_05_00.2", second, mtime)
    outcome = reloader.check()
    assert outcome is not None and outcome.applied == ("pressure",)
    assert not agent.config.pressure and agent.collector.pressure is None


def test_an_unchanged_file_costs_one_stat_per_poll(tmp_path: Path) -> None:
    cfg = tmp_path / "agent.yaml"
    _write(cfg, tmp_path)
    agent = _agent(tmp_path, cfg, None, FakeClock(1_700_000_000.0))
    reloader = ConfigReloader(agent, cfg)
    reloader.check()
    reads = 0
    digest = reloader.file.digest

    def counting_digest() -> str:
        nonlocal reads
        reads += 1
        return digest()

    reloader.file.digest = counting_digest  # type: ignore[method-assign]
    polls = 2000
    cpu = time.process_time()
    for _ in range(polls):
        assert reloader.check() is None
    per_poll = (time.process_time() - cpu) / polls
    assert reads == 0
    # One poll every 10 s: even a 1 ms poll would be 0.01 % of a core; a stat takes microseconds.
    assert per_poll < 0.001


def _policy(name: str, value: str = "300", metric: str = "cpu_total_usage") -> dict[str, Any]:
    return {"apiVersion": "qos.loadwise.io/v1alpha1", "kind": "WaterlinePolicy", "metadata": {"name": name},
            "spec": {"objectiveEnsurances": [{"name": "cpu", "metricRule": {"name": metric, "value": value},
                                              "action": {"name": "eviction", "eviction": {}}}],
                     "podQOS": [{"name": "be", "allowedActions": ["eviction"], "scopeSelector": {"matchExpressions": [
                         {"scopeName": "QOSClass", "operator": "In", "values": ["BestEffort"]}]}}]}}


def _names(agent: Agent) -> list[str]:
    assert agent.runtime is not None
    return [p.name for p in agent.runtime.policies.policies()]


def test_the_policy_file_is_reloaded_whole_or_refused_whole(tmp_path: Path) -> None:
    policies = tmp_path / "policies.yaml"
    policies.write_text(yaml.safe_dump_all([_policy("a")]))
    cfg = tmp_path / "agent.yaml"
    _write(cfg, tmp_path, waterline={"policyFile": str(policies)})
    clock = FakeClock(1_700_000_000.0)
    agent = _agent(tmp_path, cfg, _cluster(clock), clock)
    reloader = ConfigReloader(agent, cfg)
    assert reloader.check() is None and _names(agent) == ["a"]

    policies.write_text(yaml.safe_dump_all([_policy("a", value="400"), _policy("b")]))
    outcome = reloader.check()
    assert outcome is not None and outcome.result == "applied" and outcome.applied == ("waterline.policyFile",)
    assert _names(agent) == ["a", "b"]

    policies.write_text(yaml.safe_dump_all([_policy("c"), _policy("b", metric="cpu_usage")]))
    outcome = reloader.check()
    assert outcome is not None and outcome.result == "rejected" and outcome.field == "waterline.policyFile"
    assert f"{policies}: WaterlinePolicy b: spec.objectiveEnsurances[0].metricRule.name" in outcome.error
    assert _names(agent) == ["a", "b"]  # not even the valid "c" of the refused file runs
    assert reloader.check() is None


def test_a_new_policy_file_that_is_fixed_later_is_picked_up(tmp_path: Path) -> None:
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text(yaml.safe_dump(_policy("a")))
    second.write_text("{not yaml")
    cfg = tmp_path / "agent.yaml"
    _write(cfg, tmp_path, waterline={"policyFile": str(first)})
    clock = FakeClock(1_700_000_000.0)
    agent = _agent(tmp_path, cfg, _cluster(clock), clock)
    reloader = ConfigReloader(agent, cfg)
    reloader.check()

    _write(cfg, tmp_path, waterline={"policyFile": str(second)})
    outcome = reloader.check()
    assert outcome is not None and outcome.result == "rejected" and str(second) in outcome.error
    assert agent.config.waterline.policy_file == str(first) and _names(agent) == ["a"]
    second.write_text(yaml.safe_dump(_policy("z")))  # the config file itself is not touched again
    outcome = reloader.check()
    assert outcome is not None and outcome.result == "applied"
    assert outcome.applied == ("waterline.policyFile",) and _names(agent) == ["z"]


def test_dry_run_switches_live_both_ways(tmp_path: Path) -> None:
    cfg = tmp_path / "agent.yaml"
    _write(cfg, tmp_path, waterline={"dryRun": True})
    clock = FakeClock(1_700_000_000.0)
    cluster = _cluster(clock)
    cluster.create("Pod", _pod("be", BE, qos="BestEffort", containers={"app": "c1" * 32}))
    cluster.create("WaterlinePolicy", _policy("cpu-guard"))
    agent = _agent(tmp_path, cfg, cluster, clock)
    assert agent.runtime is not None and agent.runtime.dry_run and agent.runtime.actuators is None
    reloader = ConfigReloader(agent, cfg)
    reloader.check()
    _two_ticks(agent, tmp_path, clock)
    report = agent.waterline_once()
    assert report is not None and report.dry_run and report.actions and cluster.evictions == []
    _write(cfg, tmp_path, waterline={"dryRun": False})
    outcome = reloader.check()
    assert outcome is not None and outcome.applied == ("waterline.dryRun",)
    assert not agent.runtime.dry_run and agent.runtime.actuators is not None
    report = agent.waterline_once()
    assert report is not None and not report.dry_run and cluster.evictions[0] == "default/be"
    _write(cfg, tmp_path, waterline={"dryRun": True})
    assert reloader.check() is not None and agent.runtime.dry_run


def test_the_engine_switches_off_and_on_live_but_one_started_without_needs_a_restart(tmp_path: Path) -> None:
    cfg = tmp_path / "agent.yaml"
    _write(cfg, tmp_path)
    clock = FakeClock(1_700_000_000.0)
    agent = _agent(tmp_path, cfg, _cluster(clock), clock)
    reloader = ConfigReloader(agent, cfg)
    reloader.check()
    _write(cfg, tmp_path, waterline={"enabled": False})
    outcome = reloader.check()
    assert outcome is not None and outcome.result == "applied" and outcome.applied == ("waterline.enabled",)
    assert agent.runtime is not None and not agent.runtime.enabled

    without = tmp_path / "without"
    without.mkdir()
    cfg2 = without / "agent.yaml"
    _write(cfg2, tmp_path, waterline={"enabled": False})
    agent2 = _agent(tmp_path, cfg2, None, clock)
    assert agent2.runtime is None
    reloader2 = ConfigReloader(agent2, cfg2)
    reloader2.check()
    _write(cfg2, tmp_path, waterline={"enabled": True})
    outcome = reloader2.check()
    assert outcome is not None and outcome.result == "needs_restart" and outcome.restart == ("waterline.enabled",)
    assert agent2.runtime is None and not agent2.config.waterline.enabled
