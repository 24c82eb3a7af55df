"""Which pods of a hot node may move, and in which order, as LowNodeLoad ranks them.

A pod is removable when a controller will re-create it (it has an owner that is not a node or a DaemonSet), it
runs and is not being deleted, it is not a gang member (moving one member breaks its group), its namespace is
evictable, it matches a ``podSelectors`` entry when there are any, and its NodeMetric reports its usage (a pod whose
usage is unknown cannot be shown to relieve anything).

Order, first evicted first: Koordinator priority class (free, batch, mid, prod), then Koordinator QoS (BE, LS,
LSR, LSE, SYSTEM), then kube priority (lowest first), then usage (the biggest user of the resources that are over
their high threshold first, weighted by ``resourceWeights``), then age (the youngest first: it loses the least
work when restarted).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from common.objects import NodeMetricView, PodView
from common.qos import PriorityClass
from common.reservation import workload_of
from common.resources import Resources

from .args import RebalanceArgs

__all__ = ["Candidate", "removable", "rank", "workload_of", "SYSTEM_CRITICAL_PRIORITY"]

SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
_CLASS_ORDER = {PriorityClass.FREE: 0, PriorityClass.BATCH: 1, PriorityClass.MID: 2, PriorityClass.PROD: 3,
                PriorityClass.NONE: 4}
_QOS_ORDER = {"BE": 0, "LS": 1, "LSR": 2, "LSE": 3, "SYSTEM": 4}


@dataclass(frozen=True, slots=True)
class Candidate:
    pod: PodView
    usage: Resources

    @property
    def key(self) -> str:
        return self.pod.key


def _namespace_ok(pod: PodView, args: RebalanceArgs) -> bool:
    if args.include_namespaces:
        return pod.namespace in args.include_namespaces
    return pod.namespace not in args.exclude_namespaces


def _why_kept(pod: PodView, args: RebalanceArgs) -> str:
    """Why the pod may not move, or "" when it may (before its usage is looked up)."""
    if pod.phase != "Running" or pod.deleting:
        return "not running"
    if not pod.owner_kind or pod.owner_kind in ("Node", "DaemonSet"):
        return f"no controller re-creates it ({pod.owner_kind or 'bare pod'})"
    if pod.group_name:
        return "gang member"
    if pod.priority >= SYSTEM_CRITICAL_PRIORITY:
        return "system-critical priority"
    if not _namespace_ok(pod, args):
        return "namespace not evictable"
    if args.pod_selectors and not any(s.selector.matches(pod.labels) for s in args.pod_selectors):
        return "matches no podSelectors entry"
    return ""


def removable(pods: Iterable[PodView], metric: NodeMetricView | None, args: RebalanceArgs) -> list[Candidate]:
    """The pods (of one node) that may move, each with its reported usage."""
    usage = {pm.key: pm.usage for pm in metric.pods} if metric is not None else {}
    out = []
    for pod in pods:
        used = usage.get(pod.key)
        if used is not None and not _why_kept(pod, args):
            out.append(Candidate(pod, used))
    return out


def _usage_score(c: Candidate, allocatable: Mapping[str, int], over: Sequence[str], args: RebalanceArgs) -> float:
    total = 0.0
    for r in over:
        alloc = allocatable.get(r, 0)
        if alloc > 0:
            total += args.weight(r) * c.usage.get(r, 0) / alloc
    return total


def rank(candidates: Iterable[Candidate], allocatable: Mapping[str, int], over: Sequence[str],
         args: RebalanceArgs) -> list[Candidate]:
    """``candidates`` in eviction order (see the module docstring); ``over``: the resources above threshold."""

    def key(c: Candidate) -> tuple[int, int, int, float, float, str]:
        p = c.pod
        return (_CLASS_ORDER.get(p.priority_class, 4), _QOS_ORDER.get(p.koord_qos, 0), p.priority,
                -_usage_score(c, allocatable, over, args), -(p.creation_time or 0.0), p.key)

    return sorted(candidates, key=key)
