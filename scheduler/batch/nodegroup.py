"""Node groups and queue affinity to them (docs/design/scheduler.md §4.13)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from common.resources import Resources
from scheduler.batch.quota import exceeding_requested, sum_resources

__all__ = [
    "NODEGROUP_LABEL",
    "RESOURCE_LIMITS_ANNOTATION",
    "REQUIRED_SCORE",
    "PREFERRED_SCORE",
    "GroupAffinity",
    "parse_group_affinity",
    "group_predicate",
    "group_score",
    "parse_group_limits",
    "group_quota_exceeded",
]

NODEGROUP_LABEL = "volcano.sh/nodegroup-name"
RESOURCE_LIMITS_ANNOTATION = "volcano.sh/nodegroup-resource-limits"
REQUIRED_SCORE = 100.0
PREFERRED_SCORE = 50.0
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True, slots=True)
class GroupAffinity:
    """A queue's node-group affinity; preferred lists keep their order (for ``enablePreferredOrder``)."""

    required: tuple[str, ...] = ()
    preferred: tuple[str, ...] = ()
    anti_required: tuple[str, ...] = ()
    anti_preferred: tuple[str, ...] = ()

    def is_empty(self) -> bool:
        return not (self.required or self.preferred or self.anti_required or self.anti_preferred)


def _groups(raw: Any, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(g, str) for g in raw):
        raise ValueError(f"{where}: expected a list of node group names")
    return tuple(raw)


def parse_group_affinity(queue: str, spec_affinity: Mapping[str, Any] | None) -> GroupAffinity:
    """From a Queue's ``spec.affinity``; errors name the queue and field."""
    if not spec_affinity:
        return GroupAffinity()
    where = f"Queue {queue}: spec.affinity"
    aff = spec_affinity.get("nodeGroupAffinity") or {}
    anti = spec_affinity.get("nodeGroupAntiAffinity") or {}
    if not isinstance(aff, Mapping) or not isinstance(anti, Mapping):
        raise ValueError(f"{where}: nodeGroupAffinity/nodeGroupAntiAffinity must be objects")
    return GroupAffinity(
        required=_groups(aff.get(_REQUIRED), f"{where}.nodeGroupAffinity.{_REQUIRED}"),
        preferred=_groups(aff.get(_PREFERRED), f"{where}.nodeGroupAffinity.{_PREFERRED}"),
        anti_required=_groups(anti.get(_REQUIRED), f"{where}.nodeGroupAntiAffinity.{_REQUIRED}"),
        anti_preferred=_groups(anti.get(_PREFERRED), f"{where}.nodeGroupAntiAffinity.{_PREFERRED}"),
    )


def group_predicate(group: str | None, affinity: GroupAffinity, *, strict: bool = True) -> str | None:
    """None when a node of ``group`` (None = unlabelled) may host the queue's tasks, else the reason."""
    if group is None:
        if not strict and affinity.is_empty():
            return None
        return "node does not belong to any node group"
    if affinity.is_empty():
        return f"node group {group} is not in the queue's node group affinity"
    if group in affinity.required or group in affinity.preferred:
        return None
    if group in affinity.anti_required:
        return f"node group {group} is in the queue's required node group anti-affinity"
    if group in affinity.anti_preferred:
        return None
    return f"node group {group} does not satisfy the queue's node group affinity"


def group_score(group: str | None, affinity: GroupAffinity, *, preferred_order: bool = False) -> float:
    """+100 for required affinity, +50 (or a rank-decayed 50) for preferred; −1 if anti-preferred."""
    if group is None:
        return 0.0
    score = 0.0
    if group in affinity.required:
        score += REQUIRED_SCORE
    if group in affinity.preferred:
        if preferred_order:
            n = len(affinity.preferred)
            score += PREFERRED_SCORE * (n - affinity.preferred.index(group)) / n
        else:
            score += PREFERRED_SCORE
    if group in affinity.anti_preferred:
        score = -1.0
    return score


def parse_group_limits(queue: str, annotations: Mapping[str, str]) -> dict[str, Resources]:
    """Per-group quotas from the queue annotation (JSON map group -> ResourceList)."""
    raw = annotations.get(RESOURCE_LIMITS_ANNOTATION)
    if not raw:
        return {}
    where = f"Queue {queue}: annotation {RESOURCE_LIMITS_ANNOTATION}"
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object of node group -> resources")
    return {str(g): Resources.parse(v, field=f"{where}[{g}]") for g, v in data.items()}


def group_quota_exceeded(
    used_in_group: Mapping[str, int], request: Mapping[str, int], limit: Mapping[str, int] | None
) -> list[str]:
    """Dimensions on which placing ``request`` would exceed the queue's quota for the group."""
    if limit is None:
        return []
    return exceeding_requested(sum_resources((used_in_group, request)), limit, {k: v for k, v in request.items() if k in limit})
