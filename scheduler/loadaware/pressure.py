"""An optional loadaware filter on node CPU pressure (PSI), a Loadwise extension (off by default).

Utilisation is a proxy for interference; the kernel's pressure stall information measures it: the
share of time runnable tasks waited for a CPU.  With ``cpuPressureThreshold`` (percent, 1..100) set,
a node whose NodeMetric reports CPU ``some`` pressure (the kernel's 60 s average, in
``status.nodeMetric.extensions.pressure``) above the threshold is filtered out.  A node whose
NodeMetric carries no pressure (an older agent, a kernel without PSI) passes: this filter only ever
acts on a measurement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from common.objects import NodeMetricView, NodeView

BoolArray = npt.NDArray[np.bool_]

__all__ = ["PressureFilter", "node_cpu_pressure"]


def node_cpu_pressure(metric: NodeMetricView | None) -> float | None:
    """CPU ``some`` pressure (percent, 60 s average) from a NodeMetric, or ``None`` when not reported."""
    if metric is None:
        return None
    nm: Any = (metric.raw.get("status") or {}).get("nodeMetric") or {}
    value = (((nm.get("extensions") or {}).get("pressure") or {}).get("cpu") or {}).get("some", {}).get("avg60")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


@dataclass(frozen=True, slots=True)
class PressureFilter:
    """Which nodes pass, and each node's pressure for the reason text."""

    threshold: int
    passed: BoolArray
    pressure: tuple[float | None, ...]

    @classmethod
    def build(cls, threshold: int, nodes: Sequence[NodeView], metrics: Mapping[str, NodeMetricView]
              ) -> PressureFilter:
        pressure = tuple(node_cpu_pressure(metrics.get(n.name)) for n in nodes)
        passed = np.array([p is None or p <= threshold for p in pressure], dtype=bool)
        return cls(threshold, passed, pressure)

    def reason(self, i: int) -> str:
        return f"node(s) CPU pressure {self.pressure[i]:.1f}% above {self.threshold}%"
