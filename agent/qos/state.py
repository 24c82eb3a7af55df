"""The node snapshot the waterline engine works on, and its JSON form (``/debug/state``, ``qos-plan --state``).

The engine never reads cgroups or the API server itself: a collector (or the simulator, or a state file)
builds a ``NodeState`` each tick and hands it in.  The JSON form is the one documented for
``loadwise qos-plan``::

    {"now": RFC3339, "node": {"name", "labels", "allocatable", "metrics": {...}},
     "pods": [{"namespace", "name", "uid", "labels", "annotations", "qosClass", "priority", "startTime",
               "usage": {"cpu", "memory"}, "requests", "limits", "terminationGracePeriodSeconds",
               "containers": [{"name", "usage": {"cpu"}, "cpuQuota", "cpuPeriod", "requests", "limits"}]}],
     "ticks": [{"at", "node": {"metrics": {...}}, "pods": [...]}]}

Units: node metrics are given in the unit of their name (``cpu_total_usage`` millicores, ``*_utilization``
percent, ``memory_*`` bytes, ``cpu_core_numbers`` a count); pod and container ``usage``/``requests``/``limits``
are Kubernetes quantities (``"250m"``, ``"1Gi"``; a bare number of cpu means cores).  A metric that is not
listed is *missing* (the engine then freezes the rules on it), which is why the two headline usages are
``int | None``.  A container CPU usage of 0 means "no sample this tick", as with cadvisor, which publishes
nothing for a container whose CPU counter did not move.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from common.clock import parse_rfc3339, to_rfc3339
from common.config import ConfigError
from common.qos import QoSClass, pod_priority_class
from common.resources import CPU, MEMORY, Resources

__all__ = [
    "ContainerState",
    "PodState",
    "NodeState",
    "CPU_TOTAL_USAGE",
    "CPU_TOTAL_UTILIZATION",
    "CPU_CORE_NUMBERS",
    "MEMORY_TOTAL_USAGE",
    "MEMORY_TOTAL_UTILIZATION",
    "MEMORY_TOTAL",
    "CRITICAL_PRIORITY",
    "DEFAULT_TICK_SECONDS",
    "load_ticks",
    "refresh_usage",
]

CPU_TOTAL_USAGE = "cpu_total_usage"
CPU_TOTAL_UTILIZATION = "cpu_total_utilization"
CPU_CORE_NUMBERS = "cpu_core_numbers"
MEMORY_TOTAL_USAGE = "memory_total_usage"
MEMORY_TOTAL_UTILIZATION = "memory_total_utilization"
MEMORY_TOTAL = "memory_total"

# Pods at or above this priority (system-cluster-critical is 2000000000) are never acted on.
CRITICAL_PRIORITY = 2_000_000_000
# Upstream's --collect-interval; used when a tick in a state file gives no time of its own.
DEFAULT_TICK_SECONDS = 10.0

_EMPTY_STR_MAP: Mapping[str, str] = MappingProxyType({})
_EMPTY_FLOAT_MAP: Mapping[str, float] = MappingProxyType({})
_MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
_SOURCE_ANNOTATION = "kubernetes.io/config.source"


@dataclass(frozen=True, slots=True)
class ContainerState:
    """One container's CPU picture: usage this tick and its current CFS quota (µs, -1 = unlimited)."""

    name: str
    cpu_usage_milli: int
    cpu_quota_us: int
    cpu_period_us: int
    cgroup_dir: str = ""
    requests: Resources = field(default_factory=Resources)
    limits: Resources = field(default_factory=Resources)

    @property
    def unlimited(self) -> bool:
        return self.cpu_quota_us <= 0

    @property
    def has_usage_sample(self) -> bool:
        return self.cpu_usage_milli > 0


