"""NodeResourcesFit score strategies: LeastAllocated, MostAllocated, RequestedToCapacityRatio
(docs/design/kube-scoring.md §3-§4), vectorised over nodes with scalar reference versions.

Inputs are per node and per configured resource, all int64 in kube units (cpu millicores, others base units):
``allocatable[n, k]`` and ``requested[n, k]`` = the node's (non-zero or real, see docs/design/kube-scoring.md §2.1) requests **plus** the pod's.
``active[k]`` is False for a scalar resource the pod does not request (docs/design/kube-scoring.md §3: skipped entirely). Resources with
allocatable 0 are skipped per node. Scores are ints in 0..100 and never normalised further (docs/design/kube-scoring.md §4.4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from common.config import ConfigError, integer
from common.resources import CPU, MEMORY, is_scalar_resource

from .gomath import go_div, go_div_array, go_round, go_round_array

__all__ = [
    "LEAST_ALLOCATED",
    "MOST_ALLOCATED",
    "REQUESTED_TO_CAPACITY_RATIO",
    "ResourceWeight",
    "ShapePoint",
    "ScoringStrategy",
    "parse_scoring_strategy",
    "active_resources",
    "least_allocated",
    "most_allocated",
    "requested_to_capacity_ratio",
    "score_strategy",
    "allocated_columns",
    "counts_for",
    "least_allocated_ref",
    "most_allocated_ref",
    "rtcr_ref",
    "shape_score",
]

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
MAX_NODE_SCORE = 100
MAX_CUSTOM_PRIORITY_SCORE = 10

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class ResourceWeight:
    name: str
    weight: int = 1


@dataclass(frozen=True, slots=True)
class ShapePoint:
    utilization: int
    score: int


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceWeight, ...] = (ResourceWeight(CPU), ResourceWeight(MEMORY))
    shape: tuple[ShapePoint, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.resources)

    @property
    def weights(self) -> IntArray:
        return np.array([r.weight for r in self.resources], dtype=np.int64)


def _int(value: Any, field: str, source: str) -> int:
    return integer(value, field=field, source=source)


def parse_resource_weights(
    raw: Any, *, field: str, source: str = "", default_zero_to_one: bool = True
) -> tuple[ResourceWeight, ...]:
    """``[{name, weight}]`` -> weights; empty/missing -> cpu:1, memory:1 (v1 defaulting, weight 0 -> 1)."""
    if raw is None or raw == []:
        return (ResourceWeight(CPU), ResourceWeight(MEMORY))
    if not isinstance(raw, list):
        raise ConfigError("must be a list of {name, weight}", field=field, source=source)
    out: list[ResourceWeight] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        where = f"{field}[{i}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not item["name"]:
            raise ConfigError("needs a non-empty string 'name'", field=where, source=source)
        weight = _int(item.get("weight", 0), f"{where}.weight", source)
        if weight == 0 and default_zero_to_one:
            weight = 1
        if not 1 <= weight <= 100:
            raise ConfigError(f"weight must be in 1..100, got {weight}", field=f"{where}.weight", source=source)
        if item["name"] in seen:
            raise ConfigError(f"duplicate resource {item['name']!r}", field=where, source=source)
        seen.add(item["name"])
        out.append(ResourceWeight(item["name"], weight))
    return tuple(out)


def parse_scoring_strategy(raw: Any, *, source: str = "", field: str = "scoringStrategy") -> ScoringStrategy:
    """Parse and validate NodeResourcesFitArgs.scoringStrategy (defaults and checks of docs/design/kube-scoring.md §4)."""
    if raw is None:
        return ScoringStrategy()
    if not isinstance(raw, Mapping):
        raise ConfigError("must be a mapping", field=field, source=source)
    kind = raw.get("type", LEAST_ALLOCATED) or LEAST_ALLOCATED
    if kind not in _STRATEGIES:
        raise ConfigError(f"unknown type {kind!r}; expected one of {', '.join(_STRATEGIES)}", field=f"{field}.type",
                          source=source)
    resources = parse_resource_weights(raw.get("resources"), field=f"{field}.resources", source=source)
    shape: tuple[ShapePoint, ...] = ()
    if kind == REQUESTED_TO_CAPACITY_RATIO:
        rtcr = raw.get("requestedToCapacityRatio") or {}
        points = rtcr.get("shape") if isinstance(rtcr, Mapping) else None
        where = f"{field}.requestedToCapacityRatio.shape"
        if not isinstance(points, list) or not points:
            raise ConfigError("must be a non-empty list of {utilization, score}", field=where, source=source)
        parsed: list[ShapePoint] = []
        for i, p in enumerate(points):
            if not isinstance(p, Mapping):
                raise ConfigError("must be {utilization, score}", field=f"{where}[{i}]", source=source)
            u = _int(p.get("utilization", 0), f"{where}[{i}].utilization", source)
            s = _int(p.get("score", 0), f"{where}[{i}].score", source)
            if not 0 <= u <= 100:
                raise ConfigError(f"utilization must be in 0..100, got {u}", field=f"{where}[{i}].utilization",
                                  source=source)
            if not 0 <= s <= MAX_CUSTOM_PRIORITY_SCORE:
                raise ConfigError(f"score must be in 0..10, got {s}", field=f"{where}[{i}].score", source=source)
            if parsed and u <= parsed[-1].utilization:
                raise ConfigError("utilization values must be strictly increasing", field=f"{where}[{i}].utilization",
                                  source=source)
            parsed.append(ShapePoint(u, s))
        shape = tuple(parsed)
    return ScoringStrategy(kind, resources, shape)


def counts_for(name: str, pod_request: Mapping[str, int]) -> bool:
    """Whether a configured resource counts in a pod's score: not when it is a scalar the pod requests none of."""
    return not (is_scalar_resource(name) and pod_request.get(name, 0) == 0)


