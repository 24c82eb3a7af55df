"""NodeMetric status building: what koordlet writes, with Koordinator's field names exactly.

The agent (and the simulator) record one :class:`UsageSample` per tick into a :class:`UsageStore`
and, every ``reportIntervalSeconds``, turn the store into the ``status`` of the node's NodeMetric
with :func:`build_nodemetric_status`.  Both are pure: the tick time and the report time are
arguments, and the pods' identity comes in as :class:`PodMeta` values (docs/design/nodemetric.md §1–§4).

The simulator uses the same functions, so their signatures are a stable interface.

Units on the way in: CPU in cores (float), memory in bytes.  On the way out: CPU as a milli quantity
truncated (``int(cores * 1000)``), memory as a byte quantity truncated, as koordlet serialises them.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from operator import attrgetter
from types import MappingProxyType
from typing import Any

from agent.aggregate import AGGREGATIONS, COLD_START_FRACTION, SeriesWindows, row_means, summaries
from agent.history import FloatArray, History, Ring, gather_windows
from common import crdschema
from common.clock import to_rfc3339
from common.config import ConfigError
from common.duration import format_duration, parse_duration
from common.kinds import kind_info
from common.objects import PodsMetric, ReportedPods
from common.qos import koord_qos, pod_priority_class
from common.quantity import format_bytes, format_milli
from common.resources import CPU, MAX_QUANTITY, MEMORY, cap_quantity

__all__ = [
    "USAGE_WITHOUT_PAGE_CACHE",
    "USAGE_WITH_PAGE_CACHE",
    "USAGE_WITH_HOT_PAGE_CACHE",
    "MEMORY_POLICIES",
    "NODE_CPU",
    "NODE_MEMORY",
    "NODE_MEMORY_WITH_PAGE_CACHE",
    "SYSTEM_CPU",
    "SYSTEM_MEMORY",
    "pod_series",
    "MetricCollectPolicy",
    "PodMeta",
    "PodUsage",
    "UsageSample",
    "UsageStore",
    "resource_map",
    "reported_quantities",
    "report_rings",
    "assemble_status",
    "status_of",
    "Reported",
    "build_nodemetric_status",
    "nodemetric_object",
]

NODEMETRIC_CRD = "slo.loadwise.io_nodemetrics.yaml"

USAGE_WITHOUT_PAGE_CACHE = "usageWithoutPageCache"
USAGE_WITH_PAGE_CACHE = "usageWithPageCache"
USAGE_WITH_HOT_PAGE_CACHE = "usageWithHotPageCache"
MEMORY_POLICIES = (USAGE_WITHOUT_PAGE_CACHE, USAGE_WITH_HOT_PAGE_CACHE, USAGE_WITH_PAGE_CACHE)

NODE_CPU = "node/cpu"
NODE_MEMORY = "node/memory"
NODE_MEMORY_WITH_PAGE_CACHE = "node/memory-with-page-cache"
SYSTEM_CPU = "system/cpu"
SYSTEM_MEMORY = "system/memory"

# koordlet's floors: a window under a minute or a report more often than every 30 s is raised.
MIN_AGGREGATE_SECONDS = 60
MIN_REPORT_INTERVAL_SECONDS = 30
DEFAULT_DURATIONS: tuple[float, ...] = (300.0, 600.0, 1800.0)
# The longest window the agent keeps history for: koordlet's metric cache keeps 12 hours.  The history is
# allocated up front per series (one sample per collect interval), so a mistyped window ("1000000h") would
# otherwise take the agent down on every node; such a spec is refused and the last good policy kept.
MAX_WINDOW_SECONDS = 12 * 3600


def pod_series(uid: str, resource: str) -> str:
    """Series name of one pod resource (``cpu`` or ``memory``)."""
    return f"pod/{uid}/{resource}"


@dataclass(frozen=True, slots=True)
class MetricCollectPolicy:
    """``spec.metricCollectPolicy`` with koordlet's defaults; the floors apply via the properties."""

    aggregate_duration_seconds: int = 300
    report_interval_seconds: int = 60
    durations: tuple[float, ...] = DEFAULT_DURATIONS
    node_memory_collect_policy: str = USAGE_WITHOUT_PAGE_CACHE

    @property
    def window_seconds(self) -> int:
        """The averaging window of ``nodeUsage`` and ``podsMetric``."""
        return max(self.aggregate_duration_seconds, MIN_AGGREGATE_SECONDS)

    @property
    def interval_seconds(self) -> int:
        """Seconds between two reports."""
        return max(self.report_interval_seconds, MIN_REPORT_INTERVAL_SECONDS)

    @property
    def node_retention_seconds(self) -> float:
        """How much node history the longest window needs."""
        return max([float(self.window_seconds), *self.durations])

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None, *, source: str = "") -> MetricCollectPolicy:
        """Parse a NodeMetric ``spec``; missing fields take defaults, wrong ones raise ConfigError."""
        where = "spec.metricCollectPolicy"
        if spec is None:
            return cls()
        if not isinstance(spec, Mapping):
            raise ConfigError("expected an object", field="spec", source=source)
        raw = spec.get("metricCollectPolicy")
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise ConfigError("expected an object", field=where, source=source)
        agg = _positive_int(raw.get("aggregateDurationSeconds"), 300, f"{where}.aggregateDurationSeconds", source)
        if agg > MAX_WINDOW_SECONDS:
            raise ConfigError(f"must be at most {MAX_WINDOW_SECONDS} (12h, the longest history kept), got {agg}",
                              field=f"{where}.aggregateDurationSeconds", source=source)
        rep = _positive_int(raw.get("reportIntervalSeconds"), 60, f"{where}.reportIntervalSeconds", source)
        durations = DEFAULT_DURATIONS
        nap = raw.get("nodeAggregatePolicy")
        if nap is not None:
            if not isinstance(nap, Mapping):
                raise ConfigError("expected an object", field=f"{where}.nodeAggregatePolicy", source=source)
            raw_durations = nap.get("durations")
            if raw_durations is not None:
                durations = _durations(raw_durations, f"{where}.nodeAggregatePolicy.durations", source)
        mem = raw.get("nodeMemoryCollectPolicy") or USAGE_WITHOUT_PAGE_CACHE
        if mem not in MEMORY_POLICIES:
            raise ConfigError(
                f"{mem!r} is not one of {', '.join(MEMORY_POLICIES)}", field=f"{where}.nodeMemoryCollectPolicy", source=source
            )
        try:  # then the NodeMetric CRD's own schema: a misspelt key is refused, not left at its default
            crdschema.validate({"metricCollectPolicy": raw}, NODEMETRIC_CRD, ("spec",))
        except ConfigError as exc:
            raise ConfigError(exc.message, field=exc.field, source=source) from None
        return cls(agg, rep, durations, str(mem))

    def to_spec(self) -> dict[str, Any]:
        """The ``spec`` written when the agent creates a missing NodeMetric."""
        return {
            "metricCollectPolicy": {
                "aggregateDurationSeconds": self.aggregate_duration_seconds,
                "reportIntervalSeconds": self.report_interval_seconds,
                "nodeAggregatePolicy": {"durations": [format_duration(d) for d in self.durations]},
                "nodeMemoryCollectPolicy": self.node_memory_collect_policy,
            }
        }


