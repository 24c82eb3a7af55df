"""The agent's own CPU and memory cost, per collection tick and per pod (prints figures, asserts nothing).

Setup: a cgroup v2 tree with the systemd layout (default 200 pods, each with an app and a pause
container, counters moving every tick) in a tmpfs directory, this machine's real /proc for the node,
and a MemoryCluster holding the matching pods.  The real agent (``build_agent``) then runs on a
simulated clock at a 1 s collection interval:

* phase 1, 5 simulated minutes: every tick collects; NodeMetric reports every 60 s; the waterline
  engine runs every 10 s (no policies); Prometheus scrapes /metrics every 15 s.  Only the agent's
  calls are timed (``time.process_time``), not the benchmark rewriting the counter files, so the
  figure is the agent's CPU per tick; at one tick per second that is its average CPU in millicores.
* phase 2 continues to 30 simulated minutes of history, then reads the process's RSS.

What comparable agents budget and use: docs/design/performance.md §2.  The targets for this agent:
<= 20 millicores averaged over 5 minutes and RSS <= 80 MiB after 30 minutes.

Usage: .venv/bin/python benchmarks/agent_overhead.py [pods] [layout: v2-systemd|v1-cgroupfs]
"""

from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from prometheus_client import generate_latest

from agent.collect.cgroups import detect_layout
from agent.collect.psutil_source import SelfUsage
from agent.config import AgentConfig
from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from loadwise.cmd_agent import build_agent

KOORDLET_BUDGET_MILLI = 200.0
CRANE_IDLE_MILLI = 237.0
TARGET_MILLI = 20.0
TARGET_RSS_MIB = 80.0


def _uid(i: int) -> str:
    return f"00000000-0000-4000-8000-{i:012d}"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


class Tree:
    """A pod cgroup tree whose CPU counters the benchmark advances between ticks."""

    def __init__(self, root: Path, pods: int, layout: str) -> None:
        self.root = root
        self.v2 = layout.startswith("v2")
        self.cpu_files: list[tuple[Path, int]] = []  # (file, CPU ns used per wall second)
        if self.v2:
            _write(root / "cgroup.controllers", "cpuset cpu io memory pids\n")
        else:
            for h in ("cpuacct", "cpu", "memory"):
                (root / h).mkdir(parents=True, exist_ok=True)
        mem_stat = "".join(f"{k} {v}\n" for k, v in (("anon", 50 << 20), ("file", 10 << 20), ("inactive_anon", 10 << 20),
                                                     ("active_anon", 40 << 20), ("inactive_file", 4 << 20),
                                                     ("active_file", 6 << 20), ("unevictable", 0)))
        v1_stat = "".join(f"total_{k} {v}\n" for k, v in (("inactive_anon", 10 << 20), ("active_anon", 40 << 20),
                                                          ("inactive_file", 4 << 20), ("active_file", 6 << 20),
                                                          ("unevictable", 0)))
        for i in range(pods):
            uid = _uid(i)
            qos = ("burstable", "besteffort", "guaranteed")[i % 3]
            if self.v2:
                u = uid.replace("-", "_")
                rel = (f"kubepods.slice/kubepods-pod{u}.slice" if qos == "guaranteed" else
                       f"kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{u}.slice")
            else:
                rel = f"kubepods/pod{uid}" if qos == "guaranteed" else f"kubepods/{qos}/pod{uid}"
            for cname, rate in ((self._ctr(f"{i:060d}a1b2"), 90_000_000), (self._ctr(f"{i:060d}ffff"), 100_000)):
                self._cgroup(f"{rel}/{cname}", rate, mem_stat, v1_stat, quota=True)
            self._cgroup(rel, 90_100_000 + i * 1000, mem_stat, v1_stat, quota=False)
        self.ns = 0

    def _ctr(self, cid: str) -> str:
        return f"cri-containerd-{cid}.scope" if self.v2 else cid

    def _cgroup(self, rel: str, rate: int, mem_stat: str, v1_stat: str, *, quota: bool) -> None:
        if self.v2:
            d = self.root / rel
            _write(d / "cpu.stat", "usage_usec 0\nuser_usec 0\nsystem_usec 0\n")
            _write(d / "cpu.max", "50000 100000\n" if quota else "max 100000\n")
            _write(d / "memory.stat", mem_stat)
            _write(d / "memory.current", f"{64 << 20}\n")
            self.cpu_files.append((d / "cpu.stat", rate))
        else:
            _write(self.root / "cpuacct" / rel / "cpuacct.usage", "0\n")
            _write(self.root / "cpu" / rel / "cpu.cfs_quota_us", "50000\n" if quota else "-1\n")
            _write(self.root / "cpu" / rel / "cpu.cfs_period_us", "100000\n")
            _write(self.root / "memory" / rel / "memory.stat", v1_stat)
            _write(self.root / "memory" / rel / "memory.usage_in_bytes", f"{64 << 20}\n")
            self.cpu_files.append((self.root / "cpuacct" / rel / "cpuacct.usage", rate))

    def advance(self, seconds: float) -> None:
        self.ns += int(seconds * 1e9)
        for path, rate in self.cpu_files:
            used = self.ns // 1_000_000_000 * rate
            if self.v2:
                path.write_text(f"usage_usec {used // 1000}\nuser_usec {used // 2000}\nsystem_usec {used // 2000}\n")
            else:
                path.write_text(f"{used}\n")


