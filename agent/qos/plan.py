"""The waterline planner: merge fired rules, compute gaps, pick pods, and act only until the gap closes.

This is crane's executor (docs/design/waterline.md §4–§6) as a pure function of the rule results, the
node snapshot, the engine's memory and an injected :class:`Actuators`.  Actuation is injected rather than
returned because a gap closes only by what was *accepted*: an eviction refused by a PodDisruptionBudget
releases nothing, so the next pod in the order must be tried.  In dry-run and in ``qos-plan`` the
actuators record and accept; in the simulator they act on simulated pods; in the agent they write
cgroups and call the Eviction API.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from agent.qos.detect import RuleResult, to_fraction
from agent.qos.rank import pod_allowed, rank
from agent.qos.records import (
    ActionRecord,
    ActResult,
    Actuators,
    ContainerQuota,
    EngineMemory,
    EvictionRateLimit,
    Outcome,
    PlanResult,
    SkipRecord,
    ThrottleMemo,
)
from agent.qos.state import (
    CPU_TOTAL_USAGE,
    CPU_TOTAL_UTILIZATION,
    MEMORY_TOTAL_USAGE,
    MEMORY_TOTAL_UTILIZATION,
    ContainerState,
    NodeState,
    PodState,
)
from agent.qos.throttle import RESTORE_BELOW, SETTLE_TARGET, Step, restore_step, step_down, step_up
from common.waterline import PRESSURE_METRICS

__all__ = [
    "Outcome",
    "ActResult",
    "Actuators",
    "EvictionRateLimit",
    "ThrottleMemo",
    "EngineMemory",
    "ActionRecord",
    "ContainerQuota",
    "SkipRecord",
    "PlanResult",
    "Waterline",
    "EVICT_METRICS",
    "DEFAULT_GRACE_SECONDS",
    "gap_for",
    "in_metric_unit",
    "execute",
]

DEFAULT_GRACE_SECONDS = 30
# docs/design/waterline.md §2.2: the four metrics an action can quantify, all ActionPriority 5; ties go by name.
EVICT_METRICS: dict[str, int] = {
    CPU_TOTAL_USAGE: 5,
    CPU_TOTAL_UTILIZATION: 5,
    MEMORY_TOTAL_USAGE: 5,
    MEMORY_TOTAL_UTILIZATION: 5,
}


@dataclass(slots=True)
class Waterline:
    """The smallest waterline among the fired rules on one metric (docs/design/waterline.md §2.3), with its rule's excess."""

    value: Fraction
    excess: Fraction
    rules: list[str] = field(default_factory=list)

    def push(self, value: Fraction, excess: Fraction, rule: str) -> None:
        if value < self.value or (value == self.value and excess > self.excess):
            self.value, self.excess = value, excess
        self.rules.append(rule)


@dataclass(slots=True)
class _Candidate:
    pod: PodState
    rules: list[str]
    step_ratio: int = 0
    min_ratio: int = 0
    grace: int | None = None


@dataclass(slots=True)
class _Merged:
    evict: dict[str, _Candidate] = field(default_factory=dict)
    down: dict[str, _Candidate] = field(default_factory=dict)
    up: dict[str, _Candidate] = field(default_factory=dict)
    evict_wl: dict[str, Waterline] = field(default_factory=dict)
    down_wl: dict[str, Waterline] = field(default_factory=dict)
    up_wl: dict[str, Waterline] = field(default_factory=dict)


def _push(wls: dict[str, Waterline], r: RuleResult) -> None:
    metric = r.rule.metric.name
    if metric in wls:
        wls[metric].push(r.rule.metric.value, r.policy.execute_excess, r.key)
    else:
        wls[metric] = Waterline(r.rule.metric.value, r.policy.execute_excess, [r.key])


def _skip_reason(pod: PodState) -> str:
    if pod.critical:
        return "critical pod (static, mirror or system priority)"
    if pod.terminating:
        return "terminating"
    return f"phase {pod.phase}"


