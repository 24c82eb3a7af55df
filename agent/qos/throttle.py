"""CFS quota stepping for one container (docs/design/waterline.md §6.4 and §6.5)..

Down: step from the current quota (or from usage when unlimited) by ``stepCPURatio`` percent, never below
the CPU request, never below ``limit × minCPURatio / 100`` (docs/design/differences.md §3 B2) and never below
the kernel's 1 ms minimum.  Up: step the quota back by the same percentage, capped at the CPU limit; a
container without a limit goes back to unlimited once the step passes 60 cores (B4), or once it reaches
the quota it had before we throttled it.  All arithmetic is exact (``Fraction`` millicores).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from agent.qos.state import ContainerState, PodState
from common.resources import CPU

__all__ = ["MIN_QUOTA_US", "UNLIMITED_ABOVE_MILLI", "Step", "container_bounds", "step_down", "step_up"]

MIN_QUOTA_US = 1000  # the kernel refuses a CFS quota under 1 ms
UNLIMITED_ABOVE_MILLI = 60_000  # crane: more than 60 cores means "lift the quota"
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


def step_down(pod: PodState, container: ContainerState, *, step_ratio: int, min_ratio: int) -> Step | None:
    """The next lower quota, or ``None`` when there is nothing to change (no usage sample, or no movement)."""
    if not container.has_usage_sample or container.name in ("POD", ""):
        return None
    usage = Fraction(container.cpu_usage_milli)
    period = container.cpu_period_us
    base = usage if container.unlimited else _quota_milli(container.cpu_quota_us, period)
    new = base * (100 - step_ratio) / 100
    request, limit = container_bounds(pod, container)
    if request and new < request:
        new = Fraction(request)
    if limit and new < Fraction(limit * min_ratio, 100):
        new = Fraction(limit * min_ratio, 100)
    quota = max(_to_quota(new, period), MIN_QUOTA_US)
    if not container.unlimited and quota == container.cpu_quota_us:
        return None
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
