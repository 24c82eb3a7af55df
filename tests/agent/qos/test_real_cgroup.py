"""The throttle actuator against the real kernel: a pod-shaped cgroup with a CPU burner, measured usage.

The engine sees a NodeState built from the cgroup's own CPU accounting (cpuacct.usage on v1, cpu.stat
usage_usec on v2), so "node usage" here is the burner's; the waterline is set below what it burns.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent.qos.actuate import Actuation, CgroupQuotaWriter, RecordingActuators, read_cpu_quota, write_cpu_quota
from agent.qos.policy import PolicyStore
from agent.qos.runtime import WaterlineRuntime
from agent.qos.state import ContainerState, NodeState, PodState
from common.clock import SystemClock
from common.resources import Resources
from tests.agent.qos.factories import policy_dict, rule

pytestmark = pytest.mark.cgroup

V1_CPU = Path("/sys/fs/cgroup/cpu")
V1_ACCT = Path("/sys/fs/cgroup/cpuacct")
V2 = Path("/sys/fs/cgroup/unified")
TICK = 0.5


@dataclass
class Hierarchy:
    cpu_dir: Path  # where the quota lives (the container cgroup)
    acct_dir: Path  # where usage is read
    v2: bool
    made: list[Path] = field(default_factory=list)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def usage_ns(self) -> int:
        if self.v2:
            for line in (self.acct_dir / "cpu.stat").read_text().splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) * 1000
            raise AssertionError("cpu.stat without usage_usec")
        return int((self.acct_dir / "cpuacct.usage").read_text())

    def burn(self) -> subprocess.Popen[bytes]:
        targets = [self.cpu_dir / "cgroup.procs"] + ([] if self.v2 else [self.acct_dir / "cgroup.procs"])

        def enter() -> None:
            for t in targets:
                t.write_text(str(os.getpid()))

        p = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=enter)  # noqa: S603
        self.procs.append(p)
        return p


def _mk(path: Path, made: list[Path]) -> None:
    path.mkdir()
    made.append(path)


@pytest.fixture
def cgroup() -> Iterator[Hierarchy]:
    if os.geteuid() != 0:
        pytest.skip("needs root to create cgroups")
    name = f"loadwise-qos-test-{os.getpid()}"
    made: list[Path] = []
    h: Hierarchy | None = None
    try:
        if (V1_CPU / "cpu.cfs_quota_us").exists() and (V1_ACCT / "cpuacct.usage").exists():
            for root in (V1_CPU, V1_ACCT):
                _mk(root / name, made)
                _mk(root / name / "pod-uid", made)
                _mk(root / name / "pod-uid" / "main", made)
            h = Hierarchy(V1_CPU / name / "pod-uid" / "main", V1_ACCT / name / "pod-uid" / "main", False, made)
        elif "cpu" in (V2 / "cgroup.controllers").read_text().split() if (V2 / "cgroup.controllers").exists() else False:
            _mk(V2 / name, made)
            (V2 / "cgroup.subtree_control").write_text("+cpu")
            (V2 / name / "cgroup.subtree_control").write_text("+cpu")
            _mk(V2 / name / "pod-uid", made)
            (V2 / name / "pod-uid" / "cgroup.subtree_control").write_text("+cpu")
            _mk(V2 / name / "pod-uid" / "main", made)
            h = Hierarchy(V2 / name / "pod-uid" / "main", V2 / name / "pod-uid" / "main", True, made)
        else:
            pytest.skip("no writable cgroup with the cpu controller (v1 cpu+cpuacct or v2 cpu)")
    except PermissionError as exc:
        for d in reversed(made):
            d.rmdir()
        pytest.skip(f"cgroups are not writable here: {exc}")
    try:
        yield h
    finally:
        for p in h.procs:
            p.send_signal(signal.SIGKILL)
            p.wait()
        time.sleep(0.05)
        for d in reversed(made):
            d.rmdir()


def _state(h: Hierarchy, usage_milli: int, now: float) -> NodeState:
    quota, period = read_cpu_quota(h.cpu_dir)
    c = ContainerState("main", usage_milli, quota, period, str(h.cpu_dir), Resources(), Resources())
    pod = PodState("batch", "burner", "pod-uid", "BestEffort", 0, "koord-batch", now - 60, usage_milli, 0,
                   Resources(), Resources(), (c,))
    return NodeState("n1", now, (os.cpu_count() or 1) * 1000, 0, usage_milli, None, (pod,))


def _measure(h: Hierarchy, seconds: float) -> int:
    u0, t0 = h.usage_ns(), time.monotonic()
    time.sleep(seconds)
    return int((h.usage_ns() - u0) / (time.monotonic() - t0) / 1e6)


def _best_effort_throttler(waterline: int, action: dict[str, Any]) -> tuple[CgroupQuotaWriter, WaterlineRuntime]:
    """A runtime whose one rule throttles BestEffort pods above ``waterline`` millicores, writing real quotas."""
    store = PolicyStore()
    store.upsert(policy_dict(rule(value=str(waterline), action=action, restoreThreshold=2),
                             pod_qos=[{"labelSelector": {"matchLabels": {}}, "scopeSelector": {"matchExpressions": [
                                 {"scopeName": "QOSClass", "operator": "In", "values": ["BestEffort"]}]},
                                 "allowedActions": ["throttle"]}]))
    writer = CgroupQuotaWriter()
    rt = WaterlineRuntime(None, "n1", SystemClock(), Actuation(writer, RecordingActuators(), RecordingActuators()),
                          registry=CollectorRegistry(), policies=store)
    return writer, rt


def test_throttle_brings_measured_usage_under_the_waterline_and_restore_lifts_it(cgroup: Hierarchy) -> None:
    h = cgroup
    burners = min(2, os.cpu_count() or 1)
    for _ in range(burners):
        h.burn()
    baseline = _measure(h, TICK)
    assert baseline > 300, f"the burner did not get CPU ({baseline}m)"
    waterline = int(baseline * 0.6)
    action = {"name": "throttle", "coolDownSeconds": 1, "throttle": {"cpuThrottle": {"stepCPURatio": 50}}}
    writer, rt = _best_effort_throttler(waterline, action)

    usage, seen = baseline, []
    for _ in range(8):
        report = rt.tick(_state(h, usage, time.time()))
        usage = _measure(h, TICK)
        seen.append((report.triggered, read_cpu_quota(h.cpu_dir)[0], usage))
        if writer.writes and usage < waterline:
            break
    assert writer.writes, f"never throttled: {seen}"
    assert usage < waterline, f"usage did not fall under {waterline}m: {seen}"
    throttled_quota = read_cpu_quota(h.cpu_dir)[0]
    assert 0 < throttled_quota <= waterline * 100  # µs per 100 ms period: below the line, not merely a 50 % step

    for proc in h.procs:  # load falls: the burners stop
        proc.kill()
        proc.wait()
    for _ in range(12):
        rt.tick(_state(h, _measure(h, TICK / 2), time.time()))
        if read_cpu_quota(h.cpu_dir)[0] == -1:
            break
    quotas = [w[1] for w in writer.writes]
    assert read_cpu_quota(h.cpu_dir)[0] == -1, f"quota not lifted back: {quotas}"
    ups = quotas[quotas.index(throttled_quota) + 1:]
    assert ups[-1] == -1 and all(a < b for a, b in zip(ups, ups[1:-1], strict=False)), quotas
    print(f"baseline {baseline}m waterline {waterline}m ticks {seen} quota writes {quotas}")


def _boost(h: Hierarchy) -> None:
    """On a shared machine give the burner's group the largest v1 weight, so it gets what its quota allows."""
    if not h.v2:
        (h.cpu_dir.parent.parent / "cpu.shares").write_text("262144")


