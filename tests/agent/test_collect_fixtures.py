"""Collectors against the fixture cgroup trees: v1/v2 × systemd/cgroupfs, two ticks 10 s apart.

The numbers come from tests/agent/fixtures/generate.py (its docstring lists the expected rates).
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from agent.collect.cgroups import CGROUPFS, SYSTEMD, V1, V2, CgroupReader, detect_layout, scan_pods
from agent.collect.collector import Collector
from agent.collect.procfs import ProcfsNodeSource, read_file
from common.clock import FakeClock
from common.qos import QoSClass

FIXTURES = Path(__file__).parent / "fixtures"
MiB = 1024 * 1024
G = "0a1b2c3d-0000-4000-8000-000000000001"
BU = "0a1b2c3d-0000-4000-8000-000000000002"
BE = "0a1b2c3d-0000-4000-8000-000000000003"
GONE = "0a1b2c3d-0000-4000-8000-000000000004"
NEW = "0a1b2c3d-0000-4000-8000-000000000005"
LAYOUTS = [(V1, SYSTEMD), (V1, CGROUPFS), (V2, SYSTEMD), (V2, CGROUPFS)]


def _install(tmp: Path, version: str, driver: str, tick: int) -> None:
    """Replace the tree under ``tmp`` by the fixture's tick (as the kernel would between reads)."""
    for name, src in (("cg", FIXTURES / "cgroups" / f"{version}-{driver}" / f"tick{tick}"), ("proc", FIXTURES / "proc" / f"tick{tick}")):
        dst = tmp / name
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)


class _CountingRead:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def __call__(self, path: str) -> bytes:
        self.counts[path] += 1
        return read_file(path)


@pytest.mark.parametrize(("version", "driver"), LAYOUTS)
def test_two_ticks_give_exact_rates(tmp_path: Path, version: str, driver: str) -> None:
    _install(tmp_path, version, driver, 1)
    layout = detect_layout(str(tmp_path / "cg"))
    assert (layout.version, layout.driver) == (version, driver)
    reads = _CountingRead()
    clock = FakeClock(1_700_000_000.0)
    collector = Collector(ProcfsNodeSource(str(tmp_path / "proc"), ticks_per_second=100), CgroupReader(layout, read=reads), clock)

    first = collector.collect()
    assert first.node_cpu_cores is None  # the first reading only primes
    assert set(first.pods) == {G, BU, BE, GONE}
    assert all(p.cpu_cores is None for p in first.pods.values())
    # Every file is read at most once per tick.
    assert max(reads.counts.values()) == 1

    _install(tmp_path, version, driver, 2)
    clock.advance(10.0)
    reads.counts.clear()
    tick = collector.collect()
    assert max(reads.counts.values()) == 1
    assert tick.errors == ()
    assert tick.node_cpu_cores == pytest.approx(0.41, abs=1e-12)
    assert tick.cpu_count == 2
    assert tick.node_memory is not None
    assert tick.node_memory.usage_without_page_cache == (16384000 - 11000000) * 1024
    assert tick.node_memory.usage_with_page_cache == (16384000 - 7000000) * 1024

    assert set(tick.pods) == {G, BU, BE, NEW}  # GONE was deleted, NEW appeared
    g, bu, be, new = tick.pods[G], tick.pods[BU], tick.pods[BE], tick.pods[NEW]
    assert (g.qos, bu.qos, be.qos) == (QoSClass.GUARANTEED, QoSClass.BURSTABLE, QoSClass.BEST_EFFORT)
    assert g.cpu_cores == pytest.approx(1.5, abs=1e-12)
    assert bu.cpu_cores == pytest.approx(0.25, abs=1e-12)
    assert be.cpu_cores == 0.0
    assert new.cpu_cores is None
    # Memory on v1: anon + unevictable (koordlet), page cache separately, from the hierarchical total_*
    # keys.  On v2: memory.current - inactive_file (Koordinator's v2 definition; current includes the
    # 3 MiB of kernel memory the anon/file sums leave out).
    assert g.memory is not None and bu.memory is not None
    if version == V1:
        assert g.memory.usage_without_page_cache == (110 + 210 + 4) * MiB
        assert g.memory.usage_with_page_cache == (110 + 210 + 4 + 30 + 60) * MiB
        assert bu.memory.usage_without_page_cache == 32 * MiB
    else:
        assert g.memory.usage_without_page_cache == (110 + 210 + 4 + 30 + 60 + 3 - 30) * MiB
        assert g.memory.usage_with_page_cache == (110 + 210 + 4 + 30 + 60 + 3) * MiB
        assert bu.memory.usage_without_page_cache == (32 + 3 + 2) * MiB
    assert g.working_set_bytes == (110 + 210 + 4 + 30 + 60 + 3 - 30) * MiB

    by_id = {c.id: c for c in g.containers}
    assert set(by_id) == {"a1" * 32, "a2" * 32, "af" * 32}
    assert by_id["a1" * 32].cpu_cores == pytest.approx(1.4, abs=1e-12)
    assert by_id["a2" * 32].cpu_cores == pytest.approx(0.1, abs=1e-12)
    assert by_id["a1" * 32].cpu_quota_us == 200_000 and by_id["a1" * 32].cpu_period_us == 100_000
    assert by_id["af" * 32].cpu_quota_us == -1
    (bu_app,) = [c for c in bu.containers if c.id == "b1" * 32]
    assert bu_app.cpu_quota_us == 50_000 and bu_app.cpu_cores == pytest.approx(0.25, abs=1e-12)

    sample = tick.usage_sample({G, BU})
    assert set(sample.pods) == {G, BU}
    assert sample.node_memory_bytes == (16384000 - 11000000) * 1024