def _targets(r: RuleResult, m: _Merged) -> list[tuple[str, dict[str, _Candidate], dict[str, Waterline]]]:
    """The candidate lists a triggered or restored rule feeds: evict, throttle down or throttle up."""
    action = r.rule.action
    targets: list[tuple[str, dict[str, _Candidate], dict[str, Waterline]]] = []
    if action.eviction is not None and r.triggered:
        targets.append(("evict", m.evict, m.evict_wl))
    if action.throttle is not None:
        targets.append(("throttle", m.down, m.down_wl) if r.triggered else ("throttle", m.up, m.up_wl))
    return targets


def _join(c: _Candidate, r: RuleResult, kind: str) -> None:
    """Record that rule ``r`` selects candidate ``c``: throttle ratios take the max, grace periods the min."""
    action = r.rule.action
    if r.key not in c.rules:
        c.rules.append(r.key)
    if action.throttle is not None and kind == "throttle":
        c.step_ratio = max(c.step_ratio, action.throttle.cpu.step_cpu_ratio)
        c.min_ratio = max(c.min_ratio, action.throttle.cpu.min_cpu_ratio)
    if kind == "evict" and action.eviction is not None:
        g = action.eviction.termination_grace_period_seconds
        if g is not None:
            c.grace = g if c.grace is None else min(c.grace, g)


def _merge(results: Sequence[RuleResult], state: NodeState, memory: EngineMemory, out: PlanResult) -> _Merged:
    """docs/design/waterline.md §4: candidates per list without duplicates; throttle ratios max, grace period min."""
    m = _Merged()
    skipped: set[tuple[str, str]] = set()
    for r in results:
        if r.rule.preview or not (r.triggered or r.restored):
            continue
        for kind, cands, wls in _targets(r, m):
            _push(wls, r)
            for pod in state.pods:
                if not pod_allowed(r.policy, r.rule.action.name, pod):
                    continue
                if not pod.actionable:
                    if (pod.key, kind) not in skipped:
                        skipped.add((pod.key, kind))
                        out.skipped.append(SkipRecord(pod.key, kind, _skip_reason(pod)))
                    continue
                if memory.evicted.get(pod.key) == pod.uid:
                    continue  # evicted earlier and still listed: never count it twice
                c = cands.get(pod.key)
                if c is None:
                    c = cands[pod.key] = _Candidate(pod, [])
                _join(c, r, kind)
    return m


def gap_for(metric: str, wl: Waterline, state: NodeState, *, up: bool = False) -> Fraction | None:
    """(1 + excess)(used − waterline), or the head-room (waterline − used) for restore; percents converted.

    ``None`` when the metric, or the capacity a percent needs, is missing this tick.
    """
    used_raw = state.metrics().get(metric)
    if used_raw is None:
        return None
    used = to_fraction(used_raw)
    diff = (wl.value - used) if up else (used - wl.value)
    gap = (1 + wl.excess) * diff
    if metric == CPU_TOTAL_UTILIZATION:
        if not state.cpu_capacity_milli:
            return None
        gap = gap * state.cpu_capacity_milli / 100
    elif metric == MEMORY_TOTAL_UTILIZATION:
        if not state.memory_capacity_bytes:
            return None
        gap = gap * state.memory_capacity_bytes / 100
    return gap


def _release(metric: str, pod: PodState) -> Fraction:
    """What evicting ``pod`` takes off the node, in the gap's unit (millicores or bytes)."""
    if metric in (CPU_TOTAL_USAGE, CPU_TOTAL_UTILIZATION):
        return Fraction(pod.cpu_usage_milli)
    return Fraction(pod.memory_usage_bytes)


def in_metric_unit(metric: str, amount: Fraction, state: NodeState) -> Fraction:
    """A released amount (millicores or bytes) in the rule metric's own unit: percent points of the
    node's capacity for the utilisation metrics, unchanged otherwise (0 when the capacity is unknown)."""
    if metric == CPU_TOTAL_UTILIZATION:
        return amount * 100 / state.cpu_capacity_milli if state.cpu_capacity_milli else Fraction(0)
    if metric == MEMORY_TOTAL_UTILIZATION:
        return amount * 100 / state.memory_capacity_bytes if state.memory_capacity_bytes else Fraction(0)
    return amount


def _metric_order(metrics: Sequence[str]) -> list[str]:
    return sorted(metrics, key=lambda n: (-EVICT_METRICS.get(n, 0), n))


