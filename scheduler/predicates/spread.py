"""PodTopologySpread (kube semantics), vectorised over nodes by topology-domain ids.

Filter, per ``whenUnsatisfiable: DoNotSchedule`` constraint: a node without the topology label is
UnschedulableAndUnresolvable; otherwise ``count[domain] + selfMatch - minCount > maxSkew`` fails (``minCount`` is 0
when fewer than ``minDomains`` domains exist). Counts are matching pods (same namespace, selector) on eligible nodes
(nodes carrying the key and passing the pod's nodeSelector/required affinity — nodeAffinityPolicy Honor).

Score, per ``ScheduleAnyway`` constraint: ``Σ count[domain] * log(domains + 2) + (maxSkew - 1)`` rounded, then
normalised so the emptiest node scores 100: ``100 * (max + min - s) // max``; nodes missing a key score 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from common.objects import PodView
from common.selectors import LabelSelector

__all__ = ["MISSING_LABEL_REASON", "SKEW_REASON", "SpreadConstraint", "parse_constraints", "domain_ids",
           "matching_counts", "spread_filter", "spread_score"]

MISSING_LABEL_REASON = "node(s) didn't match pod topology spread constraints (missing required label)"
SKEW_REASON = "node(s) didn't match pod topology spread constraints"
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    hard: bool  # DoNotSchedule
    selector: LabelSelector
    min_domains: int = 1


def parse_constraints(raw: Sequence[Mapping[str, Any]] | None, *, where: str = "topologySpreadConstraints") -> list[
        SpreadConstraint]:
    out = []
    for i, c in enumerate(raw or []):
        skew = int(c.get("maxSkew", 1))
        if skew < 1:
            raise ValueError(f"{where}[{i}].maxSkew: must be >= 1, got {skew}")
        key = str(c.get("topologyKey", ""))
        if not key:
            raise ValueError(f"{where}[{i}].topologyKey: required")
        out.append(SpreadConstraint(skew, key, c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule",
                                    LabelSelector.parse(c.get("labelSelector"), field=f"{where}[{i}].labelSelector"),
                                    int(c.get("minDomains", 1) or 1)))
    return out


def domain_ids(node_labels: Sequence[Mapping[str, str]], key: str) -> tuple[IntArray, int]:
    """Per node the index of its domain for ``key`` (-1 when the label is missing) and the number of domains."""
    index: dict[str, int] = {}
    ids = np.full(len(node_labels), -1, dtype=np.int64)
    for i, labels in enumerate(node_labels):
        if key in labels:
            ids[i] = index.setdefault(labels[key], len(index))
    return ids, len(index)


def matching_counts(constraint: SpreadConstraint, namespace: str, pods_by_node: Sequence[Sequence[PodView]]) -> IntArray:
    return np.array([sum(1 for p in pods if p.namespace == namespace and not p.terminal and not p.deleting
                         and constraint.selector.matches(p.labels)) for pods in pods_by_node], dtype=np.int64)


def _domain_counts(ids: IntArray, ndom: int, per_node: IntArray, eligible: BoolArray) -> IntArray:
    counts = np.zeros(ndom, dtype=np.int64)
    use = eligible & (ids >= 0)
    np.add.at(counts, ids[use], per_node[use])
    return counts


def spread_filter(pod: PodView, constraints: Sequence[SpreadConstraint], node_labels: Sequence[Mapping[str, str]],
                  pods_by_node: Sequence[Sequence[PodView]], eligible: BoolArray) -> tuple[BoolArray, list[str]]:
    """(passes, reason per node); ``eligible`` = nodes passing the pod's node selector/required affinity."""
    n = len(node_labels)
    ok = np.ones(n, dtype=np.bool_)
    reasons = [""] * n
    for c in constraints:
        if not c.hard:
            continue
        ids, ndom = domain_ids(node_labels, c.topology_key)
        per_node = matching_counts(c, pod.namespace, pods_by_node)
        counts = _domain_counts(ids, ndom, per_node, eligible)
        present = np.unique(ids[eligible & (ids >= 0)])
        min_count = int(counts[present].min()) if present.size else 0
        if present.size < c.min_domains:
            min_count = 0
        self_match = 1 if c.selector.matches(pod.labels) else 0
        missing = ids < 0
        skew = np.where(missing, 0, counts[np.maximum(ids, 0)] + self_match - min_count)
        bad_skew = ~missing & (skew > c.max_skew)
        for i in np.flatnonzero(ok & missing):
            reasons[int(i)] = MISSING_LABEL_REASON
        for i in np.flatnonzero(ok & bad_skew):
            reasons[int(i)] = SKEW_REASON
        ok &= ~missing & ~bad_skew
    return ok, reasons


def spread_score(pod: PodView, constraints: Sequence[SpreadConstraint], node_labels: Sequence[Mapping[str, str]],
                 pods_by_node: Sequence[Sequence[PodView]], feasible: BoolArray) -> IntArray:
    soft = [c for c in constraints if not c.hard]
    n = len(node_labels)
    if not soft:
        return np.zeros(n, dtype=np.int64)
    raw = np.zeros(n, dtype=np.float64)
    ignored = np.zeros(n, dtype=np.bool_)
    for c in soft:
        ids, ndom = domain_ids(node_labels, c.topology_key)
        ignored |= ids < 0
        per_node = matching_counts(c, pod.namespace, pods_by_node)
        counts = _domain_counts(ids, ndom, per_node, np.ones(n, dtype=np.bool_))
        present = np.unique(ids[feasible & (ids >= 0)]).size
        weight = math.log(present + 2)
        raw += np.where(ids >= 0, counts[np.maximum(ids, 0)] * weight + (c.max_skew - 1), 0.0)
    scores = np.floor(raw + 0.5).astype(np.int64)  # math.Round on non-negative values
    scored = feasible & ~ignored
    if not scored.any():
        return np.zeros(n, dtype=np.int64)
    hi, lo = int(scores[scored].max()), int(scores[scored].min())
    if hi == 0:
        return np.where(scored, 100, 0).astype(np.int64)
    return np.where(scored, 100 * (hi + lo - scores) // hi, 0).astype(np.int64)