def _pods(n: int, layout: str) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        qos = ("Burstable", "BestEffort", "Guaranteed")[i % 3]
        cid = f"{i:060d}a1b2"
        res = {} if qos == "BestEffort" else {"requests": {"cpu": "500m", "memory": "256Mi"},
                                               "limits": {"cpu": "500m" if qos == "Guaranteed" else "1",
                                                          "memory": "256Mi"}}
        out.append({
            "metadata": {"name": f"pod-{i}", "namespace": f"ns-{i % 10}", "uid": _uid(i)},
            "spec": {"nodeName": "bench", "containers": [{"name": "app", "resources": res}]},
            "status": {"phase": "Running", "qosClass": qos, "startTime": "2023-11-14T00:00:00Z",
                       "containerStatuses": [{"name": "app", "containerID": f"containerd://{cid}"}]},
        })
    return out


def main() -> int:
    pods = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    layout = sys.argv[2] if len(sys.argv) > 2 else "v2-systemd"
    base = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else None
    tmp = Path(tempfile.mkdtemp(prefix="loadwise-bench-", dir=base))
    try:
        t_setup = time.perf_counter()
        tree = Tree(tmp / "cg", pods, layout)
        clock = FakeClock(1_700_000_000.0)
        cluster = MemoryCluster(clock=clock)
        cluster.create("Node", {"metadata": {"name": "bench"}, "status": {"allocatable": {"cpu": "32", "memory": "128Gi"}}})
        for p in _pods(pods, layout):
            cluster.create("Pod", p)
        config = AgentConfig.from_mapping({"cgroupRoot": str(tmp / "cg"), "reportJitterFraction": 0})
        agent = build_agent(config, "bench", cluster=cluster, clock=clock, layout=detect_layout(str(tmp / "cg")))
        agent.start()
        setup_s = time.perf_counter() - t_setup
        self_usage = SelfUsage()
        gc.collect()

        def tick(i: int, *, scrape_every: int = 15) -> tuple[float, float, float]:
            tree.advance(1.0)
            clock.advance(1.0)
            c0 = time.process_time()
            agent.collect_once()
            c1 = time.process_time()
            agent.report_if_due()
            if i % 10 == 0:
                agent.waterline_once()
            if i % scrape_every == 0:
                generate_latest(agent.metrics.registry)
            c2 = time.process_time()
            return c1 - c0, c2 - c1, time.perf_counter()

        collect_cpu = other_cpu = 0.0
        wall0 = time.perf_counter()
        for i in range(300):
            a, b, _ = tick(i)
            collect_cpu += a
            other_cpu += b
        phase1_wall = time.perf_counter() - wall0
        reports = agent.reporter.successes if agent.reporter else 0
        per_tick_ms = (collect_cpu + other_cpu) / 300 * 1000
        milli = per_tick_ms  # one tick per second: CPU ms per s == millicores
        for i in range(300, 1800):
            tree.ns += 1_000_000_000  # keep counters moving without rewriting every file every tick
            if i % 10 == 0:
                tree.advance(0.0)
            clock.advance(1.0)
            agent.collect_once()
            agent.report_if_due()
        gc.collect()
        rss_mib = self_usage.rss_bytes() / 2**20
        hist_mib = agent.store.nbytes / 2**20
        nm = cluster.get("NodeMetric", "bench")
        reported = len(nm["status"]["podsMetric"])
        print(f"agent overhead: {pods} pods ({layout}, {pods * 2} containers), 1 s collection, simulated clock")
        print(f"  setup {setup_s:.1f}s; phase 1 wall {phase1_wall:.1f}s; {reports} NodeMetric reports in 5 min; "
              f"{reported} pods in podsMetric")
        print(f"  CPU per tick: collect {collect_cpu / 300 * 1000:.2f} ms + report/waterline/scrape "
              f"{other_cpu / 300 * 1000:.2f} ms = {per_tick_ms:.2f} ms")
        print(f"  CPU per pod per tick: {per_tick_ms / pods * 1000:.1f} us")
        print(f"  average CPU over 5 min at 1 tick/s: {milli:.1f} millicores "
              f"(target {TARGET_MILLI:.0f}m: {'OK' if milli <= TARGET_MILLI else 'OVER'}; "
              f"{milli / KOORDLET_BUDGET_MILLI:.1%} of koordlet's 200m budget, "
              f"{milli / CRANE_IDLE_MILLI:.1%} of crane-agent's ~237m idle)")
        print(f"  RSS after 30 min of history: {rss_mib:.1f} MiB (history buffers {hist_mib:.2f} MiB; "
              f"target {TARGET_RSS_MIB:.0f} MiB: {'OK' if rss_mib <= TARGET_RSS_MIB else 'OVER'}; "
              f"{rss_mib / 256:.1%} of koordlet's 256Mi)")
        agent.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
