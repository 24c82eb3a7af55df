"""Volcano's binpack score (docs/design/scheduler.md §4.9), vectorised: fuller nodes score higher; any resource that would
overflow zeroes the node's score."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from common.resources import CPU, MEMORY
from scheduler.lenient import int_arg

__all__ = ["BinpackWeights", "parse_binpack_arguments", "binpack_score", "binpack_ref"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class BinpackWeights:
    weight: int = 1
    resources: Mapping[str, int] | None = None  # cpu, memory and extra names -> weight

    @property
    def per_resource(self) -> Mapping[str, int]:
        return self.resources if self.resources is not None else {CPU: 1, MEMORY: 1}


def _weight(raw: Mapping[str, Any], key: str) -> int:
    """A resource weight: an integer (lenient, :mod:`scheduler.lenient`); a negative one falls back to 1."""
    n = int_arg(raw, key, 1)
    return 1 if n < 0 else n


def parse_binpack_arguments(raw: Mapping[str, Any]) -> BinpackWeights:
    """``binpack.weight``, ``binpack.cpu``, ``binpack.memory``, ``binpack.resources`` (comma list) and
    ``binpack.resources.<name>``; negative weights fall back to 1 as in Volcano."""
    plugin_weight = int_arg(raw, "binpack.weight", 1)
    res = {CPU: _weight(raw, "binpack.cpu"), MEMORY: _weight(raw, "binpack.memory")}
    extra = str(raw.get("binpack.resources", "") or "")
    for name in (s.strip() for s in extra.split(",")):
        if name and name not in res:
            res[name] = _weight(raw, f"binpack.resources.{name}")
    return BinpackWeights(plugin_weight, res)


def binpack_score(task_request: Mapping[str, int], columns: Sequence[str], allocatable: IntArray, used: IntArray,
                  weights: BinpackWeights) -> FloatArray:
    """Per-node score in 0..100 × weight; ``allocatable``/``used`` are ``[n, len(columns)]``."""
    n = allocatable.shape[0]
    col = {c: j for j, c in enumerate(columns)}
    total = np.zeros(n, dtype=np.float64)
    overflow = np.zeros(n, dtype=np.bool_)
    wsum = 0
    for r, req in task_request.items():
        w = weights.per_resource.get(r)
        if req == 0 or w is None:
            continue
        cap = allocatable[:, col[r]] if r in col else np.zeros(n, dtype=np.int64)
        use = used[:, col[r]] if r in col else np.zeros(n, dtype=np.int64)
        live = (cap > 0) & (w != 0)
        overflow |= live & (req + use > cap)
        total += np.where(live, (req + use).astype(np.float64) * w / np.where(cap > 0, cap, 1), 0.0)
        wsum += w
    if wsum > 0:
        total = total / wsum
    return np.where(overflow, 0.0, total * 100.0 * weights.weight)


def binpack_ref(task_request: Mapping[str, int], allocatable: Mapping[str, int], used: Mapping[str, int],
                weights: BinpackWeights) -> float:
    score, wsum = 0.0, 0
    for r, req in task_request.items():
        w = weights.per_resource.get(r)
        if req == 0 or w is None:
            continue
        cap, use = allocatable.get(r, 0), used.get(r, 0)
        if cap == 0 or w == 0:
            s = 0.0
        elif req + use > cap:
            return 0.0
        else:
            s = (req + use) * w / cap
        score += s
        wsum += w
    if wsum > 0:
        score /= wsum
    return score * 100 * weights.weight
