"""Values the planner exchanges with its callers: actuation results, decision records, engine memory.

Kept apart from the planning logic so adapters (``actuate``) and reports (``runtime``) depend on these
small types only.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Protocol

from agent.qos.state import ContainerState, NodeState, PodState

__all__ = [
    "Outcome",
    "ActResult",
    "Actuators",
    "EvictionRateLimit",
    "ThrottleMemo",
    "EngineMemory",
    "ContainerQuota",
    "ActionRecord",
    "SkipRecord",
    "PlanResult",
]


class Outcome(enum.StrEnum):
    ACCEPTED = "accepted"
    REFUSED = "refused"  # e.g. 429 from a PodDisruptionBudget
    GONE = "gone"  # the pod (or cgroup) no longer exists
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class ActResult:
    outcome: Outcome
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.ACCEPTED


class Actuators(Protocol):
    def evict(self, pod: PodState, grace_period_seconds: int) -> ActResult: ...

    def set_cpu_quota(self, pod: PodState, container: ContainerState, quota_us: int, period_us: int) -> ActResult: ...


@dataclass(frozen=True, slots=True)
class EvictionRateLimit:
    """At most ``max_evictions`` accepted evictions per node in any ``per_seconds`` window."""

    max_evictions: int = 1
    per_seconds: float = 10.0

    def allows(self, history: deque[float], now: float) -> bool:
        while history and history[0] <= now - self.per_seconds:
            history.popleft()
        return len(history) < self.max_evictions


@dataclass(slots=True)
class ThrottleMemo:
    """What the engine remembers about one container it throttled, to restore it and to replay offline."""

    uid: str
    original_quota_us: int
    raw_quota_us: int  # the quota the snapshot itself showed when we last wrote
    written_quota_us: int
    step_ratio: int
    min_ratio: int


@dataclass(slots=True)
class EngineMemory:
    throttled: dict[tuple[str, str], ThrottleMemo] = field(default_factory=dict)
    evicted: dict[str, str] = field(default_factory=dict)  # pod key -> uid, until the pod leaves the node
    eviction_times: deque[float] = field(default_factory=deque)
    raw_quota: dict[tuple[str, str], int] = field(default_factory=dict)

    def overlay(self, state: NodeState) -> NodeState:
        """Show our last write where the snapshot still shows the value from before it.

        A live snapshot re-reads the cgroup and already shows the write; a replayed state file does not,
        and without this each replayed tick would step from the file's quota again.
        """
        self.raw_quota = {(p.key, c.name): c.cpu_quota_us for p in state.pods for c in p.containers}
        if not self.throttled:
            return state
        pods: list[PodState] = []
        shown = False
        for p in state.pods:
            containers: list[ContainerState] = []
            changed = False
            for c in p.containers:
                memo = self.throttled.get((p.key, c.name))
                if memo is not None and memo.uid == p.uid and c.cpu_quota_us == memo.raw_quota_us:
                    c = replace(c, cpu_quota_us=memo.written_quota_us)
                    changed = True
                containers.append(c)
            pods.append(replace(p, containers=tuple(containers)) if changed else p)
            shown |= changed
        return replace(state, pods=tuple(pods)) if shown else state

    def prune(self, state: NodeState) -> None:
        present = {p.key: p.uid for p in state.pods}
        for key, uid in list(self.evicted.items()):
            if present.get(key, None) != uid:
                del self.evicted[key]
        containers = {(p.key, c.name): p.uid for p in state.pods for c in p.containers}
        for ck, memo in list(self.throttled.items()):
            if containers.get(ck) != memo.uid:
                del self.throttled[ck]


@dataclass(frozen=True, slots=True)
class ContainerQuota:
    """One container's CFS quota change inside a pod's throttle action.

    ``gap_share`` is the part of the node's distance to the settling target given to this container
    (millicores, split by the containers' CPU usage); ``None`` when the step had no gap to share (a
    pressure rule, a missing usage metric, or a jump back to the original quota).
    """

    name: str
    previous_quota_us: int
    quota_us: int
    period_us: int
    released_milli: Fraction
    gap_share_milli: Fraction | None = None

    def to_json(self) -> dict[str, Any]:
        share = None if self.gap_share_milli is None else _number(self.gap_share_milli)
        return {"name": self.name, "previousCpuQuota": self.previous_quota_us, "cpuQuota": self.quota_us,
                "cpuPeriod": self.period_us, "gapShare": share, "released": _number(self.released_milli)}

    def describe(self) -> str:
        """``main -1 -> 225000/100000us (gap share 250m)``: the change as events and ``qos-plan`` print it."""
        text = f"{self.name} {self.previous_quota_us} -> {self.quota_us}/{self.period_us}us"
        if self.gap_share_milli is None:
            return text
        return f"{text} (gap share {_number(self.gap_share_milli)}m)"


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """One pod-level decision: an eviction, or a throttle step carrying each container's quota change.

    A throttle is one action per pod however many containers it has (one event, one count); the cgroup
    writes behind it stay per container, and only the accepted ones are listed in ``containers``.
    """

    pod: str
    action: str  # evict | throttle
    rules: tuple[str, ...]
    released: dict[str, Fraction]
    grace_period_seconds: int | None = None
    direction: str = ""  # down | up (throttle)
    containers: tuple[ContainerQuota, ...] = ()

    def to_json(self) -> dict[str, Any]:
        released = {k: _number(v) for k, v in sorted(self.released.items())}
        if self.action == "evict":
            return {"pod": self.pod, "action": "evict", "gracePeriodSeconds": self.grace_period_seconds,
                    "released": released, "rules": list(self.rules)}
        return {"pod": self.pod, "action": "throttle", "direction": self.direction,
                "containers": [c.to_json() for c in self.containers], "released": released, "rules": list(self.rules)}

    def decision(self) -> tuple[str, str, str, tuple[tuple[str, int], ...]]:
        """What identifies the decision across ticks: the pod, the action and the quotas it writes."""
        return self.pod, self.action, self.direction, tuple((c.name, c.quota_us) for c in self.containers)


@dataclass(frozen=True, slots=True)
class SkipRecord:
    pod: str
    action: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"pod": self.pod, "action": self.action, "reason": self.reason}


@dataclass(slots=True)
class PlanResult:
    order: list[str] | None = None
    actions: list[ActionRecord] = field(default_factory=list)
    skipped: list[SkipRecord] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    evictions_refused: int = 0
    evictions_rate_limited: int = 0


def _number(v: Fraction) -> int | float:
    return int(v) if v.denominator == 1 else round(float(v), 3)
