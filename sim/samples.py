"""The usage every simulated node agent records, kept as one table: a row per tick, a column per node and per pod.

Each real agent keeps its node's history in a :class:`agent.nodemetric.UsageStore`, a ring per series, and averages
a report's windows ring by ring.  The simulator's agents all record at the same instants, so their histories are
rows of one table: a tick's samples of every node and pod are written in a few NumPy calls, and the windows of a
whole batch of reports are averaged in a few more.  The numbers are the store's exactly: the same samples (system
usage being the node's minus its pods' summed in the same order, clamped at zero), and each window's mean the
same NumPy sum, of a row of its samples oldest first, divided by their count (:func:`agent.aggregate.row_means_array`).
``tests/sim/test_samples.py`` proves the reports built from it equal the store's.

A pod's column is its slot, held from its first sample until its last one is older than the table keeps rows
for; slot 0 never holds a pod (a pod never recorded reads as one without samples).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["SampleTable", "WindowMeans"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
BoolArray = npt.NDArray[np.bool_]

_sum = np.add.reduce
_NODE_SERIES = 4   # per node: cpu, memory, system cpu, system memory (the order a report averages them in)


class WindowMeans:
    """The window means of a batch of reports: per report its node's (cpu, memory, system cpu, system memory)
    means (``nodes``, one row per report) and their sample count (``node_counts``); per pod asked for, in order,
    its (cpu, memory) means (``pods``, one row per pod) and sample count (``pod_counts``, 0: none in the window,
    its means 0.0)."""

    __slots__ = ("nodes", "node_counts", "pods", "pod_counts")

    def __init__(self, nodes: FloatArray, node_counts: IntArray, pods: FloatArray, pod_counts: IntArray) -> None:
        self.nodes = nodes
        self.node_counts = node_counts
        self.pods = pods
        self.pod_counts = pod_counts


class SampleTable:
    """Every node's and pod's samples of the last ``rows`` ticks (CPU in cores, memory in bytes)."""

    def __init__(self, nodes: int, rows: int) -> None:
        if rows < 1:
            raise ValueError(f"rows must be at least 1, not {rows}")
        self._nodes = nodes
        self._keep = rows
        self._size = rows + max(rows, 64)   # rows of the buffers: the kept ones move to the front once in a while
        self._times: array[float] = array("d", bytes(8 * self._size))
        self._end = 0   # one past the newest row
        self._count = 0   # rows kept, ending at _end
        self._node: FloatArray = np.zeros((self._size, nodes, _NODE_SERIES))
        self._pod: FloatArray = np.zeros((self._size, 64, 2))
        self._seen: BoolArray = np.zeros((self._size, 64), dtype=bool)
        self._slots: dict[str, int] = {}
        self._uids: list[str] = [""] * 64
        self._last: FloatArray = np.full(64, np.inf)   # per slot, its pod's newest sample time (inf: free)
        self._free: list[int] = list(range(63, 0, -1))   # slot 0 stays empty

    def record(self, t: float, node_cpu: FloatArray, node_memory: FloatArray, pod_node: IntArray,
               uids: Sequence[str], pod_cpu: FloatArray, pod_memory: FloatArray) -> None:
        """One tick at ``t`` (after every earlier one): per node its CPU and memory; per pod (UIDs unique) its node,
        CPU and memory.  A node's system usage is its own minus its pods' (summed in the order given), at least 0."""
        row = self._next_row(float(t))
        n = self._nodes
        cpu_sum = np.bincount(pod_node, weights=pod_cpu, minlength=n)   # each node's pods added in order from 0.0
        mem_sum = np.bincount(pod_node, weights=pod_memory, minlength=n)
        out = self._node[row]
        out[:, 0] = node_cpu
        out[:, 1] = node_memory
        system = node_cpu - cpu_sum
        out[:, 2] = np.where(system > 0.0, system, 0.0)
        system = node_memory - mem_sum
        out[:, 3] = np.where(system > 0.0, system, 0.0)
        slots = self._slots_for(uids)
        self._pod[row, slots, 0] = pod_cpu
        self._pod[row, slots, 1] = pod_memory
        self._seen[row] = False
        self._seen[row, slots] = True
        self._last[slots] = t

    def means(self, reports: Sequence[tuple[float, int, Sequence[str]]], window: float) -> WindowMeans:
        """The means over ``[t - window, t]`` of each report ``(t, node, pod UIDs)``: its node's series and its pods'
        (see :class:`WindowMeans`)."""
        times: dict[float, int] = {}
        report_time = np.array([times.setdefault(t, len(times)) for t, _, _ in reports], dtype=np.intp)
        nodes = np.array([node for _, node, _ in reports], dtype=np.intp)
        slot = self._slots.get
        slots = np.array([slot(uid, 0) for _, _, pods in reports for uid in pods], dtype=np.intp)
        pod_time = np.repeat(report_time, [len(pods) for _, _, pods in reports])
        node_means = np.zeros((len(reports), _NODE_SERIES))
        node_counts = np.zeros(len(reports), dtype=np.intp)
        pod_means = np.zeros((slots.size, 2))
        pod_counts = np.zeros(slots.size, dtype=np.intp)
        for t, g in times.items():
            lo, hi = self._rows(t - window, t)
            if hi <= lo:
                continue
            which = np.flatnonzero(report_time == g) if len(times) > 1 else slice(None)
            node_counts[which] = hi - lo
            # (reports, series, samples), each row of samples oldest first and contiguous, as one report sums it
            rows = np.ascontiguousarray(self._node[lo:hi, nodes[which]].transpose(1, 2, 0))
            node_means[which] = _sum(rows, axis=2) / (hi - lo)
            pods = np.flatnonzero(pod_time == g) if len(times) > 1 else slice(None)
            pod_means[pods], pod_counts[pods] = self._pod_means(slots[pods], lo, hi)
        return WindowMeans(node_means, node_counts, pod_means, pod_counts)

    def _pod_means(self, slots: IntArray, lo: int, hi: int) -> tuple[FloatArray, IntArray]:
        """The (cpu, memory) means of each slot's samples in rows ``[lo, hi)``, and their count."""
        seen = self._seen[lo:hi, slots]   # (samples, pods)
        counts: IntArray = seen.sum(axis=0)
        values = np.ascontiguousarray(self._pod[lo:hi, slots].transpose(1, 2, 0))   # (pods, cpu|memory, samples)
        w = hi - lo
        full = counts == w
        if full.all():   # the usual case: every pod ran through the window
            return _sum(values, axis=2) / w, counts
        means = np.zeros((slots.size, 2))
        means[full] = _sum(values[full], axis=2) / w
        seen = seen.T
        for n in np.unique(counts[~full]).tolist():
            if n:
                which = np.flatnonzero(counts == n)
                picked = values[which][np.repeat(seen[which][:, None, :], 2, axis=1)].reshape(-1, 2, n)
                means[which] = _sum(picked, axis=2) / n
        return means, counts

    def _rows(self, start: float, end: float) -> tuple[int, int]:
        """Buffer rows ``[lo, hi)`` of the ticks with ``start <= t <= end``."""
        first = self._end - self._count
        return bisect_left(self._times, start, first, self._end), bisect_right(self._times, end, first, self._end)

    def _next_row(self, t: float) -> int:
        """The row tick ``t`` is written to; the oldest rows beyond ``rows`` are dropped, and pods whose newest
        sample is in none of the rows kept give their slot up."""
        end = self._end
        if end == self._size:   # the kept rows move to the front
            keep = min(self._count, self._keep - 1)
            for buf in (self._node, self._pod, self._seen):
                buf[:keep] = buf[end - keep : end]
            self._times[:keep] = self._times[end - keep : end]
            end = self._count = keep
        self._times[end] = t
        self._end = end + 1
        self._count = min(self._count + 1, self._keep)
        self._release(self._times[self._end - self._count])
        return end

    def _release(self, oldest: float) -> None:
        """Free the slot of every pod whose newest sample is older than ``oldest`` (the oldest row kept)."""
        gone = np.flatnonzero(self._last < oldest).tolist()
        if not gone:
            return
        self._last[gone] = np.inf   # its seen flags are all in rows no window reads: a new pod finds none of them
        for s in gone:
            del self._slots[self._uids[s]]
        self._free += gone

    def _slots_for(self, uids: Sequence[str]) -> IntArray:
        """Each pod's slot, a free one given to a pod seen for the first time."""
        slots = self._slots
        out = []
        for uid in uids:
            s = slots.get(uid)
            if s is None:
                if not self._free:
                    self._grow()
                s = slots[uid] = self._free.pop()
                self._uids[s] = uid
            out.append(s)
        return np.array(out, dtype=np.intp)

    def _grow(self) -> None:
        """Twice the slots."""
        old = self._last.size
        self._pod = np.concatenate([self._pod, np.zeros_like(self._pod)], axis=1)
        self._seen = np.concatenate([self._seen, np.zeros_like(self._seen)], axis=1)
        self._last = np.concatenate([self._last, np.full(old, np.inf)])
        self._uids += [""] * old
        self._free += range(2 * old - 1, old - 1, -1)


def _by_time(reports: Sequence[tuple[float, int, Sequence[str]]]) -> dict[float, list[int]]:
    """The indices of the reports made at each time."""
    groups: dict[float, list[int]] = {}
    for k, (t, _, _) in enumerate(reports):
        groups.setdefault(t, []).append(k)
    return groups