@dataclass(frozen=True, slots=True)
class PodState:
    """A pod on the node as the engine sees it: identity, ranking keys, usage and its containers."""

    namespace: str
    name: str
    uid: str
    qos_class: str
    priority: int
    priority_class: str
    start_time: float | None
    cpu_usage_milli: int
    memory_usage_bytes: int
    requests: Resources
    limits: Resources
    containers: tuple[ContainerState, ...] = ()
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY_STR_MAP)
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY_STR_MAP)
    cgroup_dir: str = ""
    critical: bool = False
    termination_grace_period_seconds: int | None = None
    terminating: bool = False
    phase: str = "Running"
    # ``namespace/name``, made once: the engine looks pods up by it many times a tick
    _key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_key", f"{self.namespace}/{self.name}")

    @property
    def key(self) -> str:
        return self._key

    @property
    def actionable(self) -> bool:
        """Whether the engine may act on this pod at all (docs/design/waterline.md §4: not critical, not finishing)."""
        return not self.critical and not self.terminating and self.phase not in ("Succeeded", "Failed")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "qosClass": self.qos_class,
            "priority": self.priority,
            "priorityClass": self.priority_class,
            "startTime": _time_out(self.start_time) if self.start_time is not None else None,
            "usage": Resources({CPU: self.cpu_usage_milli, MEMORY: self.memory_usage_bytes}).to_kube(),
            "requests": self.requests.to_kube(),
            "limits": self.limits.to_kube(),
            "containers": [_container_to_json(c) for c in self.containers],
            "cgroupDir": self.cgroup_dir,
            "critical": self.critical,
            "terminating": self.terminating,
            "phase": self.phase,
        }
        if self.termination_grace_period_seconds is not None:
            out["terminationGracePeriodSeconds"] = self.termination_grace_period_seconds
        return out

    @classmethod
    def from_json(cls, raw: Any, *, field: str = "pod") -> PodState:
        doc = _mapping(raw, field)
        namespace = _str(doc.get("namespace", "default"), f"{field}.namespace")
        name = _str(doc.get("name"), f"{field}.name", required=True)
        labels = _str_map(doc.get("labels"), f"{field}.labels")
        annotations = _str_map(doc.get("annotations"), f"{field}.annotations")
        qos_raw = doc.get("qosClass", "")
        qos = _str(qos_raw, f"{field}.qosClass")
        if qos and qos not in {q.value for q in QoSClass}:
            raise ConfigError("must be Guaranteed, Burstable or BestEffort", field=f"{field}.qosClass")
        priority = _int(doc.get("priority"), f"{field}.priority", default=0)
        start_raw = doc.get("startTime")
        start_time = _time(start_raw, f"{field}.startTime") if start_raw is not None else None
        usage = _resources(doc.get("usage"), f"{field}.usage")
        requests = _resources(doc.get("requests"), f"{field}.requests")
        limits = _resources(doc.get("limits"), f"{field}.limits")
        containers_raw = doc.get("containers") or []
        if not isinstance(containers_raw, list):
            raise ConfigError("expected a list", field=f"{field}.containers")
        containers = tuple(
            _container_from_json(c, f"{field}.containers[{i}]") for i, c in enumerate(containers_raw)
        )
        if not requests and not limits and containers:
            for c in containers:
                requests = requests + c.requests
                limits = limits + c.limits
        priority_class = doc.get("priorityClass")
        if priority_class is None:
            shaped = {"metadata": {"labels": labels}, "spec": {"priority": priority}, "status": {"qosClass": qos}}
            priority_class = pod_priority_class(shaped).value
        grace_raw = doc.get("terminationGracePeriodSeconds")
        grace = None if grace_raw is None else _int(grace_raw, f"{field}.terminationGracePeriodSeconds", minimum=0)
        critical_raw = doc.get("critical")
        if critical_raw is None:
            source = annotations.get(_SOURCE_ANNOTATION, "api")
            critical = priority >= CRITICAL_PRIORITY or _MIRROR_ANNOTATION in annotations or source != "api"
        else:
            critical = _bool(critical_raw, f"{field}.critical")
        return cls(
            namespace=namespace,
            name=name,
            uid=_str(doc.get("uid", ""), f"{field}.uid"),
            qos_class=qos,
            priority=priority,
            priority_class=_str(priority_class, f"{field}.priorityClass"),
            start_time=start_time,
            cpu_usage_milli=usage[CPU],
            memory_usage_bytes=usage[MEMORY],
            requests=requests,
            limits=limits,
            containers=containers,
            labels=labels,
            annotations=annotations,
            cgroup_dir=_str(doc.get("cgroupDir", ""), f"{field}.cgroupDir"),
            critical=critical,
            termination_grace_period_seconds=grace,
            terminating=_bool(doc.get("terminating", False), f"{field}.terminating")
            or doc.get("deletionTimestamp") is not None,
            phase=_str(doc.get("phase", "Running"), f"{field}.phase"),
        )


