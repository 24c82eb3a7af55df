"""Kept-open kernel files: re-read with pread, dropped when their cgroup goes, never kept for plain files."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from agent.collect.files import OpenFiles, kernel_mounts

CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def test_proc_files_are_kept_open_and_read_fresh_each_time() -> None:
    files = OpenFiles()
    first = files.read("/proc/self/stat")
    assert len(files) == 1
    sum(range(200_000))  # burn a little CPU so utime can move
    again = files.read("/proc/self/stat")
    assert len(files) == 1
    assert first.split()[0] == again.split()[0]  # same file, contents regenerated from offset 0
    assert files.read("/proc/uptime") != b""
    assert len(files) == 2
    files.close()
    assert len(files) == 0


def test_plain_files_are_read_afresh_not_kept(tmp_path: Path) -> None:
    f = tmp_path / "memory.stat"
    f.write_text("one\n")
    files = OpenFiles()
    assert files.read(str(f)) == b"one\n"
    f.unlink()
    f.write_text("two\n")  # a fixture replaced on disk: a kept descriptor would still read "one"
    assert files.read(str(f)) == b"two\n"
    assert len(files) == 0


def test_capacity_bounds_the_descriptors_kept() -> None:
    files = OpenFiles(capacity=1)
    files.read("/proc/uptime")
    files.read("/proc/loadavg")
    assert len(files) == 1
    assert files.read("/proc/loadavg") != b""


def test_mountinfo_names_the_kernel_file_systems() -> None:
    mounts = dict(kernel_mounts())
    assert mounts["/proc"] is True
    lengths = [len(p) for p, _ in kernel_mounts()]
    assert lengths == sorted(lengths, reverse=True)


def test_a_removed_cgroup_drops_its_descriptor() -> None:
    if os.geteuid() != 0 or not (CPUACCT / "cpuacct.usage").exists():
        pytest.skip("needs root and a cgroup v1 cpuacct hierarchy at /sys/fs/cgroup/cpuacct")
    group = CPUACCT / f"loadwise-files-test-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    files = OpenFiles()
    try:
        assert files.read(str(group / "cpuacct.usage")).strip() == b"0"
        assert files.retain(lambda p: True) == 0 and len(files) == 1
    finally:
        group.rmdir()
    with pytest.raises(OSError):
        files.read(str(group / "cpuacct.usage"))  # ENODEV from the kept descriptor, or ENOENT on reopen
    assert len(files) == 0