def _positive_int(raw: Any, default: int, field_name: str, source: str) -> int:
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int) or raw <= 0:
        raise ConfigError(f"expected a positive integer, got {raw!r}", field=field_name, source=source)
    return raw


def _durations(raw: Any, field_name: str, source: str) -> tuple[float, ...]:
    if not isinstance(raw, list):
        raise ConfigError("expected a list of durations", field=field_name, source=source)
    out: list[float] = []
    for i, d in enumerate(raw):
        try:
            seconds = parse_duration(d, field=f"{field_name}[{i}]")
        except ValueError as exc:
            raise ConfigError(str(exc).split(": ", 1)[-1], field=f"{field_name}[{i}]", source=source) from None
        if seconds <= 0:
            raise ConfigError("must be positive", field=f"{field_name}[{i}]", source=source)
        if seconds > MAX_WINDOW_SECONDS:
            raise ConfigError(f"must be at most 12h (the longest history kept), got {d!r}", field=f"{field_name}[{i}]",
                              source=source)
        if seconds not in out:
            out.append(seconds)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class PodMeta:
    """Who a pod is, for ``podsMetric``: identity plus Koordinator's priority class and QoS."""

    namespace: str
    name: str
    uid: str
    priority: str = ""
    qos: str = ""

    @classmethod
    def from_pod(cls, pod: Mapping[str, Any]) -> PodMeta:
        meta = pod.get("metadata") or {}
        return cls(
            namespace=str(meta.get("namespace", "default") or "default"),
            name=str(meta.get("name", "")),
            uid=str(meta.get("uid", "")),
            priority=pod_priority_class(pod).value,
            qos=koord_qos(pod),
        )


