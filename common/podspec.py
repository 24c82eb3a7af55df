"""Pod effective requests and limits, exactly as kube-scheduler computes them.

See docs/design/kube-scoring.md §2: app containers (and sidecars) summed, init containers as phase
footprints (own request plus the sidecars started before them), the per-resource max of the two,
then pod overhead added.  Pod-level ``spec.resources`` replaces cpu/memory/hugepages when set.
Non-zero defaults (100m / 200Mi) fill a *missing* cpu/memory key per container, for scoring only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from common.qos import QoSClass, qos_class
from common.resources import CPU, MEMORY, Resources

__all__ = [
    "DEFAULT_MILLI_CPU_REQUEST",
    "DEFAULT_MEMORY_REQUEST",
    "pod_requests",
    "pod_limits",
    "container_requests",
    "PodResources",
    "pod_resources",
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


@dataclass(frozen=True, slots=True)
class PodResources:
    """What a pod's containers ask for: its requests, its requests with the non-zero defaults, its limits, and the
    QoS class those make (``status.qosClass`` when the API server set it)."""

    requests: Resources
    nonzero_requests: Resources
    limits: Resources
    qos: QoSClass


def pod_resources(pod: Mapping[str, Any]) -> PodResources:
    """``pod_requests`` (plain and ``non_zero``), ``pod_limits`` and ``qos_class`` of the pod.

    Replicas of one workload ask for the same: when the containers' resources are plain maps of quantity strings
    (and no pod-level resources or overhead are set), the answer is kept per *what they ask* — the containers'
    restart policies, requests and limits, in order, and ``status.qosClass``, the only fields those functions
    read — and computed from that alone, so a pod that asks the same gets the same answer, or the same error, as
    a fresh computation."""
    key = _resource_key(pod)
    if key is None:
        return _computed(pod)
    return _resources_of(key)


def _computed(pod: Mapping[str, Any]) -> PodResources:
    return PodResources(pod_requests(pod), pod_requests(pod, non_zero=True), pod_limits(pod), qos_class(pod))


_Containers = tuple[tuple[str | None, tuple[tuple[str, str], ...] | None, tuple[tuple[str, str], ...] | None], ...]
_Key = tuple[_Containers, _Containers | None, str | None]


class _NotPlain(Exception):
    """A field that is not of the plain shape a resource key holds."""


def _resource_key(pod: Mapping[str, Any]) -> _Key | None:
    """The containers' and init containers' (restartPolicy, requests, limits) and the status's qosClass, or None
    when a field is not the plain shape (pod-level resources, overhead, a map that is not one of strings)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    qos = status.get("qosClass")
    if spec.get("resources") or spec.get("overhead") or (qos is not None and type(qos) is not str):
        return None
    try:
        init = spec.get("initContainers")
        return _container_keys(spec.get("containers")), None if init is None else _container_keys(init), qos
    except _NotPlain:
        return None


def _container_keys(raw: Any) -> _Containers:
    if type(raw) is not list:
        raise _NotPlain
    out = []
    for c in raw:
        if type(c) is not dict:
            raise _NotPlain
        restart, res = c.get("restartPolicy"), c.get("resources")
        if (restart is not None and type(restart) is not str) or (res is not None and type(res) is not dict):
            raise _NotPlain
        res = res or {}
        out.append((restart, _texts(res.get("requests")), _texts(res.get("limits"))))
    return tuple(out)


def _texts(raw: Any) -> tuple[tuple[str, str], ...] | None:
    """A map of strings as its items in order (None for absent)."""
    if raw is None:
        return None
    if type(raw) is not dict or not all(type(k) is str and type(v) is str for k, v in raw.items()):
        raise _NotPlain
    return tuple(raw.items())


@lru_cache(maxsize=1024)
def _resources_of(key: _Key) -> PodResources:
    """The computation on a pod spec that holds only what ``key`` says."""
    containers, init, qos = key
    spec: dict[str, Any] = {"containers": [_container(k) for k in containers]}
    if init is not None:
        spec["initContainers"] = [_container(k) for k in init]
    return _computed({"spec": spec, "status": {} if qos is None else {"qosClass": qos}})


def _container(key: tuple[str | None, tuple[tuple[str, str], ...] | None, tuple[tuple[str, str], ...] | None],
               ) -> dict[str, Any]:
    restart, requests, limits = key
    out: dict[str, Any] = {}
    if restart is not None:
        out["restartPolicy"] = restart
    if requests is not None or limits is not None:
        res: dict[str, Any] = {}
        out["resources"] = res
        if requests is not None:
            res["requests"] = dict(requests)
        if limits is not None:
            res["limits"] = dict(limits)
    return out