def active_resources(names: Sequence[str], pod_request: Mapping[str, int]) -> BoolArray:
    """Per configured resource: False for a scalar the pod requests none of (:func:`counts_for`)."""
    return np.array([counts_for(n, pod_request) for n in names], dtype=np.bool_)


def _kept(allocatable: IntArray, active: BoolArray) -> BoolArray:
    return (allocatable > 0) & active[np.newaxis, :]


def _weighted_int_mean(scores: IntArray, kept: BoolArray, weights: IntArray) -> IntArray:
    w = np.where(kept, weights[np.newaxis, :], 0)
    total = (scores * w).sum(axis=1)
    wsum = w.sum(axis=1)
    return np.where(wsum > 0, total // np.maximum(wsum, 1), 0).astype(np.int64)


def _weighted_int_mean_all(scores: IntArray, weights: IntArray) -> IntArray:
    """:func:`_weighted_int_mean` with every resource kept on every node (the same integer arithmetic)."""
    wsum = int(weights.sum())
    if wsum <= 0:
        return np.zeros(scores.shape[0], dtype=np.int64)
    out: IntArray = ((scores * weights[np.newaxis, :]).sum(axis=1) // wsum).astype(np.int64)
    return out


# up to this many nodes (about where both forms cost the same), least/most allocated score each node with the
# scalar reference (the same integer arithmetic): the few nodes a placement changed cost less that way than
# through the vector form's NumPy calls
ROW_BY_ROW = 8


def _row_by_row(ref: Any, allocatable: IntArray, requested: IntArray, weights: IntArray,
                active: BoolArray) -> IntArray:
    """``ref`` (a scalar reference) on each node's kept resources (allocatable > 0 and active)."""
    w, on = weights.tolist(), active.tolist()
    return np.array([ref([(a, r, wj) for a, r, wj, o in zip(alloc, req, w, on, strict=True) if o and a > 0])
                     for alloc, req in zip(allocatable.tolist(), requested.tolist(), strict=True)], dtype=np.int64)


def least_allocated(allocatable: IntArray, requested: IntArray, weights: IntArray, active: BoolArray) -> IntArray:
    if allocatable.shape[0] <= ROW_BY_ROW:
        return _row_by_row(least_allocated_ref, allocatable, requested, weights, active)
    kept = _kept(allocatable, active)
    if kept.all():   # every resource kept on every node (the usual cpu and memory): no masking
        s = np.where(requested > allocatable, 0, (allocatable - requested) * MAX_NODE_SCORE // allocatable)
        return _weighted_int_mean_all(s, weights)
    safe = np.where(kept, allocatable, 1)
    s = np.where(requested > allocatable, 0, (safe - requested) * MAX_NODE_SCORE // safe)
    return _weighted_int_mean(s.astype(np.int64), kept, weights)


def allocated_columns(kind: str, allocatable: Sequence[IntArray], requested: Sequence[IntArray], pod: Sequence[int],
                      weights: Sequence[int]) -> IntArray:
    """Least or most allocated (``kind``) where every resource is kept on every node (allocatable > 0, active),
    from one vector per resource (``scoring.inputs.ColumnInputs``): the node's request plus the pod's, each
    resource's score and their weighted integer mean, the same integer arithmetic as :func:`least_allocated` and
    :func:`most_allocated` (a request above the allocatable scores 0 free, all of it allocated)."""
    total: IntArray | None = None
    for a, r, p, w in zip(allocatable, requested, pod, weights, strict=True):
        if kind == LEAST_ALLOCATED:
            s = a - r
            s -= p
            np.maximum(s, 0, out=s)
        else:
            s = r + p
            np.minimum(s, a, out=s)
        s *= MAX_NODE_SCORE
        s //= a
        if w != 1:
            s *= w
        if total is None:
            total = s
        else:
            total += s
    if total is None:
        return np.zeros(0 if not allocatable else len(allocatable[0]), dtype=np.int64)
    total //= sum(weights)
    return total


def most_allocated(allocatable: IntArray, requested: IntArray, weights: IntArray, active: BoolArray) -> IntArray:
    if allocatable.shape[0] <= ROW_BY_ROW:
        return _row_by_row(most_allocated_ref, allocatable, requested, weights, active)
    kept = _kept(allocatable, active)
    safe = np.where(kept, allocatable, 1)
    s = np.minimum(requested, safe) * MAX_NODE_SCORE // safe
    return _weighted_int_mean(s.astype(np.int64), kept, weights)


def _scaled_shape(shape: Sequence[ShapePoint]) -> tuple[IntArray, IntArray]:
    u = np.array([p.utilization for p in shape], dtype=np.int64)
    s = np.array([p.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE) for p in shape], dtype=np.int64)
    return u, s


def _shape_array(p: IntArray, u: IntArray, s: IntArray) -> IntArray:
    i = np.searchsorted(u, p, side="left")  # first point with p <= u_i
    last = len(u) - 1
    lo = np.clip(i - 1, 0, last)
    hi = np.clip(i, 0, last)
    du = np.where(hi > lo, u[hi] - u[lo], 1)
    interp = s[lo] + go_div_array((s[hi] - s[lo]) * (p - u[lo]), du)
    out = np.where(i == 0, s[0], np.where(i > last, s[last], interp))
    return out.astype(np.int64)


def requested_to_capacity_ratio(
    allocatable: IntArray, requested: IntArray, weights: IntArray, active: BoolArray, shape: Sequence[ShapePoint]
) -> IntArray:
    u, s = _scaled_shape(shape)
    kept = _kept(allocatable, active)
    safe = np.where(kept, allocatable, 1)
    util = np.where(requested > allocatable, MAX_NODE_SCORE, requested * MAX_NODE_SCORE // safe)
    scores = _shape_array(util.astype(np.int64), u, s)
    kept &= scores != 0  # zero-scored resources leave both sums (docs/design/kube-scoring.md §4.3)
    w = np.where(kept, weights[np.newaxis, :], 0)
    total = (scores * w).sum(axis=1).astype(np.float64)
    wsum = w.sum(axis=1)
    mean = total / np.maximum(wsum, 1).astype(np.float64)
    return np.where(wsum > 0, go_round_array(mean), 0).astype(np.int64)


def score_strategy(strategy: ScoringStrategy, allocatable: IntArray, requested: IntArray, active: BoolArray) -> IntArray:
    if strategy.type == MOST_ALLOCATED:
        return most_allocated(allocatable, requested, strategy.weights, active)
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        return requested_to_capacity_ratio(allocatable, requested, strategy.weights, active, strategy.shape)
    return least_allocated(allocatable, requested, strategy.weights, active)


# ---- scalar reference versions (one node; lists of (allocatable, requested, weight)) -------------------------------

def least_allocated_ref(items: Sequence[tuple[int, int, int]]) -> int:
    total = wsum = 0
    for alloc, req, w in items:
        if alloc == 0:
            continue
        total += (0 if req > alloc else (alloc - req) * MAX_NODE_SCORE // alloc) * w
        wsum += w
    return total // wsum if wsum else 0


def most_allocated_ref(items: Sequence[tuple[int, int, int]]) -> int:
    total = wsum = 0
    for alloc, req, w in items:
        if alloc == 0:
            continue
        total += min(req, alloc) * MAX_NODE_SCORE // alloc * w
        wsum += w
    return total // wsum if wsum else 0


def shape_score(p: int, shape: Sequence[ShapePoint]) -> int:
    """The broken-linear function on the ×10-scaled shape with Go truncating division (docs/design/kube-scoring.md §4.3)."""
    pts = [(pt.utilization, pt.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for pt in shape]
    for i, (u, s) in enumerate(pts):
        if p <= u:
            if i == 0:
                return s
            u0, s0 = pts[i - 1]
            return s0 + go_div((s - s0) * (p - u0), u - u0)
    return pts[-1][1]


def rtcr_ref(items: Sequence[tuple[int, int, int]], shape: Sequence[ShapePoint]) -> int:
    total = wsum = 0
    for alloc, req, w in items:
        if alloc == 0:
            continue
        util = MAX_NODE_SCORE if req > alloc else req * MAX_NODE_SCORE // alloc
        s = shape_score(util, shape)
        if s == 0:
            continue
        total += s * w
        wsum += w
    return go_round(total / wsum) if wsum else 0
