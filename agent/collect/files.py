"""Kernel files kept open between ticks and re-read with ``pread`` at offset 0.

The agent reads the same few hundred cgroupfs and procfs files every second.  Opening a file walks
the path and allocates a file object each time; that, not the read, was most of the agent's kernel
time.  A seq_file regenerates its contents when read again from offset 0, so an open descriptor
serves every later tick.  A descriptor whose cgroup was removed fails with ENODEV (or ENOENT); it is
closed and forgotten, and the error reaches the caller as it would for a fresh open.

Only files on kernel filesystems (procfs, cgroupfs, sysfs, as listed in /proc/self/mountinfo) are
kept open: a regular file replaced on disk (a test fixture) must be read afresh.  At most
``capacity`` descriptors are held (half the soft RLIMIT_NOFILE by default, so the process
never runs out); beyond that files are opened, read and closed as before.  Not thread-safe: the
collector serialises its readers.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable

__all__ = ["OpenFiles", "default_capacity", "kernel_mounts", "READ_LIMIT"]

READ_LIMIT = 65536  # cgroupfs and procfs files the agent reads are a few KiB at most
_KERNEL_FS = {"proc", "cgroup", "cgroup2", "sysfs"}


def kernel_mounts(mountinfo: str = "/proc/self/mountinfo") -> tuple[tuple[str, bool], ...]:
    """Every mount point with whether it is procfs, cgroupfs or sysfs, longest first.

    The first mount point a path starts with is the file system it lives on (a tmpfs at
    /sys/fs/cgroup sits inside sysfs; its cgroup mounts inside it).
    """
    points: dict[str, bool] = {}
    try:
        with open(mountinfo, "rb") as f:
            for line in f:
                fields = line.split()
                if b"-" not in fields:
                    continue
                fstype = fields[fields.index(b"-") + 1].decode()
                points[fields[4].decode().replace("\\040", " ")] = fstype in _KERNEL_FS
    except OSError:
        return ()
    return tuple(sorted(points.items(), key=lambda p: len(p[0]), reverse=True))


def default_capacity() -> int:
    """Half the soft open-files limit, leaving the other half to sockets, logs and libraries."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 100_000
    return max(0, soft // 2 - 64)


def _read_once(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.pread(fd, READ_LIMIT, 0)
    finally:
        os.close(fd)


class OpenFiles:
    """A path -> descriptor cache; ``read`` is a drop-in for ``read_file`` on small kernel files."""

    def __init__(self, capacity: int | None = None, mounts: tuple[tuple[str, bool], ...] | None = None) -> None:
        self._capacity = default_capacity() if capacity is None else capacity
        self._mounts = kernel_mounts() if mounts is None else mounts
        self._fds: dict[str, int] = {}

    def _keepable(self, path: str) -> bool:
        if len(self._fds) >= self._capacity:
            return False
        for point, kernel in self._mounts:
            if path.startswith(point if point.endswith("/") else point + "/"):
                return kernel
        return False

    def __len__(self) -> int:
        return len(self._fds)

    def read(self, path: str) -> bytes:
        """The whole file (up to READ_LIMIT bytes), from a kept descriptor when there is room for one."""
        fd = self._fds.get(path)
        if fd is None:
            if not self._keepable(path):
                return _read_once(path)
            fd = self._fds[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            return os.pread(fd, READ_LIMIT, 0)
        except OSError:
            del self._fds[path]
            os.close(fd)
            raise

    def retain(self, keep: Callable[[str], bool]) -> int:
        """Close every descriptor whose path ``keep`` rejects (cgroups that are gone); returns how many."""
        gone = [(p, fd) for p, fd in self._fds.items() if not keep(p)]
        for p, fd in gone:
            del self._fds[p]
            os.close(fd)
        return len(gone)

    def close(self) -> None:
        self.retain(lambda _: False)
