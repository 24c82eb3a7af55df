"""Node usage through psutil, for hosts where procfs is not readable, and the agent's own cost.

psutil reads the same kernel counters as :mod:`agent.collect.procfs` on Linux but also works on
hosts without ``/proc`` (and honours ``psutil.PROCFS_PATH`` for a mounted host procfs), so it is
the fallback node source in standalone mode.  Busy CPU uses the same fields as koordlet (user,
nice, system, irq, softirq); fields a platform lacks count as zero.
"""

from __future__ import annotations

import os

import psutil

from agent.collect.procfs import CounterRate, NodeMemory

__all__ = ["PsutilNodeSource", "SelfUsage"]

_BUSY = ("user", "nice", "system", "irq", "softirq")


class PsutilNodeSource:
    name = "psutil"

    def __init__(self) -> None:
        self._busy = CounterRate()

    def available(self) -> bool:
        try:
            psutil.cpu_times()
            psutil.virtual_memory()
        except (OSError, RuntimeError):
            return False
        return True

    def cpu_cores(self, t: float) -> float | None:
        times = psutil.cpu_times()
        busy = sum(float(getattr(times, f, 0.0)) for f in _BUSY)
        return self._busy.update(t, busy)

    def memory(self) -> NodeMemory:
        vm = psutil.virtual_memory()
        return NodeMemory(
            total=int(vm.total),
            usage_without_page_cache=max(0, int(vm.total - vm.available)),
            usage_with_page_cache=max(0, int(vm.total - vm.free)),
        )

    def cpu_count(self) -> int:
        return psutil.cpu_count(logical=True) or os.cpu_count() or 1


class SelfUsage:
    """This process's CPU seconds and resident memory, for the agent's self metrics and the benchmark."""

    def __init__(self) -> None:
        self._proc = psutil.Process()

    def cpu_seconds(self) -> float:
        t = self._proc.cpu_times()
        return float(t.user + t.system)

    def rss_bytes(self) -> int:
        return int(self._proc.memory_info().rss)
