"""Pod effective requests and limits, exactly as kube-scheduler computes them.

See docs/design/kube-scoring.md §2: app containers (and sidecars) summed, init containers as phase
footprints (own request plus the sidecars started before them), the per-resource max of the two,
then pod overhead added.  Pod-level ``spec.resources`` replaces cpu/memory/hugepages when set.
Non-zero defaults (100m / 200Mi) fill a *missing* cpu/memory key per container, for scoring only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.resources import CPU, MEMORY, Resources

__all__ = [
    "DEFAULT_MILLI_CPU_REQUEST",
    "DEFAULT_MEMORY_REQUEST",
    "pod_requests",
    "pod_limits",
    "container_requests",
]

DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024


def _container_resources(c: Mapping[str, Any], key: str, where: str, non_zero: bool) -> Resources:
    res = c.get("resources") or {}
    raw = res.get(key) or {}
    # kube copies limits into requests when only limits are given (API defaulting).
    if key == "requests":
        limits = res.get("limits") or {}
        merged = dict(limits)
        merged.update(raw)
        raw = merged
    r = Resources.parse(raw, field=f"{where}.resources.{key}")
    for name, value in r.items():
        if value < 0:  # the API server's "must be greater than or equal to 0"
            raise ValueError(f"{where}.resources.{key}.{name}: must not be negative, got {raw.get(name)!r}")
    if non_zero:
        extra: dict[str, int] = {}
        if CPU not in raw:
            extra[CPU] = DEFAULT_MILLI_CPU_REQUEST
        if MEMORY not in raw:
            extra[MEMORY] = DEFAULT_MEMORY_REQUEST
        if extra:
            r = r + extra
    return r


def container_requests(c: Mapping[str, Any], *, non_zero: bool = False, where: str = "container") -> Resources:
    return _container_resources(c, "requests", where, non_zero)


def _is_sidecar(c: Mapping[str, Any]) -> bool:
    return c.get("restartPolicy") == "Always"


def _aggregate(spec: Mapping[str, Any], key: str, non_zero: bool) -> Resources:
    total = Resources()
    for i, c in enumerate(spec.get("containers") or []):
        total = total + _container_resources(c, key, f"spec.containers[{i}]", non_zero)
    side = Resources()
    init_max = Resources()
    for i, c in enumerate(spec.get("initContainers") or []):
        r = _container_resources(c, key, f"spec.initContainers[{i}]", non_zero)
        if _is_sidecar(c):
            total = total + r
            side = side + r
            footprint = side
        else:
            footprint = r + side
        init_max = init_max.max(footprint)
    result = total.max(init_max)
    pod_level = (spec.get("resources") or {}).get(key)
    if pod_level:
        level = Resources.parse(pod_level, field=f"spec.resources.{key}")
        keep = {k: v for k, v in result.items() if not (k in (CPU, MEMORY) or k.startswith("hugepages-"))}
        replaced = {k: v for k, v in level.items() if k in (CPU, MEMORY) or k.startswith("hugepages-")}
        carried = {k: v for k, v in result.items() if k in (CPU, MEMORY) and k not in replaced}
        result = Resources({**keep, **carried, **replaced})
    overhead = spec.get("overhead")
    if overhead:
        result = result + Resources.parse(overhead, field="spec.overhead")
    return result


def pod_requests(pod: Mapping[str, Any], *, non_zero: bool = False) -> Resources:
    """The pod's effective requests (``resource.PodRequests``).

    With ``non_zero`` the 100m / 200Mi defaults fill each container's missing cpu/memory request,
    as the LeastAllocated, MostAllocated and RequestedToCapacityRatio scorers do.
    """
    spec = pod.get("spec") or {}
    return _aggregate(spec, "requests", non_zero)


def pod_limits(pod: Mapping[str, Any]) -> Resources:
    """The pod's effective limits (``resource.PodLimits``); a container without a limit adds nothing."""
    spec = pod.get("spec") or {}
    return _aggregate(spec, "limits", False)