@dataclass(frozen=True, slots=True)
class NodeState:
    """One tick's snapshot of the node: capacities, headline usages, other metrics, and the pods.

    ``extra_metrics`` holds every other metric by name (``cpu_total_utilization``, ``cpu_load_1_min``, ...).
    A series with labels is keyed Prometheus-style, ``name{label="value",...}``, so rules with a
    ``metricRule.selector`` can pick among disk or interface series.  Capacities of 0 mean "not reported"
    (``cpu_core_numbers`` / ``memory_total`` missing), in which case percent gaps cannot be converted.
    """

    node: str
    time: float
    cpu_capacity_milli: int
    memory_capacity_bytes: int
    cpu_usage_milli: int | None
    memory_usage_bytes: int | None
    pods: tuple[PodState, ...] = ()
    extra_metrics: Mapping[str, float] = field(default_factory=lambda: _EMPTY_FLOAT_MAP)
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY_STR_MAP)
    allocatable: Resources = field(default_factory=Resources)

    def metrics(self) -> dict[str, float]:
        """Every node metric present this tick, keyed as in ``extra_metrics``; missing ones are absent."""
        out = dict(self.extra_metrics)
        if self.cpu_usage_milli is not None:
            out[CPU_TOTAL_USAGE] = float(self.cpu_usage_milli)
        if self.memory_usage_bytes is not None:
            out[MEMORY_TOTAL_USAGE] = float(self.memory_usage_bytes)
        if self.cpu_capacity_milli > 0:
            out[CPU_CORE_NUMBERS] = self.cpu_capacity_milli / 1000
        if self.memory_capacity_bytes > 0:
            out[MEMORY_TOTAL] = float(self.memory_capacity_bytes)
        return out

    def to_json(self) -> dict[str, Any]:
        """The ``/debug/state`` document; ``from_json(to_json())`` gives an equal state back."""
        metrics: dict[str, float | int] = {}
        for k, v in sorted(self.metrics().items()):
            metrics[k] = int(v) if float(v).is_integer() else v
        node: dict[str, Any] = {
            "name": self.node,
            "labels": dict(self.labels),
            "allocatable": self.allocatable.to_kube(),
            "metrics": metrics,
        }
        return {"now": _time_out(self.time), "node": node, "pods": [p.to_json() for p in self.pods]}

    @classmethod
    def from_json(cls, raw: Any, *, field: str = "") -> NodeState:
        """One snapshot; a ``ticks`` list, if present, is ignored here (see ``load_ticks``)."""
        doc = _mapping(raw, field or "state")
        prefix = f"{field}." if field else ""
        now_raw = doc.get("now")
        if now_raw is None:
            raise ConfigError("required", field=f"{prefix}now")
        node_doc = _mapping(doc.get("node"), f"{prefix}node")
        metrics = _metrics(node_doc.get("metrics"), f"{prefix}node.metrics")
        pods_raw = doc.get("pods") or []
        return _build(
            name=_str(node_doc.get("name"), f"{prefix}node.name", required=True),
            time=_time(now_raw, f"{prefix}now"),
            labels=_str_map(node_doc.get("labels"), f"{prefix}node.labels"),
            allocatable=_resources(node_doc.get("allocatable"), f"{prefix}node.allocatable"),
            metrics=metrics,
            pods=_pods(pods_raw, f"{prefix}pods"),
        )


