"""CFS quota stepping for one container (docs/design/waterline.md §6.4 and §6.5).

Down: step from the current quota (or from usage when unlimited) by ``stepCPURatio`` percent, never below
the CPU request, never below ``limit × minCPURatio / 100`` (docs/design/differences.md §3 B2) and never below
the kernel's 1 ms minimum.  Up: step the quota back by the same percentage, capped at the CPU limit; a
container without a limit goes back to unlimited once the step passes 60 cores (B4), or once it reaches
the quota it had before we throttled it.  All arithmetic is exact (``Fraction`` millicores).

Settling (a product decision beyond crane, whose steps alone make a throttled burner oscillate): when the
planner knows the node's distance to the waterline it passes each container its share of that distance,
and a step never goes further than the share.  Down steps aim at ``SETTLE_TARGET`` of the line, restore
steps only start below ``RESTORE_BELOW`` of it (the band in between is the dead band), raise only a
container that uses most of its quota (``BINDING``; raising an idle quota changes nothing until the load
returns, and then overshoots), and lift a quota the container leaves mostly unused (``IDLE``: its load
stopped) straight back to what it was before the engine throttled it.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from agent.qos.state import ContainerState, PodState
from common.resources import CPU

__all__ = [
    "MIN_QUOTA_US",
    "UNLIMITED_ABOVE_MILLI",
    "SETTLE_TARGET",
    "RESTORE_BELOW",
    "Step",
    "container_bounds",
    "step_down",
    "step_up",
    "restore_step",
]

MIN_QUOTA_US = 1000  # the kernel refuses a CFS quota under 1 ms
UNLIMITED_ABOVE_MILLI = 60_000  # crane: more than 60 cores means "lift the quota"
SETTLE_TARGET = Fraction(95, 100)  # steps aim here, as a fraction of the waterline
RESTORE_BELOW = Fraction(90, 100)  # no restore step while usage is at or above this fraction of the line
BINDING = Fraction(90, 100)  # a quota the container uses this much of is what holds it back
IDLE = Fraction(50, 100)  # a quota the container uses less than this much of no longer holds anything
ELASTIC_CPU = "gocrane.io/cpu"


@dataclass(frozen=True, slots=True)
class Step:
    """One quota change: the value to write and the CPU it releases (down) or hands back (up), in millicores."""

    quota_us: int
    period_us: int
    released_milli: Fraction


def container_bounds(pod: PodState, container: ContainerState) -> tuple[int, int]:
    """CPU (request, limit) in millicores for the container; a lone container falls back to pod values."""
    request = container.requests[CPU]
    limit = container.limits[CPU]
    if not request and not limit and len(pod.containers) == 1:
        request, limit = pod.requests[CPU], pod.limits[CPU]
    return request, limit


def _quota_milli(quota_us: int, period_us: int) -> Fraction:
    return Fraction(quota_us * 1000, period_us)


def _to_quota(milli: Fraction, period_us: int) -> int:
    return int(milli * period_us / 1000)  # trunc, as upstream writes it


def step_down(
    pod: PodState, container: ContainerState, *, step_ratio: int, min_ratio: int, share_milli: Fraction | None = None
) -> Step | None:
    """The next lower quota, or ``None`` when there is nothing to change (no usage sample, or no movement).

    ``share_milli``: the part of the node's distance to the settling target this container should release;
    the step then stops at ``usage - share`` instead of going the whole ratio further down.
    """
    if not container.has_usage_sample or container.name in ("POD", ""):
        return None
    usage = Fraction(container.cpu_usage_milli)
    period = container.cpu_period_us
    base = usage if container.unlimited else _quota_milli(container.cpu_quota_us, period)
    new = base * (100 - step_ratio) / 100
    if share_milli is not None:
        new = max(new, usage - share_milli)
    request, limit = container_bounds(pod, container)
    if request and new < request:
        new = Fraction(request)
    if limit and new < Fraction(limit * min_ratio, 100):
        new = Fraction(limit * min_ratio, 100)
    quota = max(_to_quota(new, period), MIN_QUOTA_US)
    if not container.unlimited and (quota == container.cpu_quota_us or
                                    (share_milli is not None and quota > container.cpu_quota_us)):
        return None  # a settling step never raises a quota on the way down
    written = _quota_milli(quota, period)
    return Step(quota, period, max(Fraction(0), usage - written))


def step_up(
    pod: PodState,
    container: ContainerState,
    *,
    step_ratio: int,
    original_quota_us: int | None = None,
    node_capacity_milli: int = 0,
) -> Step | None:
    """The next higher quota, or ``None`` when the container is unlimited or already at its cap.

    ``original_quota_us`` is the quota the container had before the engine first throttled it (when the
    engine remembers it): the step never goes past it, and an originally unlimited container is lifted
    back to unlimited once the step covers the whole node.
    """
    if container.unlimited or container.name in ("POD", ""):
        return None
    period = container.cpu_period_us
    current = _quota_milli(container.cpu_quota_us, period)
    new = current * (100 + step_ratio) / 100
    _, limit = container_bounds(pod, container)
    elastic = container.limits[ELASTIC_CPU] or container.requests[ELASTIC_CPU]
    lift = False
    if limit:
        new = min(new, Fraction(limit))
    elif elastic:
        new = Fraction(elastic * 1000)
    elif new > UNLIMITED_ABOVE_MILLI:
        lift = True
    if original_quota_us is not None:
        if original_quota_us > 0 and original_quota_us >= container.cpu_quota_us:
            new = min(new, _quota_milli(original_quota_us, period))
            lift = False
        elif original_quota_us <= 0 and node_capacity_milli and new >= node_capacity_milli:
            lift = True
    usage = Fraction(container.cpu_usage_milli)
    if lift:
        return Step(-1, period, Fraction(0))
    quota = max(_to_quota(new, period), MIN_QUOTA_US)
    if quota == container.cpu_quota_us:
        return None
    return Step(quota, period, max(Fraction(0), _quota_milli(quota, period) - usage))


def restore_step(
    pod: PodState,
    container: ContainerState,
    *,
    step_ratio: int,
    share_milli: Fraction,
    original_quota_us: int,
    node_capacity_milli: int = 0,
) -> Step | None:
    """A settling restore step for a container the engine throttled (see the module docstring).

    ``share_milli`` is this container's part of the head-room below the settling target; the quota rises
    by at most that and at most one ratio step.  An idle quota goes straight back to ``original_quota_us``
    (-1: unlimited); a quota the container does not use up, but not idle either, is held.
    """
    if container.unlimited or container.name in ("POD", ""):
        return None
    period = container.cpu_period_us
    current = _quota_milli(container.cpu_quota_us, period)
    usage = Fraction(container.cpu_usage_milli)
    if usage < current * IDLE:
        if original_quota_us == container.cpu_quota_us:
            return None
        return Step(original_quota_us if original_quota_us > 0 else -1, period, Fraction(0))
    if usage < current * BINDING or share_milli <= 0:
        return None
    step = step_up(pod, container, step_ratio=step_ratio, original_quota_us=original_quota_us,
                   node_capacity_milli=node_capacity_milli)
    if step is None or step.quota_us < 0:
        return step
    quota = min(step.quota_us, _to_quota(current + share_milli, period))
    if quota <= container.cpu_quota_us:
        return None
    return Step(quota, period, max(Fraction(0), _quota_milli(quota, period) - usage))