@dataclass(frozen=True, slots=True)
class PodUsage:
    """One pod at one tick; ``None`` means "no sample" (e.g. the first CPU reading only primes)."""

    cpu_cores: float | None = None
    memory_bytes: float | None = None
    memory_with_page_cache_bytes: float | None = None


_NO_PODS: Mapping[str, PodUsage] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class UsageSample:
    """One collect tick: node usage and every pod's usage by UID."""

    node_cpu_cores: float | None = None
    node_memory_bytes: float | None = None
    node_memory_with_page_cache_bytes: float | None = None
    pods: Mapping[str, PodUsage] = field(default_factory=lambda: _NO_PODS)


def _pod_memory(usage: PodUsage, with_cache: bool) -> float | None:
    """The memory sample a pod contributes: with page cache only under usageWithPageCache, if measured."""
    mem = usage.memory_with_page_cache_bytes if with_cache else usage.memory_bytes
    return usage.memory_bytes if mem is None else mem


class UsageStore:
    """Node history sized from the longest window, pod history sized from the averaging window.

    Pods only ever need ``aggregateDurationSeconds`` of history, so keeping them apart keeps memory
    at ``pods × window`` instead of ``pods × longest window``.  System usage (node minus pods,
    clamped at zero, as koordlet's sysresource collector) is derived at record time.
    """

    def __init__(self, policy: MetricCollectPolicy, interval_seconds: float) -> None:
        self.policy = policy
        self.node = History(policy.node_retention_seconds, interval_seconds)
        self.pods = History(float(policy.window_seconds), interval_seconds)
        self._last_prune = -math.inf
        self._pod_names: dict[str, tuple[str, str]] = {}
        # The rings the common ticks append to, each kept while its history's generation stays the same: a
        # pod's (cpu, memory) rings once both exist, and the node's (cpu, system cpu, memory, system memory).
        self._pod_rings: dict[str, tuple[Ring, Ring]] = {}
        self._pod_rings_generation = self.pods.generation
        self._node_rings: tuple[Ring, Ring, Ring, Ring] | None = None
        self._node_rings_generation = self.node.generation

    def set_policy(self, policy: MetricCollectPolicy) -> None:
        if policy == self.policy:
            return
        self.policy = policy
        self.node.set_retention(policy.node_retention_seconds)
        self.pods.set_retention(float(policy.window_seconds))

    def set_interval(self, interval_seconds: float) -> None:
        """A new collect interval: the rings are resized to hold the same windows at the new rate."""
        self.node.set_interval(interval_seconds)
        self.pods.set_interval(interval_seconds)

    @property
    def nbytes(self) -> int:
        return self.node.nbytes + self.pods.nbytes

    def pod_series_names(self, uid: str) -> tuple[str, str]:
        """``(pod_series(uid, "cpu"), pod_series(uid, "memory"))``, built once per pod and window."""
        names = self._pod_names.get(uid)
        if names is None:
            names = self._pod_names[uid] = (pod_series(uid, "cpu"), pod_series(uid, "memory"))
        return names

    def record(self, t: float, sample: UsageSample) -> None:
        with_cache = self.policy.node_memory_collect_policy == USAGE_WITH_PAGE_CACHE
        pod_cpu, pod_mem = self._record_pods(
            t, [(uid, usage.cpu_cores, _pod_memory(usage, with_cache)) for uid, usage in sample.pods.items()]
        )
        self._record_node(
            t, sample.node_cpu_cores, sample.node_memory_bytes, sample.node_memory_with_page_cache_bytes, pod_cpu, pod_mem
        )

    def record_usage(
        self, t: float, node_cpu_cores: float, node_memory_bytes: float, pods: Iterable[tuple[str, float, float]]
    ) -> None:
        """``record(t, UsageSample(node_cpu_cores, node_memory_bytes, pods={uid: PodUsage(cpu, memory)}))``
        without building the sample (the simulator's path); ``pods`` are ``(uid, cpu cores, memory bytes)``
        with no UID twice."""
        pod_cpu, pod_mem = self._record_pods(t, pods)
        self._record_node(t, node_cpu_cores, node_memory_bytes, None, pod_cpu, pod_mem)

    def _record_pods(self, t: float, pods: Iterable[tuple[str, float | None, float | None]]) -> tuple[float, float]:
        """Append every pod's samples; returns the summed pod cpu and memory (for system usage)."""
        t = float(t)
        history = self.pods
        rings = self._kept_pod_rings()
        pod_cpu = 0.0
        pod_mem = 0.0
        for uid, cpu, mem in pods:
            pair = rings.get(uid)
            if pair is None or cpu is None or mem is None:
                cpu_series, memory_series = self.pod_series_names(uid)
                if cpu is not None:
                    history.ring_for(cpu_series).append(t, cpu)
                    pod_cpu += cpu
                if mem is not None:
                    history.ring_for(memory_series).append(t, mem)
                    pod_mem += mem
                if pair is None and cpu_series in history and memory_series in history:
                    rings[uid] = (history.ring_for(cpu_series), history.ring_for(memory_series))
                continue
            pair[0].append(t, cpu)
            pair[1].append(t, mem)
            pod_cpu += cpu
            pod_mem += mem
        return pod_cpu, pod_mem

    def _kept_pod_rings(self) -> dict[str, tuple[Ring, Ring]]:
        """The kept (cpu, memory) rings by pod UID; emptied first if the pod history's rings changed since."""
        if self.pods.generation != self._pod_rings_generation:
            self._pod_rings.clear()
            self._pod_rings_generation = self.pods.generation
        return self._pod_rings

    def _kept_node_rings(self) -> tuple[Ring, Ring, Ring, Ring] | None:
        """The kept (cpu, system cpu, memory, system memory) rings of the node, if they are still the history's."""
        return self._node_rings if self._node_rings_generation == self.node.generation else None

    def _record_node(
        self,
        t: float,
        node_cpu: float | None,
        node_memory: float | None,
        node_memory_with_cache: float | None,
        pod_cpu: float,
        pod_mem: float,
    ) -> None:
        history = self.node
        if node_cpu is not None and node_memory is not None and node_memory_with_cache is None:
            # The usual tick: the four series below, in the order the general path appends (and creates) them.
            rings = self._kept_node_rings()
            if rings is None:
                ring_for = history.ring_for
                rings = self._node_rings = (
                    ring_for(NODE_CPU), ring_for(SYSTEM_CPU), ring_for(NODE_MEMORY), ring_for(SYSTEM_MEMORY)
                )
                self._node_rings_generation = history.generation
            t = float(t)
            system = node_cpu - pod_cpu
            rings[0].append(t, node_cpu)
            rings[1].append(t, system if system > 0.0 else 0.0)  # max(0.0, system)
            rings[2].append(t, node_memory)
            system = node_memory - pod_mem
            rings[3].append(t, system if system > 0.0 else 0.0)
        else:
            samples: list[tuple[str, float]] = []
            if node_cpu is not None:
                system = node_cpu - pod_cpu
                samples += ((NODE_CPU, node_cpu), (SYSTEM_CPU, system if system > 0.0 else 0.0))
            if node_memory is not None:
                samples.append((NODE_MEMORY, node_memory))
            if node_memory_with_cache is not None:
                samples.append((NODE_MEMORY_WITH_PAGE_CACHE, node_memory_with_cache))
            node_mem = node_memory
            if node_memory_with_cache is not None and self.policy.node_memory_collect_policy == USAGE_WITH_PAGE_CACHE:
                node_mem = node_memory_with_cache
            if node_mem is not None:
                system = node_mem - pod_mem
                samples.append((SYSTEM_MEMORY, system if system > 0.0 else 0.0))
            history.extend(t, samples)
        # Pods that went away: their series age out once older than the window (checked once per window).
        if t - self._last_prune >= self.pods.retention_seconds:
            if self.pods.prune(t - self.pods.retention_seconds):
                self._pod_rings.clear()   # while no series went, the kept rings are all still the history's
            self._pod_names.clear()
            self._last_prune = t

    def node_memory_series(self) -> str:
        """The memory series the policy reports: page cache included only under usageWithPageCache.

        ``usageWithHotPageCache`` needs cold-page collection, which this agent does not run, so it
        falls back to the default, as koordlet does.
        """
        if self.policy.node_memory_collect_policy == USAGE_WITH_PAGE_CACHE and NODE_MEMORY_WITH_PAGE_CACHE in self.node:
            return NODE_MEMORY_WITH_PAGE_CACHE
        return NODE_MEMORY


