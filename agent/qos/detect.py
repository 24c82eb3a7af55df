"""Detection: per rule, consecutive samples over / under the waterline (docs/design/waterline.md §3).

A rule triggers after ``avoidanceThreshold`` consecutive samples strictly above its waterline and stays
*active* until ``restoreThreshold`` consecutive samples at or below it, when it restores once.  A tick on
which the rule's metric (or any series its selector picks) is missing leaves the counters untouched: a
gap in collection must neither trigger nor restore anything.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType

from agent.qos.state import NodeState
from common.waterline import Rule, WaterlinePolicy

__all__ = ["Status", "RuleCounters", "RuleResult", "Detector", "series", "to_fraction", "above"]

_SERIES_KEY = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)\{(.*)\}$")
_LABEL = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


class Status(enum.StrEnum):
    NONE = "none"
    TRIGGERED = "triggered"
    RESTORED = "restored"
    ERROR = "error"


@dataclass(slots=True)
class RuleCounters:
    """Mutable per-rule memory, kept across ticks by the detector."""

    over: int = 0
    under: int = 0
    active: bool = False
    last_event: str = ""  # "trigger" | "restore": RestoreTriggered is only sent after a trigger


@dataclass(frozen=True, slots=True)
class RuleResult:
    """What one rule concluded this tick."""

    key: str
    policy: WaterlinePolicy
    rule: Rule
    status: Status
    active: bool
    value: float | None = None  # the highest selected sample, for events and logs
    error: str = ""
    labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def triggered(self) -> bool:
        return self.status is Status.TRIGGERED

    @property
    def restored(self) -> bool:
        return self.status is Status.RESTORED


def to_fraction(value: float | int) -> Fraction:
    """A sample as an exact decimal: 81.2 is 406/5, not the nearest binary double."""
    if isinstance(value, int):
        return Fraction(value)
    return Fraction(repr(float(value)))


def above(value: float | int, line: Fraction) -> bool:
    """``to_fraction(value) > line``, decided on the doubles unless they are equal.

    ``float(value)`` and ``float(line)`` are those exact numbers correctly rounded, and rounding is monotonic:
    when the doubles differ, the exact numbers are in the same order.  Only equal doubles need the exact
    comparison (81.2 against 406/5, or integers beyond 2**53).  A NaN sample is never above and an infinite
    one is above any line, as the float comparison in crane's Go code decides.
    """
    f, g = float(value), float(line)
    if f != g:
        return f > g
    return to_fraction(value) > line


def _parse_series_key(key: str) -> tuple[str, dict[str, str]] | None:
    if "{" not in key:  # a plain metric name (most keys, every tick): the pattern needs a brace
        return None
    m = _SERIES_KEY.match(key)
    if m is None:
        return None
    labels = {lm.group(1): lm.group(2).replace('\\"', '"').replace("\\\\", "\\") for lm in _LABEL.finditer(m.group(2))}
    return m.group(1), labels


def series(state: NodeState, name: str) -> list[tuple[Mapping[str, str], float]]:
    """All samples of one metric this tick, with their series labels.

    Node metrics come from ``state.metrics()`` (labelled ones keyed ``name{l="v"}``).  The per-container
    cadvisor metrics are derived from the pod list when the state does not carry them explicitly, with
    crane's labels (``PodName``, ``PodNamespace``, ``PodUid``, ``ContainerName``, ``ContainerId``); the
    pod-cgroup series has empty container labels.
    """
    metrics = state.metrics()
    out: list[tuple[Mapping[str, str], float]] = []
    if name in metrics:
        out.append(({}, metrics[name]))
    for key, value in metrics.items():
        parsed = _parse_series_key(key)
        if parsed is not None and parsed[0] == name:
            out.append((parsed[1], value))
    if out:
        return out
    if name in _POD_DERIVED:
        return _pod_series(state, name)
    return out


_POD_DERIVED = frozenset({"container_cpu_total_usage", "container_mem_total_usage", "container_cpu_quota",
                          "container_cpu_period"})


def _pod_series(state: NodeState, name: str) -> list[tuple[Mapping[str, str], float]]:
    out: list[tuple[Mapping[str, str], float]] = []
    for pod in state.pods:
        base = {"PodName": pod.name, "PodNamespace": pod.namespace, "PodUid": pod.uid}
        if name == "container_mem_total_usage":
            if pod.memory_usage_bytes:
                out.append(({**base, "ContainerName": "", "ContainerId": ""}, float(pod.memory_usage_bytes)))
            continue
        if name == "container_cpu_total_usage" and pod.cpu_usage_milli:
            out.append(({**base, "ContainerName": "", "ContainerId": ""}, pod.cpu_usage_milli / 1000))
        for c in pod.containers:
            if not c.has_usage_sample:
                continue  # cadvisor publishes nothing for a container whose counter did not move
            labels = {**base, "ContainerName": c.name, "ContainerId": ""}
            if name == "container_cpu_total_usage":
                out.append((labels, c.cpu_usage_milli / 1000))
            elif name == "container_cpu_quota":
                out.append((labels, float(c.cpu_quota_us)))
            else:
                out.append((labels, float(c.cpu_period_us)))
    return out


class Detector:
    """Consecutive-sample counters per rule key, kept across ticks."""

    def __init__(self) -> None:
        self._counters: dict[str, RuleCounters] = {}

    def counters(self, key: str) -> RuleCounters:
        return self._counters.setdefault(key, RuleCounters())

    def active_keys(self) -> set[str]:
        return {k for k, c in self._counters.items() if c.active}

    def forget_except(self, keys: Iterable[str]) -> None:
        """Drop the memory of rules that no longer exist (a removed policy or rule starts afresh)."""
        keep = set(keys)
        for k in list(self._counters):
            if k not in keep:
                del self._counters[k]

    def evaluate(self, policy: WaterlinePolicy, rule: Rule, state: NodeState) -> RuleResult:
        key = policy.rule_key(rule)
        c = self.counters(key)
        samples = [(labels, v) for labels, v in series(state, rule.metric.name) if rule.metric.selector.matches(labels)]
        if not samples:
            why = "metric not found" if not series(state, rule.metric.name) else "selector matches no series"
            return RuleResult(key, policy, rule, Status.ERROR, c.active, error=f"{rule.metric.name}: {why}")
        top_labels, top = max(samples, key=lambda s: s[1])
        line = rule.metric.value
        over = any(above(v, line) for _, v in samples)
        status = Status.NONE
        if over:
            c.under = 0
            c.over = min(c.over + 1, rule.avoidance_threshold)
            if c.over >= rule.avoidance_threshold:
                c.active = True
                status = Status.TRIGGERED
        else:
            c.over = 0
            if c.active:
                c.under += 1
                if c.under >= rule.restore_threshold:
                    c.active = False
                    c.under = 0
                    status = Status.RESTORED
        return RuleResult(key, policy, rule, status, c.active, value=top, labels=MappingProxyType(dict(top_labels)))
