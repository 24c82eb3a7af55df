"""Capacity's explicit quotas: deserved, capability and guarantee per queue (docs/design/scheduler.md §4.6).

Unlike proportion, deserved comes from the queue spec; allocation is bounded by the *real
capability* (so a queue may borrow idle capacity) and reclaim eligibility by deserved.  With
``hierarchy=True`` queues form a tree through ``parent`` (default ``root``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from common.resources import CPU, MEMORY, PODS, Resources
from scheduler.batch.proportion import effective_capability, real_capability
from scheduler.batch.quota import dominant_share, exceeded_part, exceeding_requested, min_dimension, sum_resources

__all__ = [
    "ROOT",
    "QueueQuota",
    "QueueLimits",
    "HierarchyError",
    "compute_limits",
    "capacity_share",
    "allocatable",
    "preemptive",
    "reclaim_victims",
    "hierarchical_allocatable",
    "capacity_queue_order",
    "common_depth",
]

ROOT = "root"


class HierarchyError(ValueError):
    """The queue tree is malformed (unknown parent or a cycle)."""


@dataclass(frozen=True, slots=True)
class QueueQuota:
    """Queue spec fields capacity uses; ``capability`` is a bound (absent = unlimited)."""

    name: str
    deserved: Resources = Resources()
    guarantee: Resources = Resources()
    capability: Resources = Resources()
    parent: str = ""


@dataclass(frozen=True, slots=True)
class QueueLimits:
    """Computed per-queue limits.  ``path`` runs from the root (hierarchy) or is just the queue."""

    name: str
    deserved: Resources
    guarantee: Resources
    real_capability: Resources
    path: tuple[str, ...]
    leaf: bool


def _deserved(spec_deserved: Resources, real_cap: Resources, guarantee: Resources) -> Resources:
    return min_dimension(spec_deserved, real_cap, missing_unlimited=True).max(guarantee)


def compute_limits(
    total: Mapping[str, int], queues: Sequence[QueueQuota], *, hierarchy: bool = False
) -> dict[str, QueueLimits]:
    """Limits for every queue (and, in hierarchy mode, for ``root``)."""
    if not hierarchy:
        total_guarantee = sum_resources(q.guarantee for q in queues)
        out: dict[str, QueueLimits] = {}
        for q in queues:
            real = real_capability(total, total_guarantee, q.guarantee, q.capability)
            out[q.name] = QueueLimits(q.name, _deserved(q.deserved, real, q.guarantee), q.guarantee, real, (q.name,), True)
        return out
    return _tree_limits(total, queues)


def _tree_limits(total: Mapping[str, int], queues: Sequence[QueueQuota]) -> dict[str, QueueLimits]:
    specs = {q.name: q for q in queues if q.name != ROOT}
    children: dict[str, list[str]] = {ROOT: []}
    for q in specs.values():
        parent = q.parent or ROOT
        if parent != ROOT and parent not in specs:
            raise HierarchyError(f"Queue {q.name}: spec.parent {parent!r} does not exist")
        children.setdefault(parent, []).append(q.name)
        children.setdefault(q.name, [])
    # Σ guarantees / deserved bottom-up: an inner queue's totals include its descendants'.
    order = _topological(children)
    if len(order) != len(specs) + 1:
        raise HierarchyError("queue parents form a cycle: " + ", ".join(sorted(set(specs) - set(order))))
    guarantee: dict[str, Resources] = {}
    deserved: dict[str, Resources] = {}
    for name in reversed(order):
        kids = children[name]
        own = specs.get(name)
        if name == ROOT:
            guarantee[name] = sum_resources(guarantee[k] for k in kids)
            deserved[name] = sum_resources(deserved[k] for k in kids)
        else:
            assert own is not None
            guarantee[name] = own.guarantee
            deserved[name] = own.deserved
    out: dict[str, QueueLimits] = {
        ROOT: QueueLimits(ROOT, deserved[ROOT], guarantee[ROOT], Resources(total), (ROOT,), not children[ROOT])
    }
    capability: dict[str, Resources] = {ROOT: Resources()}
    for name in order[1:]:
        own = specs[name]
        parent = own.parent or ROOT
        inherited = dict(capability[parent])
        inherited.update(effective_capability(own.capability))
        capability[name] = Resources(inherited)
        siblings = sum_resources(specs[s].guarantee for s in children[parent])
        base = exceeded_part(out[parent].real_capability, siblings) + own.guarantee
        real = min_dimension(base, capability[name], missing_unlimited=True)
        out[name] = QueueLimits(
            name,
            _deserved(own.deserved, real, own.guarantee),
            own.guarantee,
            real,
            out[parent].path + (name,),
            not children[name],
        )
    return out


def _topological(children: Mapping[str, list[str]]) -> list[str]:
    order = [ROOT]
    for name in order:
        order.extend(sorted(children.get(name, [])))
    return order


def capacity_share(allocated: Mapping[str, int], deserved: Mapping[str, int]) -> float:
    """1 for a best-effort queue (empty deserved), else max allocated/deserved over deserved's dims."""
    if not deserved:
        return 1.0
    return dominant_share(allocated, deserved)[0]


