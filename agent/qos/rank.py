"""Candidate pods and their order (docs/design/waterline.md §4, §5).

Candidates come only from ``podQOS`` entries whose ``allowedActions`` names the action; there is no
implicit BestEffort filter.  The order is crane's comparator chain, applied as one stable sort key:
elastic-resource users first, then lower priority, then lower QoS class, then higher usage of the
metric, then the lower elastic usage ratio, then pods without a start time, then the newest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fractions import Fraction

from agent.qos.state import PodState
from common.qos import QOS_RANK
from common.resources import Resources
from common.waterline import WaterlinePolicy

__all__ = [
    "ELASTIC_CPU_PREFIX",
    "ELASTIC_MEMORY_PREFIX",
    "elastic_cpu",
    "elastic_memory",
    "pod_allowed",
    "cpu_sort_key",
    "memory_sort_key",
    "general_sort_key",
    "sorter_for",
    "rank",
]

ELASTIC_CPU_PREFIX = "gocrane.io/cpu"
ELASTIC_MEMORY_PREFIX = "gocrane.io/memory"

SortKey = Callable[[PodState], tuple[object, ...]]
_NO_RATIO = Fraction(0)  # the elastic ratio of a pod without elastic resources: made once, not per pod and tick


def _elastic(limits: Resources, prefix: str) -> int:
    return sum(v for k, v in limits.items() if k.startswith(prefix))


def elastic_cpu(pod: PodState) -> int:
    """Summed ``gocrane.io/cpu*`` limits; only non-zero-ness and ratios matter, never the unit."""
    return _elastic(pod.limits, ELASTIC_CPU_PREFIX)


def elastic_memory(pod: PodState) -> int:
    return _elastic(pod.limits, ELASTIC_MEMORY_PREFIX)


def pod_allowed(policy: WaterlinePolicy, action_name: str, pod: PodState) -> bool:
    """Some podQOS of the policy matches the pod and lists the action by name."""
    return any(
        q.allows(action_name) and q.matches(pod.namespace, pod.labels, pod.qos_class, pod.priority)
        for q in policy.pod_qos
    )


def _running_time(pod: PodState) -> tuple[int, float]:
    # no start time first, then the newest start (the longest-running pod is protected)
    return (0, 0.0) if pod.start_time is None else (1, -pod.start_time)


def _class(pod: PodState) -> tuple[int, int]:
    return (pod.priority, QOS_RANK.get(pod.qos_class, -1))


def cpu_sort_key(pod: PodState) -> tuple[object, ...]:
    """UseElasticCPU -> Priority -> QoSClass -> CPUUsage (higher first) -> ElasticCPU ratio -> RunningTime."""
    elastic = elastic_cpu(pod)
    ratio = Fraction(pod.cpu_usage_milli, elastic) if elastic else _NO_RATIO
    return (0 if elastic else 1, *_class(pod), -pod.cpu_usage_milli, ratio, *_running_time(pod))


def memory_sort_key(pod: PodState) -> tuple[object, ...]:
    """UseElasticMem -> Priority -> QoSClass -> MemUsage (higher first) -> ElasticMem ratio -> RunningTime."""
    elastic = elastic_memory(pod)
    ratio = Fraction(pod.memory_usage_bytes, elastic) if elastic else _NO_RATIO
    return (0 if elastic else 1, *_class(pod), -pod.memory_usage_bytes, ratio, *_running_time(pod))


def general_sort_key(pod: PodState) -> tuple[object, ...]:
    """Priority -> QoSClass -> RunningTime, for a metric without a sorter of its own."""
    return (*_class(pod), *_running_time(pod))


_SORTERS: dict[str, SortKey] = {
    "cpu_total_usage": cpu_sort_key,
    "cpu_total_utilization": cpu_sort_key,
    "memory_total_usage": memory_sort_key,
    "memory_total_utilization": memory_sort_key,
}


def sorter_for(metric: str) -> SortKey:
    return _SORTERS.get(metric, general_sort_key)


def rank(pods: Iterable[PodState], metric: str) -> list[PodState]:
    """Stable sort with the metric's comparator chain: full ties keep the input order."""
    return sorted(pods, key=sorter_for(metric))