@pytest.mark.slow
def test_throttle_settles_on_the_waterline_and_lifts_when_the_load_stops(cgroup: Hierarchy) -> None:
    """A burner wanting a whole core under a 200m line: within ±15 % of the line, then at most two quota
    changes in a minute of steady load, and back to unlimited once it stops (the old ×1.5 restore steps
    cycled the quota between 11010 and 29362 µs every ~8 s without settling)."""
    h = cgroup
    _boost(h)
    h.burn()
    tick = 2.0
    baseline = _measure(h, 1.0)
    assert baseline > 400, f"the burner did not get CPU ({baseline}m)"
    waterline = 200
    action = {"name": "throttle", "throttle": {"cpuThrottle": {"stepCPURatio": 50}}}
    writer, rt = _best_effort_throttler(waterline, action)

    def step(usage: int) -> int:
        rt.tick(_state(h, usage, time.time()))
        return _measure(h, tick)

    usage, converge = baseline, []
    for _ in range(15):  # at most 30 s to come within the band
        usage = step(usage)
        converge.append((read_cpu_quota(h.cpu_dir)[0], usage))
        if abs(usage - waterline) <= 0.15 * waterline:
            break
    assert abs(usage - waterline) <= 0.15 * waterline, f"never came within ±15 % of {waterline}m: {converge}"
    writes_before = len(writer.writes)
    steady = []
    for _ in range(int(60 / tick)):  # a minute of steady load
        usage = step(usage)
        steady.append(usage)
    changes = len(writer.writes) - writes_before
    outside = [u for u in steady if abs(u - waterline) > 0.15 * waterline]
    assert changes <= 2, f"{changes} quota changes in a minute of steady load: {writer.writes[writes_before:]}"
    assert not outside, f"left the ±15 % band: {steady}"

    for proc in h.procs:  # the load stops
        proc.kill()
        proc.wait()
    for _ in range(5):
        step(_measure(h, 0.2))
        if read_cpu_quota(h.cpu_dir)[0] == -1:
            break
    assert read_cpu_quota(h.cpu_dir)[0] == -1, f"quota not lifted back: {[w[1] for w in writer.writes]}"
    print(f"baseline {baseline}m, converging {converge}, steady {steady}, writes {[w[1] for w in writer.writes]}")


def test_cpu_max_holds_a_burner_on_a_real_cgroup_v2() -> None:
    """``cpu.max`` written by the actuator on the cgroup2 mount, with a burner inside, read back and obeyed."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create cgroups")
    controllers = (V2 / "cgroup.controllers").read_text().split() if (V2 / "cgroup.controllers").exists() else None
    if controllers is None:
        pytest.skip(f"no cgroup2 mount at {V2}")
    if "cpu" not in controllers:
        pytest.skip(f"this machine's kernel offers no cpu controller on the cgroup2 mount at {V2} (cgroup.controllers:"
                    f" {' '.join(controllers)!r}; it is bound to the v1 hierarchy), so there is no cpu.max to write")
    group = V2 / f"loadwise-cpumax-test-{os.getpid()}"
    (V2 / "cgroup.subtree_control").write_text("+cpu")
    group.mkdir()
    h = Hierarchy(group, group, True, [group])
    try:
        write_cpu_quota(group, 20_000, 100_000)  # 200 millicores
        assert read_cpu_quota(group) == (20_000, 100_000)
        h.burn()
        assert _measure(h, 2.0) <= 230
        write_cpu_quota(group, -1, 100_000)
        assert read_cpu_quota(group) == (-1, 100_000)
    finally:
        for p in h.procs:
            p.kill()
            p.wait()
        time.sleep(0.05)
        group.rmdir()