@pytest.mark.parametrize(("version", "driver"), LAYOUTS)
def test_pod_dir_paths_match_kubelet_naming(tmp_path: Path, version: str, driver: str) -> None:
    _install(tmp_path, version, driver, 1)
    layout = detect_layout(str(tmp_path / "cg"))
    found = scan_pods(layout)
    for uid, pod in found.items():
        assert pod.rel == layout.pod_dir(uid, pod.qos)
    if driver == SYSTEMD:
        assert found[BU].rel == (
            "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b2c3d_0000_4000_8000_000000000002.slice"
        )
        assert found[G].rel == "kubepods.slice/kubepods-pod0a1b2c3d_0000_4000_8000_000000000001.slice"
    else:
        assert found[BE].rel == f"kubepods/besteffort/pod{BE}"
        assert found[G].rel == f"kubepods/pod{G}"


def test_counter_reset_reprimes_instead_of_going_negative(tmp_path: Path) -> None:
    _install(tmp_path, V2, CGROUPFS, 1)
    layout = detect_layout(str(tmp_path / "cg"))
    clock = FakeClock()
    collector = Collector(ProcfsNodeSource(str(tmp_path / "proc"), ticks_per_second=100), CgroupReader(layout), clock)
    collector.collect()
    _install(tmp_path, V2, CGROUPFS, 2)
    clock.advance(10)
    assert collector.collect().pods[G].cpu_cores == pytest.approx(1.5)
    # The pod's counter and the node's counters restart from a small value (cgroup recreated, host rebooted).
    stat = tmp_path / "cg" / layout.pod_dir(G, QoSClass.GUARANTEED) / "cpu.stat"
    stat.write_text("usage_usec 1000\nuser_usec 1000\nsystem_usec 0\n")
    (tmp_path / "proc" / "stat").write_text("cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 10 0 10 100 0 0 0 0 0 0\n")
    clock.advance(10)
    tick = collector.collect()
    assert tick.pods[G].cpu_cores is None
    assert tick.node_cpu_cores is None
    stat.write_text("usage_usec 2001000\nuser_usec 2001000\nsystem_usec 0\n")
    (tmp_path / "proc" / "stat").write_text("cpu  110 0 10 100 0 0 0 0 0 0\ncpu0 110 0 10 100 0 0 0 0 0 0\n")
    clock.advance(10)
    tick = collector.collect()
    assert tick.pods[G].cpu_cores == pytest.approx(0.2)
    assert tick.node_cpu_cores == pytest.approx(0.1)