def load_ticks(raw: Any, *, source: str = "") -> list[NodeState]:
    """The states a state file asks to evaluate, in order.

    Without ``ticks`` that is the document itself.  With ``ticks`` the document is only the starting
    point: each tick's metrics merge over the previous tick's, its ``pods`` (when present) replace the
    list, and its ``at`` (RFC 3339 or epoch seconds) defaults to the previous time plus 10 s.
    """
    try:
        base = NodeState.from_json(raw)
        doc = _mapping(raw, "state")
        ticks_raw = doc.get("ticks")
        if ticks_raw is None:
            return [base]
        if not isinstance(ticks_raw, list) or not ticks_raw:
            raise ConfigError("expected a non-empty list", field="ticks")
        out: list[NodeState] = []
        metrics = base.metrics()
        pods = base.pods
        t = base.time
        first = True
        for i, tick_raw in enumerate(ticks_raw):
            where = f"ticks[{i}]"
            tick = _mapping(tick_raw, where)
            at = tick.get("at")
            if at is not None:
                t = _time(at, f"{where}.at")
            elif not first:
                t = t + DEFAULT_TICK_SECONDS
            first = False
            node_doc = tick.get("node")
            if node_doc is not None:
                node_map = _mapping(node_doc, f"{where}.node")
                metrics = {**metrics, **_metrics(node_map.get("metrics"), f"{where}.node.metrics")}
            if tick.get("pods") is not None:
                pods = _pods(tick.get("pods"), f"{where}.pods")
            out.append(
                _build(name=base.node, time=t, labels=base.labels, allocatable=base.allocatable, metrics=metrics, pods=pods)
            )
        return out
    except ConfigError as exc:
        if source and not exc.source:
            raise ConfigError(str(exc).removeprefix(f"{exc.field}: ") if exc.field else str(exc),
                              field=exc.field, source=source) from None
        raise


_set_pod_cpu, _set_pod_memory = (PodState.__dict__[name].__set__ for name in ("cpu_usage_milli", "memory_usage_bytes"))
_set_container_cpu, _set_container_quota = (
    ContainerState.__dict__[name].__set__ for name in ("cpu_usage_milli", "cpu_quota_us"))


def refresh_usage(pod: PodState, cpu_usage_milli: int, memory_usage_bytes: int, cpu_quota_us: int) -> None:
    """Set this tick's usage and quota on ``pod`` and its one container, in place: what ``dataclasses.replace`` of
    the pod and of its container would give, without the two copies.

    Only for a collector holding the sole reference to its last snapshot of the pod: the simulator, whose
    waterline engine keeps no ``PodState`` from one tick to the next (it remembers keys, UIDs and quotas).
    """
    (container,) = pod.containers
    _set_container_cpu(container, cpu_usage_milli)
    _set_container_quota(container, cpu_quota_us)
    _set_pod_cpu(pod, cpu_usage_milli)
    _set_pod_memory(pod, memory_usage_bytes)


# -- JSON helpers -----------------------------------------------------------------------------------------


def _build(
    *,
    name: str,
    time: float,
    labels: Mapping[str, str],
    allocatable: Resources,
    metrics: Mapping[str, float],
    pods: tuple[PodState, ...],
) -> NodeState:
    extra = {k: v for k, v in metrics.items() if k not in _HEADLINE}
    cpu = metrics.get(CPU_TOTAL_USAGE)
    mem = metrics.get(MEMORY_TOTAL_USAGE)
    cores = metrics.get(CPU_CORE_NUMBERS)
    total = metrics.get(MEMORY_TOTAL)
    return NodeState(
        node=name,
        time=time,
        cpu_capacity_milli=round(cores * 1000) if cores is not None else 0,
        memory_capacity_bytes=round(total) if total is not None else 0,
        cpu_usage_milli=round(cpu) if cpu is not None else None,
        memory_usage_bytes=round(mem) if mem is not None else None,
        pods=pods,
        extra_metrics=MappingProxyType(extra),
        labels=labels,
        allocatable=allocatable,
    )


_HEADLINE = frozenset({CPU_TOTAL_USAGE, MEMORY_TOTAL_USAGE, CPU_CORE_NUMBERS, MEMORY_TOTAL})


def _container_to_json(c: ContainerState) -> dict[str, Any]:
    return {
        "name": c.name,
        "usage": Resources({CPU: c.cpu_usage_milli}).to_kube(),
        "cpuQuota": c.cpu_quota_us,
        "cpuPeriod": c.cpu_period_us,
        "requests": c.requests.to_kube(),
        "limits": c.limits.to_kube(),
        "cgroupDir": c.cgroup_dir,
    }


