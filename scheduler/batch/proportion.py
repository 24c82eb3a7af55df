"""Proportion's weighted fair share between queues (docs/design/scheduler.md §4.5).

``water_fill`` computes every queue's *deserved* share of the cluster: each round hands the still
unclaimed ``remaining`` out by weight to queues whose demand is not yet met, caps a queue by its real
capability and its request, floors it by its guarantee, and returns what it cannot use.  All queues
of one round see the same ``remaining``, so the result does not depend on queue order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from common.resources import CPU, MEMORY, PODS, Resources
from scheduler.batch.quota import (
    dominant_share,
    exceeded_part,
    exceeding_requested,
    is_empty,
    less_equal,
    min_dimension,
    sum_resources,
)

__all__ = [
    "QueueDemand",
    "effective_capability",
    "real_capability",
    "water_fill",
    "queue_share",
    "overused",
    "allocatable",
    "reclaim_victims",
    "inqueue_reserved",
    "elastic",
    "enqueue_shortfall",
    "quota_message",
    "MAX_ROUNDS",
]

#: Safety net for pathological inputs; a round that changes nothing already ends the loop.
MAX_ROUNDS = 1000


@dataclass(frozen=True, slots=True)
class QueueDemand:
    """What proportion knows about one queue in a session.

    ``capability`` is a bound (absent dimensions unlimited); ``request`` = allocated + pending
    requests of the queue's jobs (``pods`` included).
    """

    name: str
    weight: int
    request: Resources
    allocated: Resources = Resources()
    guarantee: Resources = Resources()
    capability: Resources = Resources()


def effective_capability(capability: Mapping[str, int]) -> Resources:
    """Queue ``spec.capability`` as a bound: cpu/memory <= 0 mean unlimited and are dropped."""
    return Resources({k: v for k, v in capability.items() if not (k in (CPU, MEMORY) and v <= 0)})


def real_capability(
    total: Mapping[str, int], total_guarantee: Mapping[str, int], guarantee: Mapping[str, int],
    capability: Mapping[str, int],
) -> Resources:
    """``min(ExceededPart(total, Σguarantees) + guarantee, capability)``; absent capability dims are unlimited."""
    base = exceeded_part(total, total_guarantee) + guarantee
    return min_dimension(base, effective_capability(capability), missing_unlimited=True)


def _floor_share(remaining: Mapping[str, int], weight: int, total_weight: int) -> Resources:
    ratio = Fraction(weight, total_weight)
    return Resources({k: int(v * ratio) for k, v in remaining.items()})


def water_fill(total: Mapping[str, int], queues: Sequence[QueueDemand],
               total_guarantee: Mapping[str, int] | None = None) -> dict[str, Resources]:
    """Deserved resources per queue name.

    Every queue's real capability subtracts ``total_guarantee``: the guarantees of *all* queues of the cluster,
    including queues without jobs that take no part in the filling (Volcano); by default those of ``queues``.
    """
    if total_guarantee is None:
        total_guarantee = sum_resources(q.guarantee for q in queues)
    caps = {q.name: real_capability(total, total_guarantee, q.guarantee, q.capability) for q in queues}
    deserved: dict[str, Resources] = {q.name: Resources() for q in queues}
    met: set[str] = set()
    remaining = Resources(total)
    for _ in range(MAX_ROUNDS):
        total_weight = sum(q.weight for q in queues if q.name not in met)
        if total_weight <= 0:
            break
        increased: dict[str, int] = {}
        decreased: dict[str, int] = {}
        for q in queues:
            if q.name in met:
                continue
            old = deserved[q.name]
            new = old + _floor_share(remaining, q.weight, total_weight)
            new = min_dimension(new, caps[q.name], missing_unlimited=True)
            new = min_dimension(new, q.request, missing_unlimited=False)
            new = new.max(q.guarantee)
            deserved[q.name] = new
            if less_equal(q.request, new) or new == old:
                met.add(q.name)
            for name in set(new) | set(old):
                delta = new[name] - old[name]
                if delta > 0:
                    increased[name] = increased.get(name, 0) + delta
                elif delta < 0:
                    decreased[name] = decreased.get(name, 0) - delta
        previous = remaining
        remaining = exceeded_part(remaining + decreased, increased)
        if is_empty(remaining) or remaining == previous:
            break
    return deserved


def queue_share(allocated: Mapping[str, int], deserved: Mapping[str, int]) -> float:
    """Max over deserved's dimensions (``pods`` included) of allocated / deserved."""
    return dominant_share(allocated, deserved)[0] if deserved else 0.0


def overused(deserved: Mapping[str, int], allocated: Mapping[str, int]) -> bool:
    """A queue is overused when ``deserved <= allocated`` on every dimension of deserved."""
    return less_equal(deserved, allocated)


def allocatable(allocated: Mapping[str, int], request: Mapping[str, int], deserved: Mapping[str, int]) -> list[str]:
    """Dimensions (of the request, pods ignored) on which ``allocated + request`` would exceed deserved.

    An empty list means the task may be allocated in its queue.
    """
    # exceeding_requested(sum_resources((allocated, request)), deserved, request), without the sum's vector: asked
    # for every pod allocate places
    return sorted(name for name, amount in request.items()
                  if amount > 0 and name != PODS and allocated.get(name, 0) + amount > deserved.get(name, 0))


def reclaim_victims(
    candidates: Iterable[tuple[str, Resources]],
    allocated: Mapping[str, Resources],
    deserved: Mapping[str, Resources],
) -> list[int]:
    """Indices of ``(queue name, request)`` reclaimees that proportion allows as victims.

    Each victim queue keeps a running copy of its allocation; a reclaimee is a victim while that
    running allocation is not within deserved, and choosing it subtracts its request.
    """
    running: dict[str, Resources] = {}
    chosen: list[int] = []
    for index, (queue, request) in enumerate(candidates):
        current = running.get(queue, allocated.get(queue, Resources()))
        if less_equal(current, deserved.get(queue, Resources())):
            continue
        running[queue] = current - request
        chosen.append(index)
    return chosen


def inqueue_reserved(min_resources: Mapping[str, int], job_allocated: Mapping[str, int]) -> Resources:
    """Resources an admitted job still holds in reserve: minResources not yet covered by its allocation."""
    return Resources({k: v - job_allocated.get(k, 0) for k, v in min_resources.items() if v > job_allocated.get(k, 0)})


def elastic(job_allocated: Mapping[str, int], min_resources: Mapping[str, int]) -> Resources:
    """What a job holds beyond its minResources (``Elastic``)."""
    return exceeded_part(job_allocated, min_resources)


def enqueue_shortfall(
    min_resources: Mapping[str, int],
    allocated: Mapping[str, int],
    inqueue: Mapping[str, int],
    elastic_total: Mapping[str, int],
    real_cap: Mapping[str, int],
) -> list[str]:
    """Dimensions blocking admission: ``minResources + allocated + inqueue − elastic`` over real capability.

    Empty when the job may be enqueued (always so without minResources).
    """
    if not min_resources:
        return []
    wanted = sum_resources((min_resources, allocated, inqueue)) - elastic_total
    return exceeding_requested(wanted, real_cap, min_resources)


def quota_message(dimensions: Iterable[str]) -> str:
    """PodGroup event text when a queue's quota rejects admission."""
    return "queue resource quota insufficient: " + ", ".join(f"insufficient {d}" for d in dimensions)