def test_cgroup_vanishing_mid_tick_is_not_an_error(tmp_path: Path) -> None:
    _install(tmp_path, V1, CGROUPFS, 1)
    layout = detect_layout(str(tmp_path / "cg"))

    def read(path: str) -> bytes:
        if BU in path and path.endswith("memory.stat"):
            shutil.rmtree(Path(path).parent)  # removed between listing and reading
            raise FileNotFoundError(path)
        return read_file(path)

    tick = Collector(ProcfsNodeSource(str(tmp_path / "proc")), CgroupReader(layout, read=read), FakeClock()).collect()
    assert tick.errors == ()
    assert tick.pods[BU].memory is None
    assert tick.pods[BU].to_usage().memory_bytes is None


@pytest.mark.parametrize("version", [V1, V2])
def test_a_file_missing_from_a_live_cgroup_is_a_collection_error(tmp_path: Path, version: str) -> None:
    _install(tmp_path, version, CGROUPFS, 1)
    layout = detect_layout(str(tmp_path / "cg"))
    mem_dir = Path(layout.memory_dir) / layout.pod_dir(BU, QoSClass.BURSTABLE)
    usage_file = "memory.usage_in_bytes" if version == V1 else "memory.current"
    (mem_dir / usage_file).unlink()  # a v2 host without the memory controller delegated, for instance
    tick = Collector(ProcfsNodeSource(str(tmp_path / "proc")), CgroupReader(layout), FakeClock()).collect()
    assert tick.errors == (f"pod cgroup {layout.pod_dir(BU, QoSClass.BURSTABLE)}: missing {mem_dir / usage_file}",)
    assert tick.pods[BU].working_set_bytes is None
    # v2 pod memory is memory.current - inactive_file: without current there is no pod memory at all.
    assert (tick.pods[BU].memory is None) == (version == V2)


def test_missing_kubepods_and_missing_proc_are_reported_not_raised(tmp_path: Path) -> None:
    (tmp_path / "cg" / "cpuacct").mkdir(parents=True)
    layout = detect_layout(str(tmp_path / "cg"))
    assert layout.version == V1
    tick = Collector(ProcfsNodeSource(str(tmp_path / "noproc")), CgroupReader(layout), FakeClock()).collect()
    assert tick.pods == {}
    assert tick.node_cpu_cores is None and tick.node_memory is None
    assert any("node cpu" in e for e in tick.errors) and any("node memory" in e for e in tick.errors)


def test_hybrid_host_prefers_the_hierarchy_holding_kubepods(tmp_path: Path) -> None:
    root = tmp_path / "cg"
    (root / "cpuacct").mkdir(parents=True)
    (root / "memory").mkdir()
    (root / "unified" / "kubepods.slice").mkdir(parents=True)
    (root / "unified" / "cgroup.controllers").write_text("\n")
    layout = detect_layout(str(root))
    assert (layout.version, layout.driver) == (V2, SYSTEMD)
    assert layout.cpuacct_dir == str(root / "unified")
    # With kubepods under v1 instead, v1 wins.
    (root / "unified" / "kubepods.slice").rmdir()
    (root / "cpuacct" / "kubepods").mkdir()
    assert detect_layout(str(root)).version == V1
    # Explicit settings override the probe.
    forced = detect_layout(str(root), version="v2", driver="cgroupfs")
    assert (forced.version, forced.driver) == (V2, CGROUPFS)
    with pytest.raises(ValueError, match="driver"):
        detect_layout(str(root), driver="docker")
    with pytest.raises(FileNotFoundError):
        detect_layout(str(tmp_path / "nothing"))


def test_custom_kubelet_cgroup_root_and_co_mounted_v1_controllers(tmp_path: Path) -> None:
    root = tmp_path / "cg"
    pod = root / "cpu,cpuacct" / "custom" / "kubepods" / "burstable" / f"pod{BU}"
    pod.mkdir(parents=True)
    (pod / "cpuacct.usage").write_text("5\n")
    layout = detect_layout(str(root), parent="/custom")
    assert layout.cpuacct_dir == layout.cpu_dir == str(root / "cpu,cpuacct")
    assert layout.driver == CGROUPFS
    assert scan_pods(layout)[BU].rel == f"custom/kubepods/burstable/pod{BU}"