def allocatable(
    allocated: Mapping[str, int], request: Mapping[str, int], real_cap: Mapping[str, int],
    reserved: Mapping[str, int] | None = None,
) -> list[str]:
    """Requested dimensions on which ``allocated + reserved + request`` exceeds the real capability."""
    used = sum_resources((allocated, reserved or {}, request))
    return exceeding_requested(used, real_cap, request)


def preemptive(limits: QueueLimits, allocated: Mapping[str, int], request: Mapping[str, int]) -> bool:
    """May the queue preempt for ``request``: within real capability, and within deserved on some dim."""
    after = sum_resources((allocated, request))
    if exceeding_requested(after, limits.real_capability, request):
        return False
    considered = False
    for name, amount in request.items():
        if amount <= 0 or name == PODS:
            continue
        if after.get(name, 0) == 0 and limits.deserved.get(name, 0) == 0:
            continue
        considered = True
        if after.get(name, 0) <= limits.deserved.get(name, 0):
            return True
    return not considered


def _deserved_defines(deserved: Mapping[str, int], name: str) -> bool:
    if name in (CPU, MEMORY):
        return deserved.get(name, 0) > 0
    return name in deserved


def reclaim_victims(
    reclaimer_request: Mapping[str, int],
    candidates: Sequence[tuple[str, Resources]],
    allocated: Mapping[str, Resources],
    limits: Mapping[str, QueueLimits],
) -> list[int]:
    """Indices of ``(queue, request)`` reclaimees (already in victim order) capacity allows."""
    wanted = {k for k, v in reclaimer_request.items() if v > 0 and k != PODS}
    running: dict[str, Resources] = {}
    chosen: list[int] = []
    for index, (queue, request) in enumerate(candidates):
        dims = {k for k, v in request.items() if v > 0 and k != PODS}
        if not dims & wanted:
            continue
        lim = limits[queue]
        current = running.get(queue, allocated.get(queue, Resources()))
        after = current - request
        if any(after.get(k, 0) < v for k, v in lim.guarantee.items()):
            continue
        shared = {k for k in dims if _deserved_defines(lim.deserved, k)}
        if not shared or any(current.get(k, 0) > lim.deserved.get(k, 0) for k in shared):
            running[queue] = after
            chosen.append(index)
    return chosen


def hierarchical_allocatable(
    leaf: str,
    limits: Mapping[str, QueueLimits],
    allocated: Mapping[str, Mapping[str, int]],
    request: Mapping[str, int],
) -> tuple[str, list[str]] | None:
    """First queue on the leaf's path (leaf upward) whose real capability ``request`` would exceed.

    ``allocated`` must hold every queue's allocation including its descendants'.  Returns
    ``(queue, dimensions)`` or None when the leaf and all its ancestors have room.  Inner queues
    never allocate directly.
    """
    lim = limits[leaf]
    if not lim.leaf:
        return leaf, ["queue is not a leaf"]
    for name in reversed(lim.path):
        if name == ROOT:
            continue
        over = allocatable(allocated.get(name, {}), request, limits[name].real_capability)
        if over:
            return name, over
    return None


def capacity_queue_order(
    left: tuple[int, float, bool], right: tuple[int, float, bool]
) -> int:
    """Order by (priority, share, deserved non-empty): higher priority, smaller share, then quota'd first.

    Each argument is ``(spec.priority, share, has_deserved)``; -1 means ``left`` goes first.
    """
    lp, ls, ld = left
    rp, rs, rd = right
    if lp != rp:
        return -1 if lp > rp else 1
    if ls != rs:
        return -1 if ls < rs else 1
    if ld != rd:
        return -1 if ld else 1
    return 0


def common_depth(left: QueueLimits, right: QueueLimits) -> int:
    """Length of the shared path prefix (victimQueueOrder prefers deeper shared ancestors)."""
    depth = 0
    for a, b in zip(left.path, right.path, strict=False):
        if a != b:
            break
        depth += 1
    return depth
