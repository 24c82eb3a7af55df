"""TaintToleration filter and score (docs/design/kube-scoring.md §8)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from common.objects import NodeView

from .groups import NodeGroups

__all__ = ["UNTOLERATED_REASON", "Taint", "node_taints", "tolerates", "untolerated_taint", "prefer_no_schedule_count",
           "taint_filter", "taint_score", "normalize_reverse"]

UNTOLERATED_REASON = "node(s) had untolerated taint(s)"
Taint = tuple[str, str, str]  # key, value, effect
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


def node_taints(node: NodeView) -> tuple[Taint, ...]:
    """The node's taints as hashable tuples (the grouping signature)."""
    return tuple((t.key, t.value, t.effect) for t in node.taints)


def tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    key, value, effect = taint
    t_effect = toleration.get("effect") or ""
    if t_effect and t_effect != effect:
        return False
    t_key = toleration.get("key") or ""
    op = toleration.get("operator") or "Equal"
    if not t_key:
        return op == "Exists"
    if t_key != key:
        return False
    if op == "Exists":
        return True
    return op == "Equal" and str(toleration.get("value", "") or "") == value


def untolerated_taint(taints: tuple[Taint, ...], tolerations: Sequence[Mapping[str, Any]]) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration matches."""
    for taint in taints:
        if taint[2] in ("NoSchedule", "NoExecute") and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def prefer_no_schedule_count(taints: tuple[Taint, ...], tolerations: Sequence[Mapping[str, Any]]) -> int:
    usable = [t for t in tolerations if (t.get("effect") or "") in ("", "PreferNoSchedule")]
    return sum(1 for taint in taints if taint[2] == "PreferNoSchedule" and not any(tolerates(t, taint) for t in usable))


def taint_filter(groups: NodeGroups[tuple[Taint, ...]], tolerations: Sequence[Mapping[str, Any]]) -> BoolArray:
    """True where every NoSchedule/NoExecute taint is tolerated (failures are UnschedulableAndUnresolvable)."""
    return groups.evaluate(lambda ts: untolerated_taint(ts, tolerations) is None, bool).astype(np.bool_)


def normalize_reverse(counts: IntArray) -> IntArray:
    """DefaultNormalizeScore(100, reverse=true)."""
    m = int(counts.max()) if counts.size else 0
    if m == 0:
        return np.full(counts.shape, 100, dtype=np.int64)
    return (100 - 100 * counts // m).astype(np.int64)


def taint_counts(groups: NodeGroups[tuple[Taint, ...]], tolerations: Sequence[Mapping[str, Any]]) -> IntArray:
    """Per node, the PreferNoSchedule taints the tolerations leave untolerated."""
    return groups.evaluate(lambda ts: prefer_no_schedule_count(ts, tolerations), int).astype(np.int64)


def taint_score(groups: NodeGroups[tuple[Taint, ...]], tolerations: Sequence[Mapping[str, Any]],
                feasible: BoolArray | None = None, counts: IntArray | None = None) -> IntArray:
    """Normalised 0..100 score; the max is taken over the scored (feasible) nodes only.  ``counts``: the
    :func:`taint_counts` of these groups and tolerations, when the caller kept them."""
    if counts is None:
        counts = taint_counts(groups, tolerations)
    if feasible is None:
        return normalize_reverse(counts)
    out = np.zeros(len(counts), dtype=np.int64)
    out[feasible] = normalize_reverse(counts[feasible])
    return out
