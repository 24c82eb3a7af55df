"""psutil as the node source where procfs is not readable, and the agent's self measurements."""

from __future__ import annotations

import time
from pathlib import Path

from agent.collect.procfs import ProcfsNodeSource
from agent.collect.psutil_source import PsutilNodeSource, SelfUsage
from agent.config import AgentConfig
from loadwise.cmd_agent import node_source


def test_psutil_node_source_primes_then_measures() -> None:
    src = PsutilNodeSource()
    assert src.available() and src.cpu_count() >= 1
    t0 = time.monotonic()
    assert src.cpu_cores(t0) is None
    end = time.monotonic() + 0.2
    while time.monotonic() < end:
        pass
    cores = src.cpu_cores(time.monotonic())
    assert cores is not None and 0.0 <= cores <= src.cpu_count() + 0.5
    mem = src.memory()
    assert 0 < mem.usage_without_page_cache <= mem.usage_with_page_cache <= mem.total


def test_psutil_and_procfs_agree_on_memory() -> None:
    a = PsutilNodeSource().memory()
    b = ProcfsNodeSource("/proc").memory()
    assert a.total == b.total
    assert abs(a.usage_without_page_cache - b.usage_without_page_cache) < 0.05 * a.total


def test_agent_falls_back_to_psutil_without_procfs(tmp_path: Path) -> None:
    assert node_source(AgentConfig.from_mapping({"procRoot": str(tmp_path / "no-proc")})).name == "psutil"
    assert node_source(AgentConfig()).name == "procfs"


def test_self_usage() -> None:
    s = SelfUsage()
    assert s.cpu_seconds() > 0 and s.rss_bytes() > 1024 * 1024
