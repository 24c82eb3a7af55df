"""CFS quota stepping for one container (docs/design/waterline.md §6.4 and §6.5).

Down: step from the current quota (or from usage when unlimited) by ``stepCPURatio`` percent, never below
the CPU request, never below ``limit × minCPURatio / 100`` (docs/design/differences.md §3 B2) and never below
the kernel's 1 ms minimum.  Up: step the quota back by the same percentage, capped at the CPU limit; a
container without a limit goes back to unlimited once the step passes 60 cores (B4), or once it reaches
the quota it had before we throttled it.  All arithmetic is exact: ``Fraction`` millicores in and out, integers on a common denominator inside.

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
NOTHING = Fraction(0)  # what a step releases when it releases nothing
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


def _to_quota(num: int, den: int, period_us: int) -> int:
    """The quota for ``num / den >= 0`` millicores (``den > 0``), truncated as upstream writes it."""
    return num * period_us // (den * 1000)


def _released(more_us_milli: int, period_us: int) -> Fraction:
    """``max(0, more_us_milli / period_us)``: millicores released (or handed back) by a quota change."""
    return Fraction(more_us_milli, period_us) if more_us_milli > 0 else NOTHING


def step_down(
    pod: PodState, container: ContainerState, *, step_ratio: int, min_ratio: int, share_milli: Fraction | None = None
) -> Step | None:
    """The next lower quota, or ``None`` when there is nothing to change (no usage sample, or no movement).

    ``share_milli``: the part of the node's distance to the settling target this container should release;
    the step then stops at ``usage - share`` instead of going the whole ratio further down.  The new quota is
    ``num / den`` millicores, exact on integers: this runs for every throttled container on every tick.
    """
    if not container.has_usage_sample or container.name in ("POD", ""):
        return None
    usage, period, current = container.cpu_usage_milli, container.cpu_period_us, container.cpu_quota_us
    if container.unlimited:
        num, den = usage * (100 - step_ratio), 100
    else:
        num, den = current * 1000 * (100 - step_ratio), 100 * period
    if share_milli is not None:
        floor_num, floor_den = usage * share_milli.denominator - share_milli.numerator, share_milli.denominator
        if floor_num * den > num * floor_den:
            num, den = floor_num, floor_den
    request, limit = container_bounds(pod, container)
    if request and num < request * den:
        num, den = request, 1
    if limit and num * 100 < limit * min_ratio * den:
        num, den = limit * min_ratio, 100
    quota = max(_to_quota(num, den, period), MIN_QUOTA_US)
    if not container.unlimited and (quota == current or (share_milli is not None and quota > current)):
        return None  # a settling step never raises a quota on the way down
    return Step(quota, period, _released(usage * period - quota * 1000, period))


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
    back to unlimited once the step covers the whole node.  Exact on integers, as ``step_down``.
    """
    if container.unlimited or container.name in ("POD", ""):
        return None
    period, current = container.cpu_period_us, container.cpu_quota_us
    num, den = current * 1000 * (100 + step_ratio), 100 * period
    _, limit = container_bounds(pod, container)
    elastic = container.limits[ELASTIC_CPU] or container.requests[ELASTIC_CPU]
    lift = False
    if limit:
        if limit * den < num:
            num, den = limit, 1
    elif elastic:
        num, den = elastic * 1000, 1
    elif num > UNLIMITED_ABOVE_MILLI * den:
        lift = True
    if original_quota_us is not None:
        if original_quota_us > 0 and original_quota_us >= current:
            if original_quota_us * 1000 * den < num * period:
                num, den = original_quota_us * 1000, period
            lift = False
        elif original_quota_us <= 0 and node_capacity_milli and num >= node_capacity_milli * den:
            lift = True
    if lift:
        return Step(-1, period, NOTHING)
    quota = max(_to_quota(num, den, period), MIN_QUOTA_US)
    if quota == current:
        return None
    return Step(quota, period, _released(quota * 1000 - container.cpu_usage_milli * period, period))


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
    period, current = container.cpu_period_us, container.cpu_quota_us
    usage_us = container.cpu_usage_milli * period  # usage against the quota, both in us-millicores
    if usage_us * IDLE.denominator < current * 1000 * IDLE.numerator:
        if original_quota_us == current:
            return None
        return Step(original_quota_us if original_quota_us > 0 else -1, period, NOTHING)
    if usage_us * BINDING.denominator < current * 1000 * BINDING.numerator or share_milli <= 0:
        return None
    step = step_up(pod, container, step_ratio=step_ratio, original_quota_us=original_quota_us,
                   node_capacity_milli=node_capacity_milli)
    if step is None or step.quota_us < 0:
        return step
    share_num, share_den = share_milli.numerator, share_milli.denominator
    quota = min(step.quota_us, _to_quota(current * 1000 * share_den + share_num * period, share_den * period, period))
    if quota <= current:
        return None
    return Step(quota, period, _released(quota * 1000 - usage_us, period))