Reported = tuple[dict[str, str], dict[str, int]]  # a resources map's texts and what they parse back to


def resource_map(cpu_cores: float | None, memory_bytes: float | None) -> dict[str, Any]:
    """A ResourceMap (``{"resources": {...}}``): cpu as truncated millis, memory as truncated bytes."""
    return {"resources": reported_quantities(cpu_cores, memory_bytes)[0]}


def reported_quantities(cpu_cores: float | None, memory_bytes: float | None) -> Reported:
    """The ``resources`` of :func:`resource_map` and what parsing them gives (the same truncated numbers, zeros
    left out, within a quantity's bounds), both from one truncation: a typed reader takes the second as is."""
    texts: dict[str, str] = {}
    usage: dict[str, int] = {}
    if cpu_cores is not None:
        millis = int(cpu_cores * 1000)
        texts[CPU] = f"{millis}m" if millis % 1000 else format_milli(millis)
        if millis:
            usage[CPU] = millis if -MAX_QUANTITY <= millis <= MAX_QUANTITY else cap_quantity(millis)
    if memory_bytes is not None:
        n = int(memory_bytes)
        texts[MEMORY] = str(n) if n % 1024 else format_bytes(n)
        if n:
            usage[MEMORY] = n if -MAX_QUANTITY <= n <= MAX_QUANTITY else cap_quantity(n)
    return texts, usage


