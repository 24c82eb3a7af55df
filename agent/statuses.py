"""NodeMetric statuses of many nodes at once, each exactly what :func:`agent.nodemetric.build_nodemetric_status`
gives it.

The simulator runs one agent per node and every one of them reports each interval, so most of a report's cost is
the fixed per-report work of its many small steps.  Here the windows of every report are gathered into one
buffer (in one call for each run of reports made at the same time), averaged in one NumPy call per window length
(:func:`agent.aggregate.row_means_array`, the same sums as one report's), and truncated to quantities for all of
them at once; what is left per report is building its dicts (:func:`agent.nodemetric.assemble_status`).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from agent.aggregate import row_means_array
from agent.history import FloatArray, Ring, gather_windows
from agent.nodemetric import (
    MetricCollectPolicy,
    PodMeta,
    Reported,
    UsageStore,
    assemble_status,
    report_rings,
    reported_quantities,
)
from common.cluster import Layout, layout
from common.quantity import format_bytes, format_milli
from common.resources import CPU, MAX_QUANTITY, MEMORY

__all__ = ["build_nodemetric_statuses", "reported_pairs", "status_layout"]

BoolArray = npt.NDArray[np.bool_]
# Beyond this a float's truncation is not tried in int64 (the general path takes it; quantities are capped far below).
_INT_RANGE = 2.0**62
_POD_ORDER = attrgetter("namespace", "name")  # podsMetric order, as build_nodemetric_status sorts it
# status_layout's answers, by the quantities the node's and the system's usage maps hold
_LAYOUTS: dict[tuple[tuple[str, ...], tuple[str, ...]], Layout | None] = {}


def build_nodemetric_statuses(
    reports: Sequence[tuple[UsageStore, float, Iterable[PodMeta]]], policy: MetricCollectPolicy, *, typed: bool = False
) -> list[dict[str, Any]]:
    """``[build_nodemetric_status(store, now, policy, pods, typed=typed) for store, now, pods in reports]``, the
    windows of all of them averaged and reported in one batch."""
    window = float(policy.window_seconds)
    ordered = [sorted(pods, key=_POD_ORDER) for _, _, pods in reports]
    values: array[float] = array("d")
    counts: list[int] = []
    rings: list[Ring | None] = []
    for k, ((store, now, _), metas) in enumerate(zip(reports, ordered, strict=True)):
        rings += report_rings(store, metas)
        if k + 1 == len(reports) or reports[k + 1][1] != now:   # the windows of a run of reports at one time
            counts += gather_windows(rings, now - window, now, values)
            rings = []
    pairs = reported_pairs(row_means_array(values, counts), counts)
    out: list[dict[str, Any]] = []
    k = 0
    for (store, now, _), metas in zip(reports, ordered, strict=True):
        n = 2 + len(metas)
        out.append(assemble_status(store, now, policy, metas, pairs[k : k + n], typed=typed))
        k += n
    return out


def reported_pairs(means: FloatArray, counts: Sequence[int] | npt.NDArray[np.intp]) -> list[Reported | None]:
    """:func:`agent.nodemetric.reported_quantities` of each (cpu, memory) pair of windows: ``means[2i]`` and
    ``means[2i + 1]``, a window with no sample (count 0) as None; None for a pair of two such windows.

    The usual pair — both measured, finite, within a quantity's bounds, neither zero once truncated — is truncated
    in one NumPy call for all, its texts made directly (those of a whole number of cores or of KiB by the
    formatters); any other goes through the scalar function.
    """
    present: BoolArray = np.array(counts, dtype=np.intp).reshape(-1, 2) > 0
    scaled = means.reshape(-1, 2) * (1000.0, 1.0)   # the float products the scalar function truncates
    usual: BoolArray = np.all(present, axis=1) & np.all(np.abs(scaled) < _INT_RANGE, axis=1)   # NaN: false
    truncated = np.trunc(np.where(usual[:, None], scaled, 0.0)).astype(np.int64)
    usual &= np.all(np.abs(truncated) <= MAX_QUANTITY, axis=1) & np.all(truncated != 0, axis=1)
    rows = truncated.tolist()
    out: list[Reported | None] = [({CPU: f"{millis}m", MEMORY: str(n)}, {CPU: millis, MEMORY: n}) for millis, n in rows]
    # a whole number of cores or of KiB: the texts the formatters give it
    for i in np.flatnonzero(usual & ((truncated[:, 0] % 1000 == 0) | (truncated[:, 1] % 1024 == 0))).tolist():
        millis, n = rows[i]
        out[i] = ({CPU: format_milli(millis), MEMORY: format_bytes(n)}, {CPU: millis, MEMORY: n})
    others = np.flatnonzero(~usual).tolist()
    if others:   # rare: each through the scalar function (both windows empty: None)
        has = present.tolist()
        values = means.tolist()
        for i in others:
            has_cpu, has_memory = has[i]
            cpu, memory = (values[2 * i] if has_cpu else None), (values[2 * i + 1] if has_memory else None)
            out[i] = None if cpu is None and memory is None else reported_quantities(cpu, memory)
    return out


def status_layout(status: dict[str, Any]) -> Layout | None:
    """``common.cluster.layout(status)`` of a status the builder made, without walking it: the builder's statuses
    differ in layout only by the quantities their node's and system's usage maps hold (every list, the pods'
    entries among them, is a leaf of the layout).  A writer hands it to ``MemoryCluster.write_status``."""
    nm = status["nodeMetric"]
    key = (tuple(nm["nodeUsage"]["resources"]), tuple(nm["systemUsage"]["resources"]))
    if key in _LAYOUTS:
        return _LAYOUTS[key]
    got = _LAYOUTS[key] = layout(status)
    return got
