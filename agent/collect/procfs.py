"""Node CPU and memory from procfs, koordlet's way (docs/design/nodemetric.md §2).

CPU: the aggregate ``cpu`` line of ``/proc/stat``; busy = user + nice + system + irq + softirq
(idle, iowait, steal and guest excluded); cores = Δbusy ticks / CLK_TCK / Δseconds.  The first
reading only primes the counter, and a counter that goes backwards (host reboot under a
long-lived container, a restored checkpoint) re-primes rather than reporting a negative rate.

Memory: ``MemTotal − MemAvailable`` (the default ``usageWithoutPageCache``), or
``MemTotal − MemFree`` when page cache counts (``usageWithPageCache``).

Parsing is pure; :class:`ProcfsNodeSource` keeps /proc/stat and /proc/meminfo open between ticks
(:mod:`agent.collect.files`), and :class:`CounterRate` takes its timestamps from the caller.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from agent.collect.files import OpenFiles

__all__ = [
    "CpuTicks",
    "NodeMemory",
    "CounterRate",
    "RateTracker",
    "parse_proc_stat",
    "parse_meminfo",
    "node_memory",
    "read_file",
    "clock_ticks",
    "ProcfsNodeSource",
    "read_loadavg",
]

# Indices of user, nice, system, irq, softirq on the "cpu" line (idle=3, iowait=4, steal=7, guest=8).
_BUSY_FIELDS = (0, 1, 2, 5, 6)


def read_file(path: str, limit: int = 65536) -> bytes:
    """One read of a small kernel file (procfs/cgroupfs files report their size as 0 or 4096)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, limit)
            if not chunk:
                break
            chunks.append(chunk)
            if len(chunk) < limit:
                break
        return b"".join(chunks)
    finally:
        os.close(fd)


def clock_ticks() -> int:
    """USER_HZ, the unit of /proc/stat (almost always 100)."""
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        return 100


@dataclass(frozen=True, slots=True)
class CpuTicks:
    """Cumulative ticks from /proc/stat's aggregate line."""

    busy: int
    total: int
    cpus: int


def parse_proc_stat(data: bytes) -> CpuTicks:
    """The aggregate line's busy and total ticks, and how many ``cpuN`` lines follow it."""
    agg: list[int] | None = None
    cpus = 0
    for line in data.splitlines():
        if line.startswith(b"cpu "):
            agg = [int(x) for x in line.split()[1:]]
        elif line.startswith(b"cpu"):
            cpus += 1
        elif agg is not None:
            break
    if agg is None:
        raise ValueError("/proc/stat: no aggregate cpu line")
    if len(agg) < 7:
        raise ValueError("/proc/stat: cpu line has fewer than 7 fields")
    return CpuTicks(busy=sum(agg[i] for i in _BUSY_FIELDS), total=sum(agg[:8]), cpus=cpus)


@dataclass(frozen=True, slots=True)
class NodeMemory:
    """Node memory in bytes, both policies at once (one read of /proc/meminfo serves both)."""

    total: int
    usage_without_page_cache: int
    usage_with_page_cache: int


def parse_meminfo(data: bytes) -> dict[str, int]:
    """``/proc/meminfo`` as bytes by key (values given in kB are multiplied by 1024)."""
    out: dict[str, int] = {}
    for line in data.splitlines():
        key, sep, rest = line.partition(b":")
        if not sep:
            continue
        parts = rest.split()
        if not parts:
            continue
        try:
            v = int(parts[0])
        except ValueError:
            continue
        if len(parts) > 1 and parts[1] == b"kB":
            v *= 1024
        out[key.decode("ascii", "replace").strip()] = v
    return out


def node_memory(meminfo: dict[str, int]) -> NodeMemory:
    total = meminfo.get("MemTotal")
    if total is None:
        raise ValueError("/proc/meminfo: no MemTotal")
    free = meminfo.get("MemFree", 0)
    # Kernels before 3.14 have no MemAvailable; approximate it as free + page cache + buffers.
    available = meminfo.get("MemAvailable", free + meminfo.get("Cached", 0) + meminfo.get("Buffers", 0))
    return NodeMemory(
        total=total,
        usage_without_page_cache=max(0, total - available),
        usage_with_page_cache=max(0, total - free),
    )


def read_loadavg(proc_root: str = "/proc") -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages from ``<proc_root>/loadavg``."""
    parts = read_file(os.path.join(proc_root, "loadavg")).split()
    if len(parts) < 3:
        raise ValueError("loadavg: fewer than three fields")
    return float(parts[0]), float(parts[1]), float(parts[2])


class CounterRate:
    """Rate of one cumulative counter between consecutive readings at caller-given times."""

    __slots__ = ("_t", "_v")

    def __init__(self) -> None:
        self._t: float | None = None
        self._v: float = 0.0

    def update(self, t: float, value: float) -> float | None:
        """Units of ``value`` per second since the last reading; ``None`` while priming or after a reset."""
        prev_t, prev_v = self._t, self._v
        if prev_t is not None and t <= prev_t:
            return None  # same instant (or a clock that went back): keep the older reading
        self._t, self._v = t, value
        if prev_t is None or value < prev_v:
            return None
        return (value - prev_v) / (t - prev_t)

    def reset(self) -> None:
        self._t = None


class RateTracker:
    """Many counters by key (pods, containers); keys unseen for ``ttl`` seconds are forgotten."""

    def __init__(self, ttl: float) -> None:
        self._ttl = ttl
        self._rates: dict[str, CounterRate] = {}
        self._seen: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._rates)

    def set_ttl(self, ttl: float) -> None:
        self._ttl = ttl

    def update(self, key: str, t: float, value: float) -> float | None:
        r = self._rates.get(key)
        if r is None:
            r = self._rates[key] = CounterRate()
        self._seen[key] = t
        return r.update(t, value)

    def expire(self, now: float) -> list[str]:
        gone = [k for k, seen in self._seen.items() if now - seen > self._ttl]
        for k in gone:
            del self._rates[k]
            del self._seen[k]
        return gone


class ProcfsNodeSource:
    """Node CPU cores and memory from ``<proc_root>/stat`` and ``<proc_root>/meminfo``."""

    name = "procfs"

    def __init__(self, proc_root: str = "/proc", ticks_per_second: int | None = None) -> None:
        self.proc_root = proc_root
        self._hz = ticks_per_second or clock_ticks()
        self._busy = CounterRate()
        self._cpus = os.cpu_count() or 1
        self._files = OpenFiles()

    def available(self) -> bool:
        return os.access(os.path.join(self.proc_root, "stat"), os.R_OK) and os.access(
            os.path.join(self.proc_root, "meminfo"), os.R_OK
        )

    def cpu_cores(self, t: float) -> float | None:
        """Busy cores since the previous call (``t`` monotonic seconds); ``None`` on the first call."""
        ticks = parse_proc_stat(self._files.read(os.path.join(self.proc_root, "stat")))
        self._cpus = ticks.cpus or self._cpus
        rate = self._busy.update(t, float(ticks.busy))
        return None if rate is None else rate / self._hz

    def memory(self) -> NodeMemory:
        return node_memory(parse_meminfo(self._files.read(os.path.join(self.proc_root, "meminfo"))))

    def cpu_count(self) -> int:
        """Logical CPUs as /proc/stat listed them at the last reading."""
        return self._cpus