_POD_ORDER = attrgetter("namespace", "name")  # podsMetric is sorted by namespace, then name
_duration_text = lru_cache(maxsize=64)(format_duration)
_time_text = lru_cache(maxsize=64)(to_rfc3339)  # called with whole seconds: the text only has seconds


def _aggregated(
    history: History, now: float, durations: Sequence[float], node: tuple[str, str], system: tuple[str, str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``aggregatedNodeUsages`` and ``aggregatedSystemUsages``: avg and percentiles of each (cpu, memory) pair
    of series over each duration; a duration cold on the pair's cpu series has an empty ``usage``.

    The windows are summed and sorted in a few batched calls (:func:`agent.aggregate.summaries`).
    """
    if not durations:
        return [], []
    lengths = [float(d) for d in durations]
    starts = [now - d for d in lengths]
    pairs = [(SeriesWindows(history, cpu, now, starts), SeriesWindows(history, mem, now, starts)) for cpu, mem in (node, system)]
    warm = [[cpu.span(i) >= COLD_START_FRACTION * d for i, d in enumerate(lengths)] for cpu, _ in pairs]
    windows: list[FloatArray] = []
    for i in range(len(lengths)):
        for (cpu, mem), ok in zip(pairs, warm, strict=True):
            if ok[i]:
                windows += (cpu.window(i), mem.window(i))
    stats = iter(summaries(windows))
    out: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
    for i, d in enumerate(durations):
        for usages, ok in zip(out, warm, strict=True):
            usage: dict[str, Any] = {}
            if ok[i]:
                c = next(stats)
                m = next(stats)
                if c is not None or m is not None:
                    for k, agg in enumerate(AGGREGATIONS):
                        usage[agg] = resource_map(c[k] if c is not None else None, m[k] if m is not None else None)
            usages.append({"duration": _duration_text(d), "usage": usage})
    return out


def report_rings(store: UsageStore, metas: Sequence[PodMeta]) -> list[Ring | None]:
    """The rings a report averages, in its order: the node's cpu and memory, the system's cpu and memory, then each
    pod's cpu and memory (``metas`` in the report's order).  The rings the store keeps for its writes when it has
    them, else looked up by series name (the same rings)."""
    node_memory = store.node_memory_series()
    node_rings = store._kept_node_rings() if node_memory == NODE_MEMORY else None
    rings: list[Ring | None]
    if node_rings is not None:
        node_cpu, system_cpu, node_mem, system_mem = node_rings
        rings = [node_cpu, node_mem, system_cpu, system_mem]
    else:
        node_ring = store.node.ring
        rings = [node_ring(NODE_CPU), node_ring(node_memory), node_ring(SYSTEM_CPU), node_ring(SYSTEM_MEMORY)]
    kept = store._kept_pod_rings()
    pod_ring = store.pods.ring
    for meta in metas:
        pair = kept.get(meta.uid)
        if pair is None:
            cpu_series, memory_series = store.pod_series_names(meta.uid)
            rings += (pod_ring(cpu_series), pod_ring(memory_series))
        else:
            rings += pair
    return rings


def build_nodemetric_status(
    store: UsageStore, now: float, policy: MetricCollectPolicy, pods: Iterable[PodMeta], *, typed: bool = False
) -> dict[str, Any]:
    """The NodeMetric ``status`` at ``now`` from the recorded history (docs/design/nodemetric.md §4).

    The samples of every averaging window (node, system and each pod's cpu and memory) are copied from their
    rings into one buffer and averaged in one batch (:func:`agent.aggregate.row_means`).  ``typed``: the
    ``podsMetric`` list is a :class:`common.objects.PodsMetric` carrying what each entry parses back to (its views
    made when first read) and the node's usage, for a reader in the same process (the simulator's scheduler), which
    then need not parse them back.
    """
    metas = sorted(pods, key=_POD_ORDER)
    values: array[float] = array("d")
    start = now - float(policy.window_seconds)
    averages = row_means(values, gather_windows(report_rings(store, metas), start, now, values))
    pairs = [
        None if cpu is None and mem is None else reported_quantities(cpu, mem)
        for cpu, mem in zip(averages[0::2], averages[1::2], strict=True)
    ]
    return assemble_status(store, now, policy, metas, pairs, typed=typed)


def assemble_status(
    store: UsageStore, now: float, policy: MetricCollectPolicy, metas: Sequence[PodMeta],
    pairs: Sequence[Reported | None], *, typed: bool = False
) -> dict[str, Any]:
    """The status of :func:`build_nodemetric_status` from its window averages, already reported: ``pairs`` holds
    the (texts, parsed) of each (cpu, memory) pair of :func:`report_rings` (node, system, then each pod of
    ``metas``, in that order), ``None`` for a pair with no sample in the window."""
    node_memory = store.node_memory_series()
    aggregated = _aggregated(store.node, now, policy.durations, (NODE_CPU, node_memory), (SYSTEM_CPU, SYSTEM_MEMORY))
    return status_of(now, metas, pairs, aggregated, typed=typed)


def status_of(
    now: float, metas: Sequence[PodMeta], pairs: Sequence[Reported | None],
    aggregated: tuple[list[dict[str, Any]], list[dict[str, Any]]], *, typed: bool = False
) -> dict[str, Any]:
    """The status :func:`assemble_status` makes, its ``aggregatedNodeUsages`` and ``aggregatedSystemUsages`` given
    (fresh lists: the status keeps them), for a writer that averaged the windows without a store."""
    aggregated_node, aggregated_system = aggregated
    node_texts, node_usage = pairs[0] or ({}, {})
    node_metric: dict[str, Any] = {
        "nodeUsage": {"resources": node_texts},
        "aggregatedNodeUsages": aggregated_node,
        "systemUsage": {"resources": (pairs[1] or ({}, {}))[0]},
        "aggregatedSystemUsages": aggregated_system,
    }
    pods_metric: list[dict[str, Any]] = []
    reported_metas: list[PodMeta] = []
    usages: list[dict[str, int]] = []
    for meta, pair in zip(metas, pairs[2:], strict=True):
        if pair is None:
            continue
        texts, usage = pair
        pods_metric.append(
            {
                "namespace": meta.namespace,
                "name": meta.name,
                "podUsage": {"resources": texts},
                "priority": meta.priority,
                "qos": meta.qos,
            }
        )
        reported_metas.append(meta)
        usages.append(usage)
    reported = pods_metric
    if typed:
        reported = PodsMetric(pods_metric, ReportedPods(reported_metas, usages), (node_texts, node_usage))
    return {"updateTime": _time_text(int(now)), "nodeMetric": node_metric, "podsMetric": reported}


def nodemetric_object(node_name: str, policy: MetricCollectPolicy, status: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A whole NodeMetric (what ``/nodemetric`` shows, and the body used to create a missing one)."""
    info = kind_info("NodeMetric")
    obj: dict[str, Any] = {
        "apiVersion": info.api_version,
        "kind": "NodeMetric",
        "metadata": {"name": node_name},
        "spec": policy.to_spec(),
    }
    if status is not None:
        obj["status"] = dict(status)
    return obj