class _Run:
    """One tick's execution; the steps of docs/design/waterline.md §6 in order, sharing the tick's bookkeeping."""

    def __init__(self, state: NodeState, memory: EngineMemory, act: Actuators, limit: EvictionRateLimit) -> None:
        self.state = state
        self.memory = memory
        self.act = act
        self.limit = limit
        self.out = PlanResult()
        self.evicted_now: set[str] = set()
        self.tried_now: set[str] = set()
        self.rate_limited = False

    def _order(self, ranked: Sequence[PodState]) -> None:
        if self.out.order is None:
            self.out.order = [p.key for p in ranked]

    # -- eviction (docs/design/waterline.md §6.3) ----------------------------------------------------------------------
    def _evict_one(self, c: _Candidate, metric: str | None) -> Fraction | None:
        """Evict one pod; returns the credited release, or ``None`` if it was not accepted."""
        pod = c.pod
        if not self.limit.allows(self.memory.eviction_times, self.state.time):
            self.rate_limited = True
            self.out.evictions_rate_limited += 1
            self.out.skipped.append(SkipRecord(pod.key, "evict", "per-node eviction rate limit reached"))
            return None
        grace = c.grace if c.grace is not None else pod.termination_grace_period_seconds
        grace = DEFAULT_GRACE_SECONDS if grace is None else grace
        self.tried_now.add(pod.key)
        res = self.act.evict(pod, grace)
        if not res.ok:
            if res.outcome is Outcome.REFUSED:
                self.out.evictions_refused += 1
            self.out.skipped.append(SkipRecord(pod.key, "evict", f"{res.outcome.value}: {res.message}".rstrip(": ")))
            return None
        self.memory.eviction_times.append(self.state.time)
        self.memory.evicted[pod.key] = pod.uid
        self.evicted_now.add(pod.key)
        released = _release(metric, pod) if metric is not None else Fraction(0)
        shown = {metric: in_metric_unit(metric, released, self.state)} if metric else {}
        self.out.actions.append(ActionRecord(pod.key, "evict", tuple(c.rules), shown, grace_period_seconds=grace))
        return released

    def evict(self, cands: dict[str, _Candidate], wls: dict[str, Waterline]) -> None:
        """Evict by metric in priority order until each metric's gap closes (or the rate limit stops it)."""
        if not cands or not wls:
            return
        metrics = _metric_order(list(wls))
        if self._evict_unquantified(cands, metrics):
            return
        for metric in metrics:
            self._evict_for(metric, wls[metric], cands)
            if self.rate_limited:
                return

    def _evict_unquantified(self, cands: dict[str, _Candidate], metrics: list[str]) -> bool:
        """When a fired metric cannot be quantified (or its usage is missing), evict every candidate once.

        Returns whether that case applied (the gap-driven pass is then skipped).
        """
        unquantified = [n for n in metrics if n not in EVICT_METRICS]
        missing = [n for n in metrics if n in EVICT_METRICS and self.state.metrics().get(n) is None]
        if not unquantified and not missing:
            return False
        evictable = [n for n in metrics if n in EVICT_METRICS]
        if not evictable:
            self.out.notes.append(f"eviction on {', '.join(unquantified)} is not quantified: nothing evicted")
            return True
        why = f"not quantified: {', '.join(unquantified)}" if unquantified else f"usage missing: {', '.join(missing)}"
        self.out.notes.append(f"evicting every candidate ({why})")
        for c in cands.values():
            if self.rate_limited:
                break
            if c.pod.key not in self.tried_now:
                self._evict_one(c, evictable[0])
        return True

    def _evict_for(self, metric: str, wl: Waterline, cands: dict[str, _Candidate]) -> None:
        """Evict in rank order until this metric's gap is closed; pods tried earlier this tick earn no credit."""
        gap = gap_for(metric, wl, self.state)
        if gap is None:
            self.out.errors.append(f"evict: no gap for {metric} (capacity metric missing)")
            return
        ranked = rank([c.pod for c in cands.values()], metric)
        self._order(ranked)
        for c in [cands[p.key] for p in ranked if p.key not in self.tried_now]:
            if gap <= 0 or self.rate_limited:
                return
            released = self._evict_one(c, metric)
            if released is not None:
                gap -= released

    # -- throttle (docs/design/waterline.md §6.4, §6.5) ----------------------------------------------------------------
    def _write(self, c: _Candidate, container: ContainerState, step: Step, direction: str) -> bool:
        """Write one container's quota and remember it for restore; a failed write is an error of the tick."""
        pod = c.pod
        res = self.act.set_cpu_quota(pod, container, step.quota_us, step.period_us)
        if not res.ok:
            self.out.errors.append(f"throttle {direction} {pod.key}/{container.name}: {res.outcome.value} {res.message}")
            return False
        key = (pod.key, container.name)
        memo = self.memory.throttled.get(key)
        if direction == "down":
            if memo is None:
                memo = self.memory.throttled[key] = ThrottleMemo(
                    pod.uid, container.cpu_quota_us, container.cpu_quota_us, step.quota_us, c.step_ratio, c.min_ratio
                )  # raw and written are set just below
            memo.step_ratio = max(memo.step_ratio, c.step_ratio)
            memo.min_ratio = max(memo.min_ratio, c.min_ratio)
        if memo is not None:
            memo.raw_quota_us = self.memory.raw_quota.get(key, container.cpu_quota_us)
            memo.written_quota_us = step.quota_us
            if direction == "up" and (
                step.quota_us < 0 or (memo.original_quota_us > 0 and step.quota_us >= memo.original_quota_us)
            ):
                del self.memory.throttled[key]
        return True

    def _step_pod(self, c: _Candidate, direction: str, *, jump: bool = False, budget: Fraction | None = None) -> Fraction:
        """Step each container of one pod and record one pod action listing the quotas written.

        ``budget`` (the gap left, millicores) is shared among the containers by their CPU usage.
        """
        written: list[ContainerQuota] = []
        total = sum(ct.cpu_usage_milli for ct in c.pod.containers)
        for container in c.pod.containers:
            share = None
            if budget is not None:
                share = budget * container.cpu_usage_milli / total if total else budget / len(c.pod.containers)
            step = self._container_step(c, container, direction, jump=jump, share=share)
            if step is not None and self._write(c, container, step, direction):
                written.append(ContainerQuota(container.name, container.cpu_quota_us, step.quota_us, step.period_us,
                                              step.released_milli, share))
        released = sum((q.released_milli for q in written), Fraction(0))
        if written:
            self.out.actions.append(ActionRecord(c.pod.key, "throttle", tuple(c.rules), {CPU_TOTAL_USAGE: released},
                                                 direction=direction, containers=tuple(written)))
        return released

    def _container_step(
        self, c: _Candidate, container: ContainerState, direction: str, *, jump: bool, share: Fraction | None
    ) -> Step | None:
        memo = self.memory.throttled.get((c.pod.key, container.name))
        if direction == "down":
            return step_down(c.pod, container, step_ratio=c.step_ratio, min_ratio=c.min_ratio, share_milli=share)
        if jump and memo is not None:
            q = memo.original_quota_us
            return None if q == container.cpu_quota_us else Step(q, container.cpu_period_us, Fraction(0))
        ratio = memo.step_ratio if memo and c.step_ratio == 0 else c.step_ratio
        if share is not None and memo is not None:
            return restore_step(c.pod, container, step_ratio=ratio, share_milli=share,
                                original_quota_us=memo.original_quota_us,
                                node_capacity_milli=self.state.cpu_capacity_milli)
        return step_up(c.pod, container, step_ratio=ratio, original_quota_us=memo.original_quota_us if memo else None,
                       node_capacity_milli=self.state.cpu_capacity_milli)

    def _settle_gap(self, wl: Waterline, direction: str) -> Fraction | None:
        """Millicores to release (down) or hand back (up) to reach the settling target; 0 inside the dead band.

        ``None`` when this tick has no CPU usage.
        """
        used_raw = self.state.metrics().get(CPU_TOTAL_USAGE)
        if used_raw is None:
            return None
        used = to_fraction(used_raw)
        if direction == "down":
            return (1 + wl.excess) * (used - wl.value * SETTLE_TARGET)
        if used >= wl.value * RESTORE_BELOW:
            return Fraction(0)
        return wl.value * SETTLE_TARGET - used

    def throttle(self, cands: dict[str, _Candidate], wls: dict[str, Waterline], direction: str) -> None:
        live = {k: c for k, c in cands.items() if k not in self.evicted_now}
        if not live or not wls:
            return
        others = sorted(n for n in wls if n != CPU_TOTAL_USAGE)
        if others:
            if CPU_TOTAL_USAGE not in wls and not all(n in PRESSURE_METRICS for n in others):
                self.out.notes.append(f"throttle {direction} on {', '.join(others)} is not quantified: nothing done")
                return
            # CPU usage fired too, or only pressure did: stall has no per-pod gap, so one step for every candidate.
            for c in live.values():
                self._step_pod(c, direction)
            return
        gap = self._settle_gap(wls[CPU_TOTAL_USAGE], direction)
        if gap is None:
            self.out.notes.append(f"throttle {direction}: {CPU_TOTAL_USAGE} missing, one step for every candidate")
            for c in live.values():
                self._step_pod(c, direction)
            return
        self._step_ranked(live, gap, direction)

    def _step_ranked(self, cands: dict[str, _Candidate], gap: Fraction, direction: str, *, jump: bool = False) -> None:
        """Step pods in rank order, each given the gap still open, until it closes."""
        ranked = rank([c.pod for c in cands.values()], CPU_TOTAL_USAGE)
        self._order(ranked)
        for pod in ranked:
            if gap <= 0:
                break
            gap -= self._step_pod(cands[pod.key], direction, jump=jump, budget=gap)

    def keep_restoring(self, results: Sequence[RuleResult]) -> None:
        """Walk remembered throttles back to their original quota on calm ticks (a product decision that
        docs/design/waterline.md §6.5 allows: upstream raises a pod only one step per episode and then leaves it throttled)."""
        if not self.memory.throttled:
            return
        throttle_rules = [r for r in results if not r.rule.preview and r.rule.action.throttle is not None]
        if any(r.active or r.triggered or r.restored for r in throttle_rules):
            return
        cands = self._remembered_candidates()
        wl = self._restore_line(throttle_rules)
        if wl is None:
            for pod in rank([c.pod for c in cands.values()], CPU_TOTAL_USAGE):
                self._step_pod(cands[pod.key], "up", jump=self._jump(pod.key) or not throttle_rules)
            return
        gap = self._settle_gap(wl, "up")
        if gap is not None and gap > 0:
            self._step_ranked(cands, gap, "up")

    def _remembered_candidates(self) -> dict[str, _Candidate]:
        """The throttled pods still on the node (and not evicted this tick), as restore candidates."""
        pods = {p.key: p for p in self.state.pods}
        keys = sorted({k for k, _ in self.memory.throttled if k in pods and k not in self.evicted_now})
        return {k: _Candidate(pods[k], ["restore"]) for k in keys}

    @staticmethod
    def _restore_line(throttle_rules: Sequence[RuleResult]) -> Waterline | None:
        """The lowest CPU-usage waterline among the throttle rules (``None`` when none is on CPU usage)."""
        cpu_rules = [r for r in throttle_rules if r.rule.metric.name == CPU_TOTAL_USAGE]
        if not cpu_rules:
            return None
        wl = Waterline(cpu_rules[0].rule.metric.value, cpu_rules[0].policy.execute_excess, [])
        for r in cpu_rules[1:]:
            wl.push(r.rule.metric.value, r.policy.execute_excess, r.key)
        return wl

    def _jump(self, pod_key: str) -> bool:
        """A pod throttled only by ratio-less actions goes straight back to its original quota."""
        return all(m.step_ratio == 0 for (k, _), m in self.memory.throttled.items() if k == pod_key)


def execute(
    results: Sequence[RuleResult],
    state: NodeState,
    memory: EngineMemory,
    actuators: Actuators,
    limit: EvictionRateLimit,
) -> PlanResult:
    """Run docs/design/waterline.md §6 in order: evict, throttle down, throttle up (restore tick), then the calm-tick restore.

    Scheduling (the taint and the condition) is decided by the runtime, which owns the cool-down clock.
    """
    memory.prune(state)
    state = memory.overlay(state)
    run = _Run(state, memory, actuators, limit)
    merged = _merge(results, state, memory, run.out)
    run.evict(merged.evict, merged.evict_wl)
    run.throttle(merged.down, merged.down_wl, "down")
    run.throttle(merged.up, merged.up_wl, "up")
    if not merged.down:
        run.keep_restoring(results)
    return run.out
