"""InterPodAffinity filter (kube semantics), vectorised by topology-domain ids.

* the incoming pod's required affinity: every term needs a matching pod in the node's domain (a node without the
  key fails) — unless no pod anywhere matches the terms and the pod matches them itself (first of its group);
* the incoming pod's required anti-affinity: no matching pod may be in the node's domain;
* existing pods' required anti-affinity against the incoming pod forbids their domains.
A term's namespaces default to the owning pod's namespace; an empty ``namespaceSelector`` ({}) means all namespaces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from common.objects import PodView
from common.selectors import LabelSelector

from .spread import domain_ids

__all__ = ["AFFINITY_REASON", "ANTI_AFFINITY_REASON", "EXISTING_ANTI_AFFINITY_REASON", "AffinityTerm",
           "required_terms", "pod_affinity_filter"]

AFFINITY_REASON = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_REASON = "node(s) didn't satisfy existing pods anti-affinity rules"
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    selector: LabelSelector
    topology_key: str
    namespaces: frozenset[str]  # empty + all_namespaces False = owner's namespace
    all_namespaces: bool

    def matches(self, pod: PodView, owner_namespace: str) -> bool:
        if not self.all_namespaces:
            allowed = self.namespaces or frozenset({owner_namespace})
            if pod.namespace not in allowed:
                return False
        return self.selector.matches(pod.labels)


def required_terms(affinity: Mapping[str, Any], kind: str) -> list[AffinityTerm]:
    """``kind`` is ``podAffinity`` or ``podAntiAffinity``."""
    raw = (affinity.get(kind) or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or []
    out = []
    for i, t in enumerate(raw):
        ns_sel = t.get("namespaceSelector")
        out.append(AffinityTerm(LabelSelector.parse(t.get("labelSelector"), field=f"{kind}[{i}].labelSelector"),
                                str(t.get("topologyKey", "")), frozenset(t.get("namespaces") or []),
                                ns_sel is not None and not ns_sel))
    return out


class _Verdict:
    """Which nodes still pass, and the first reason each failing node failed for."""

    def __init__(self, n: int) -> None:
        self.ok = np.ones(n, dtype=np.bool_)
        self.reasons = [""] * n

    def fail(self, mask: BoolArray, reason: str) -> None:
        for i in np.flatnonzero(self.ok & mask):
            self.reasons[int(i)] = reason
        self.ok[mask] = False


def pod_affinity_filter(pod: PodView, node_labels: Sequence[Mapping[str, str]],
                        pods_by_node: Sequence[Sequence[PodView]]) -> tuple[BoolArray, list[str]]:
    """Which nodes ``pod`` may run on under required inter-pod (anti-)affinity, and why each other one may not:
    the running pods' anti-affinity first, then the pod's affinity, then its anti-affinity."""
    verdict = _Verdict(len(node_labels))
    _existing_anti_affinity(pod, node_labels, pods_by_node, verdict)
    _affinity(pod, node_labels, pods_by_node, verdict)
    _anti_affinity(pod, node_labels, pods_by_node, verdict)
    return verdict.ok, verdict.reasons


def _existing_anti_affinity(pod: PodView, node_labels: Sequence[Mapping[str, str]],
                            pods_by_node: Sequence[Sequence[PodView]], verdict: _Verdict) -> None:
    """Fails the domains of running pods whose required anti-affinity ``pod`` matches."""
    for j, pods in enumerate(pods_by_node):
        for other in pods:
            for term in required_terms(other.affinity, "podAntiAffinity"):
                if not term.matches(pod, other.namespace):
                    continue
                value = node_labels[j].get(term.topology_key)
                if value is None:
                    continue
                verdict.fail(np.array([lb.get(term.topology_key) == value for lb in node_labels], dtype=np.bool_),
                             EXISTING_ANTI_AFFINITY_REASON)


def _affinity(pod: PodView, node_labels: Sequence[Mapping[str, str]], pods_by_node: Sequence[Sequence[PodView]],
              verdict: _Verdict) -> None:
    """Fails the nodes outside a domain holding a pod of each required affinity term; the first pod of its group
    (no match anywhere, and it matches its own terms) needs only the terms' topology keys."""
    terms = required_terms(pod.affinity, "podAffinity")
    if not terms:
        return
    n = len(node_labels)
    present = np.ones(n, dtype=np.bool_)
    any_match = False
    for term in terms:
        ids, ndom = domain_ids(node_labels, term.topology_key)
        has = np.zeros(ndom, dtype=np.bool_)
        for j, pods in enumerate(pods_by_node):
            if ids[j] >= 0 and any(term.matches(p, pod.namespace) for p in pods):
                has[ids[j]] = True
                any_match = True
        present &= (ids >= 0) & has[np.maximum(ids, 0)] if ndom else np.zeros(n, dtype=np.bool_)
    self_ok = all(t.matches(pod, pod.namespace) for t in terms)
    if any_match or not self_ok:
        verdict.fail(~present, AFFINITY_REASON)
    else:
        verdict.fail(~np.all([domain_ids(node_labels, t.topology_key)[0] >= 0 for t in terms], axis=0),
                     AFFINITY_REASON)


def _anti_affinity(pod: PodView, node_labels: Sequence[Mapping[str, str]],
                   pods_by_node: Sequence[Sequence[PodView]], verdict: _Verdict) -> None:
    """Fails the domains holding a pod that one of ``pod``'s required anti-affinity terms matches."""
    for term in required_terms(pod.affinity, "podAntiAffinity"):
        ids, ndom = domain_ids(node_labels, term.topology_key)
        taken = np.zeros(ndom, dtype=np.bool_)
        for j, pods in enumerate(pods_by_node):
            if ids[j] >= 0 and any(term.matches(p, pod.namespace) for p in pods):
                taken[ids[j]] = True
        if ndom:
            verdict.fail((ids >= 0) & taken[np.maximum(ids, 0)], ANTI_AFFINITY_REASON)
