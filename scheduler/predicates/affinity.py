"""NodeAffinity filter and score (docs/design/kube-scoring.md §8): nodeSelector AND required terms (ORed terms, ANDed
expressions and fields); preferred terms summed by weight and normalised to 0..100."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.framework.memo import IdentityMemo

from .groups import NodeGroups

__all__ = ["AFFINITY_REASON", "match_expression", "match_term", "node_matches_required", "preferred_sum",
           "affinity_filter", "affinity_score", "label_groups", "projected_groups", "referenced_keys",
           "uses_match_fields"]

LabelSig = tuple[tuple[tuple[str, str], ...], str]


def label_groups(node_labels: Sequence[Mapping[str, str]], node_names: Sequence[str], *,
                 by_name: bool = False,
                 sorted_labels: IdentityMemo[tuple[tuple[str, str], ...]] | None = None) -> NodeGroups[LabelSig]:
    """Nodes grouped by label set (and by name too when a pod uses matchFields); ``sorted_labels`` keeps each
    label mapping's sorted items from one call to the next."""
    sigs: list[LabelSig] = []
    for lb, nm in zip(node_labels, node_names, strict=True):
        items = sorted_labels.get(lb) if sorted_labels is not None else None
        if items is None:
            items = tuple(sorted(lb.items()))
            if sorted_labels is not None:
                sorted_labels.put(lb, items)
        sigs.append((items, nm if by_name else ""))
    return NodeGroups(sigs)


def projected_groups(node_labels: Sequence[Mapping[str, str]], keys: Sequence[str]) -> NodeGroups[LabelSig]:
    """Nodes grouped by their labels of ``keys`` alone: for a selector that reads only those keys, nodes differing
    elsewhere (a hostname label makes every node's label set its own) answer alike."""
    by_values = NodeGroups([tuple(map(lb.get, keys)) for lb in node_labels])  # None: the node lacks the key
    sigs: list[LabelSig] = [(tuple((k, v) for k, v in zip(keys, values, strict=True) if v is not None), "")
                            for values in by_values.keys]
    return NodeGroups.of_ids(sigs, by_values.ids)


AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def match_expression(expr: Mapping[str, Any], values: Mapping[str, str]) -> bool:
    key, op = expr.get("key", ""), expr.get("operator", "")
    vals = [str(v) for v in expr.get("values") or []]
    present = key in values
    if op == "In":
        return present and values[key] in vals
    if op == "NotIn":
        return not present or values[key] not in vals
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(vals) != 1:
            return False
        have, want = _int(values[key]), _int(vals[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def match_term(term: Mapping[str, Any], labels: Mapping[str, str], node_name: str) -> bool:
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False  # an empty term matches nothing
    return all(match_expression(e, labels) for e in exprs) and all(
        match_expression(f, {"metadata.name": node_name}) for f in fields)


def _required_terms(affinity: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    req = ((affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution"))
    if req is None:
        return None
    return list(req.get("nodeSelectorTerms") or [])


def node_matches_required(node_selector: Mapping[str, str], affinity: Mapping[str, Any], labels: Mapping[str, str],
                          node_name: str) -> bool:
    if any(labels.get(k) != v for k, v in node_selector.items()):
        return False
    terms = _required_terms(affinity)
    if terms is None:
        return True
    return any(match_term(t, labels, node_name) for t in terms)


def preferred_sum(affinity: Mapping[str, Any], labels: Mapping[str, str], node_name: str) -> int:
    prefs = (affinity.get("nodeAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or []
    return sum(int(p.get("weight") or 0) for p in prefs if match_term(p.get("preference") or {}, labels, node_name))


def _uses_fields(affinity: Mapping[str, Any]) -> bool:
    na = affinity.get("nodeAffinity") or {}
    terms = list(_required_terms(affinity) or [])
    terms += [p.get("preference") or {} for p in na.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
    return any(t.get("matchFields") for t in terms)


def referenced_keys(node_selector: Mapping[str, str], affinity: Mapping[str, Any]) -> tuple[str, ...]:
    """The node label keys a pod's nodeSelector and node affinity terms (required and preferred) read, sorted."""
    na = affinity.get("nodeAffinity") or {}
    terms = list(_required_terms(affinity) or [])
    terms += [p.get("preference") or {} for p in na.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
    keys = {str(k) for k in node_selector}
    for t in terms:
        keys.update(str(e.get("key", "")) for e in t.get("matchExpressions") or [])
    return tuple(sorted(keys))


def uses_match_fields(affinity: Mapping[str, Any]) -> bool:
    """Name-based terms need per-node evaluation (groups built with ``by_name=True``)."""
    return _uses_fields(affinity)


def affinity_filter(node_selector: Mapping[str, str], affinity: Mapping[str, Any],
                    groups: NodeGroups[LabelSig]) -> BoolArray:
    n = len(groups.ids)
    if not node_selector and _required_terms(affinity) is None:
        return np.ones(n, dtype=np.bool_)
    return groups.evaluate(lambda sig: node_matches_required(node_selector, affinity, dict(sig[0]), sig[1]),
                           bool).astype(np.bool_)


def affinity_score(affinity: Mapping[str, Any], groups: NodeGroups[LabelSig],
                   feasible: BoolArray | None = None) -> IntArray:
    """DefaultNormalizeScore(100): ``100 * s // max`` over the scored nodes; all 0 when nothing is preferred."""
    n = len(groups.ids)
    prefs = (affinity.get("nodeAffinity") or {}).get("preferredDuringSchedulingIgnoredDuringExecution") or []
    if not prefs:
        return np.zeros(n, dtype=np.int64)
    raw = groups.evaluate(lambda sig: preferred_sum(affinity, dict(sig[0]), sig[1]), int).astype(np.int64)
    mask = np.ones(n, dtype=np.bool_) if feasible is None else feasible
    m = int(raw[mask].max()) if mask.any() else 0
    if m == 0:
        return np.zeros(n, dtype=np.int64)
    return np.where(mask, 100 * raw // m, 0).astype(np.int64)