def _container_from_json(raw: Any, field: str) -> ContainerState:
    doc = _mapping(raw, field)
    quota = _int(doc.get("cpuQuota"), f"{field}.cpuQuota", default=-1)
    if quota < -1:
        raise ConfigError("must be -1 (unlimited) or a positive number of microseconds", field=f"{field}.cpuQuota")
    period = _int(doc.get("cpuPeriod"), f"{field}.cpuPeriod", default=100_000)
    if period <= 0:
        raise ConfigError("must be a positive number of microseconds", field=f"{field}.cpuPeriod")
    usage = _resources(doc.get("usage"), f"{field}.usage")
    return ContainerState(
        name=_str(doc.get("name"), f"{field}.name", required=True),
        cpu_usage_milli=usage[CPU],
        cpu_quota_us=quota,
        cpu_period_us=period,
        cgroup_dir=_str(doc.get("cgroupDir", ""), f"{field}.cgroupDir"),
        requests=_resources(doc.get("requests"), f"{field}.requests"),
        limits=_resources(doc.get("limits"), f"{field}.limits"),
    )


def _pods(raw: Any, field: str) -> tuple[PodState, ...]:
    if not isinstance(raw, list):
        raise ConfigError("expected a list", field=field)
    pods = tuple(PodState.from_json(p, field=f"{field}[{i}]") for i, p in enumerate(raw))
    seen: set[str] = set()
    for i, p in enumerate(pods):
        if p.key in seen:
            raise ConfigError(f"duplicate pod {p.key}", field=f"{field}[{i}].name")
        seen.add(p.key)
    return pods


def _metrics(raw: Any, field: str) -> dict[str, float]:
    if raw is None:
        return {}
    doc = _mapping(raw, field)
    out: dict[str, float] = {}
    for k, v in doc.items():
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ConfigError("expected a number", field=f"{field}.{k}")
        if not math.isfinite(v) or v < 0:
            raise ConfigError("expected a finite, non-negative number", field=f"{field}.{k}")
        out[str(k)] = float(v)
    return out


def _mapping(raw: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise ConfigError("expected an object", field=field)
    return raw


def _str(raw: Any, field: str, *, required: bool = False) -> str:
    if raw is None or raw == "":
        if required:
            raise ConfigError("required", field=field)
        return ""
    if not isinstance(raw, str):
        raise ConfigError("expected a string", field=field)
    return raw


def _int(raw: Any, field: str, *, default: int = 0, minimum: int | None = None) -> int:
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ConfigError("expected an integer", field=field)
    if minimum is not None and raw < minimum:
        raise ConfigError(f"must be >= {minimum}", field=field)
    return raw


def _bool(raw: Any, field: str) -> bool:
    if not isinstance(raw, bool):
        raise ConfigError("expected true or false", field=field)
    return raw


def _str_map(raw: Any, field: str) -> Mapping[str, str]:
    if raw is None:
        return _EMPTY_STR_MAP
    doc = _mapping(raw, field)
    for k, v in doc.items():
        if not isinstance(v, str):
            raise ConfigError("expected a string", field=f"{field}.{k}")
    return MappingProxyType({str(k): v for k, v in doc.items()})


def _resources(raw: Any, field: str) -> Resources:
    if raw is None:
        return Resources()
    _mapping(raw, field)
    try:
        return Resources.parse(raw, field=field)
    except ValueError as exc:
        key = str(exc).split(":", 1)[0]
        raise ConfigError(str(exc).split(":", 1)[-1].strip(), field=key if key.startswith(field) else field) from None


def _time(raw: Any, field: str) -> float:
    if isinstance(raw, bool):
        raise ConfigError("expected an RFC 3339 time or epoch seconds", field=field)
    if isinstance(raw, int | float):
        return float(raw)
    if not isinstance(raw, str):
        raise ConfigError("expected an RFC 3339 time or epoch seconds", field=field)
    try:
        return parse_rfc3339(raw, field=field)
    except ValueError:
        raise ConfigError(f"{raw!r} is not an RFC 3339 time", field=field) from None


def _time_out(t: float) -> str | float:
    """RFC 3339 when the time is whole seconds (metav1.Time's precision), else epoch seconds to keep it exact."""
    return to_rfc3339(t) if float(t).is_integer() else t
