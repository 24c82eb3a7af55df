"""The waterline engine across ticks: policies → detection → plan → actuation, events and metrics.

``WaterlineRuntime.tick(state)`` is the only entry point; the agent calls it once per collection, the
simulator once per simulated step and ``qos-plan`` once per tick of a state file.  It keeps what must
survive between ticks (rule counters, remembered throttles, evicted pods, the eviction rate window, the
scheduling cool-down).  Dry-run (globally, or per policy by annotation) runs the same decisions against
recording actuators, and nothing is actuated.  Each dry-run tick is decided afresh, as if nothing had
been done (no pod hidden as evicted, no quota remembered as written), so the report always says what
the engine would do now; a decision that repeats unchanged is evented and counted (``dry_run="true"``)
only when first made.  ``replay=True`` (``qos-plan`` replaying a recorded sequence) instead lets
dry-run decisions accumulate as if they had been carried out.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from agent.qos.actuate import Actuation, CgroupQuotaWriter, ClusterEvictor, NodeScheduling, RecordingActuators
from agent.qos.detect import Detector, RuleResult, Status
from agent.qos.plan import ActionRecord, EngineMemory, EvictionRateLimit, PlanResult, SkipRecord, execute
from agent.qos.policy import PolicyStore
from agent.qos.state import NodeState
from common.clock import Clock, to_rfc3339
from common.cluster import ApiError, Cluster, EventRecord
from common.waterline import WaterlinePolicy

__all__ = ["TickReport", "WaterlineRuntime", "WaterlineMetrics", "DEFAULT_EVICTION_LIMIT"]

DEFAULT_EVICTION_LIMIT = EvictionRateLimit(max_evictions=1, per_seconds=10.0)

log = logging.getLogger(__name__)

_RULE_STATES = ("triggered", "restored", "active", "error")  # the rule-state gauge's series per rule


@dataclass(frozen=True, slots=True)
class TickReport:
    """Everything one tick decided, in the ``qos-plan`` output shape (``to_json``)."""

    time: float
    triggered: tuple[str, ...]
    restored: tuple[str, ...]
    order: tuple[str, ...]
    actions: tuple[ActionRecord, ...]
    scheduling: str  # enabled | disabled
    errors: tuple[str, ...]
    skipped: tuple[SkipRecord, ...] = ()
    notes: tuple[str, ...] = ()
    dry_run: bool = False
    preview: tuple[str, ...] = ()  # triggered Preview rules: evented only
    rules: tuple[RuleResult, ...] = field(default=(), repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "time": to_rfc3339(self.time),
            "triggered": list(self.triggered),
            "restored": list(self.restored),
            "order": list(self.order),
            "actions": [a.to_json() for a in self.actions],
            "scheduling": self.scheduling,
            "errors": list(self.errors),
            "skipped": [s.to_json() for s in self.skipped],
            "notes": list(self.notes),
            "preview": list(self.preview),
            "dryRun": self.dry_run,
        }


class WaterlineMetrics:
    """Prometheus series of the engine, registered in the registry the caller passes."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.rule_state = Gauge("loadwise_agent_waterline_rule_state", "1 when the rule is in that state this tick",
                                ["node", "rule", "state"], registry=registry)
        self.triggers = Counter("loadwise_agent_waterline_triggers", "Ticks on which a rule was triggered",
                                ["node", "rule", "dry_run"], registry=registry)
        self.restores = Counter("loadwise_agent_waterline_restores", "Rule restore events",
                                ["node", "rule", "dry_run"], registry=registry)
        self.actions = Counter("loadwise_agent_actions", "Actions taken (throttle, unthrottle, evict, cordon-hint)",
                               ["node", "action", "reason", "dry_run"], registry=registry)
        self.evictions = Counter("loadwise_agent_waterline_evictions", "Eviction attempts by result",
                                 ["node", "result", "dry_run"], registry=registry)
        self.released = Counter("loadwise_agent_waterline_released", "Released amount, in the metric's unit",
                                ["node", "metric", "action", "dry_run"], registry=registry)
        self.throttled = Gauge("loadwise_agent_waterline_throttled_containers", "Containers held below their quota",
                               ["node", "dry_run"], registry=registry)
        self.scheduling = Gauge("loadwise_agent_waterline_scheduling_enabled", "0 while the node is tainted",
                                ["node", "dry_run"], registry=registry)
        self.rejected = Gauge("loadwise_agent_waterline_rejected_policies", "Invalid WaterlinePolicies seen",
                              ["node"], registry=registry)


@dataclass
class _Lane:
    """Decisions that share actuators and memory: the live lane, or the dry-run lane."""

    dry_run: bool
    memory: EngineMemory = field(default_factory=EngineMemory)
    disabled: bool | None = None  # None: unknown until the first tick reconciles the node
    last_triggered: float | None = None
    decided: set[tuple[Any, ...]] = field(default_factory=set)  # a dry lane's last decisions


@dataclass
class _Decisions:
    """What the lanes of one tick decided, gathered into the tick's report."""

    errors: list[str] = field(default_factory=list)
    order: list[str] | None = None
    actions: list[ActionRecord] = field(default_factory=list)
    skipped: list[SkipRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    scheduling: str = "enabled"

    def add(self, plan: PlanResult, *, dry_notes: bool) -> None:
        if self.order is None and plan.order is not None:
            self.order = plan.order
        self.actions += plan.actions
        self.skipped += plan.skipped
        self.errors += plan.errors
        self.notes += [f"dry-run: {n}" if dry_notes else n for n in plan.notes]

    def report(self, state: NodeState, results: Sequence[RuleResult], dry_run: bool) -> TickReport:
        return TickReport(
            time=state.time,
            triggered=tuple(r.key for r in results if r.triggered and not r.rule.preview),
            restored=tuple(r.key for r in results if r.restored and not r.rule.preview),
            order=tuple(self.order or ()),
            actions=tuple(self.actions),
            scheduling=self.scheduling,
            errors=tuple(self.errors),
            skipped=tuple(self.skipped),
            notes=tuple(self.notes),
            dry_run=dry_run,
            preview=tuple(r.key for r in results if r.rule.preview and r.status in (Status.TRIGGERED, Status.RESTORED)),
            rules=tuple(results),
        )


class WaterlineRuntime:
    def __init__(
        self,
        cluster: Cluster | None,
        node_name: str,
        clock: Clock,
        actuators: Actuation | None = None,
        dry_run: bool = False,
        *,
        registry: CollectorRegistry | None = None,
        policies: PolicyStore | None = None,
        eviction_limit: EvictionRateLimit = DEFAULT_EVICTION_LIMIT,
        component: str = "loadwise-agent",
        replay: bool = False,
    ) -> None:
        self.cluster = cluster
        self.node = node_name
        self.clock = clock
        self.dry_run = dry_run
        self.replay = replay
        self.component = component
        self.eviction_limit = eviction_limit
        self.policies = policies if policies is not None else PolicyStore(cluster, clock, component)
        self.actuators = actuators if actuators is not None or dry_run else self._real_actuators()
        self.recorder = RecordingActuators()
        self.metrics = WaterlineMetrics(registry if registry is not None else CollectorRegistry())
        self.detector = Detector()
        self._live = _Lane(dry_run=False)
        self._dry = _Lane(dry_run=True)
        self._last_event: dict[str, str] = {}
        # Per rule key, the rule-state gauge's series (one per state) and the values last written to them,
        # removed with the rule.
        self._rule_series: dict[str, tuple[tuple[Any, ...], tuple[bool, ...]]] = {}
        self._gauges: dict[tuple[Gauge, tuple[str, ...]], Any] = {}  # see _series
        self._mode_lock = threading.Lock()  # a mode switch (reloaded config) waits for the tick in progress
        self.enabled = True

    def _real_actuators(self) -> Actuation | None:
        """cgroup quota writes, the Eviction API and the node's taint; none without a cluster."""
        if self.cluster is None:
            return None
        return Actuation(CgroupQuotaWriter(), ClusterEvictor(self.cluster), NodeScheduling(self.cluster, self.node,
                                                                                           self.clock))

    def set_dry_run(self, dry_run: bool) -> None:
        """Switch mode between ticks (a reloaded ``waterline.dryRun``); without a cluster it stays dry-run.

        To enforcing: real actuators act from the next tick, whose live lane reconciles the node first.  To
        dry-run: the live lane keeps ticking with no rule until what it did is undone (each throttled container
        back to its quota, the taint lifted), so nothing it set is left behind with no one to restore it.
        """
        with self._mode_lock:
            if not dry_run and self.actuators is None:
                self.actuators = self._real_actuators()
            self.dry_run = dry_run or self.actuators is None

    def set_enabled(self, enabled: bool) -> None:
        """Switch the engine off or on between ticks (a reloaded ``waterline.enabled``).

        Off, it ticks as if no policy applied until what it did is undone (quotas restored, the taint lifted,
        the rules' series removed), and is idle from then on; the policies it was given are kept for when it is
        switched on again.
        """
        with self._mode_lock:
            self.enabled = enabled

    def _winding_down(self) -> bool:
        """Dry-run now, and the live lane still holds a throttle or the taint from before the switch."""
        live = self._live
        return self.dry_run and self.actuators is not None and (bool(live.memory.throttled) or live.disabled is True)

    @property
    def memory(self) -> EngineMemory:
        return self._dry.memory if self.dry_run else self._live.memory

    def idle(self) -> bool:
        """No policy at all and nothing left to undo or reconcile: a tick would decide nothing.

        The agent then skips building the node snapshot (container reads included) for that tick.
        """
        lanes = [self._dry] if self.dry_run or self.actuators is None else [self._live, self._dry]
        if self._winding_down():
            return False
        if lanes[0].disabled is None or self._rule_series:
            return False  # the first tick reconciles the node; a removed rule's series must go
        if any(lane.memory.throttled or lane.disabled for lane in lanes):
            return False
        return not self.enabled or not self.policies.policies()

    # -- the tick ---------------------------------------------------------------------------------------
    def tick(self, state: NodeState) -> TickReport:
        """Detect on every applicable rule, then plan and act lane by lane (live, then dry-run)."""
        with self._mode_lock:
            return self._tick(state)

    def _tick(self, state: NodeState) -> TickReport:
        policies = self.policies.applicable(state.labels) if self.enabled else []
        self._forget_rules({p.rule_key(r) for p in policies for r in p.rules})
        results = [self.detector.evaluate(p, r, state) for p in policies for r in p.rules]
        self._rule_metrics(results)
        self._rule_events(results, {p.name for p in policies if self.dry_run or p.dry_run})
        acc = _Decisions(errors=[f"{r.key}: {r.error}" for r in results if r.status is Status.ERROR])
        for i, (lane, lane_results, act) in enumerate(self._lanes(policies, results)):
            if i > 0 and not lane_results and not lane.memory.throttled and lane.disabled is not True:
                continue
            self._run_lane(lane, lane_results, act, state, acc, first=i == 0)
        self._series(self.metrics.rejected).set(len(self.policies.rejections()))
        return acc.report(state, results, self.dry_run)

    def _forget_rules(self, keys: set[str]) -> None:
        """Drop detector memory, event memory and /metrics series of rules that are gone."""
        self.detector.forget_except(keys)
        for k in list(self._last_event):
            if k not in keys:
                del self._last_event[k]
        for k in [k for k in self._rule_series if k not in keys]:
            del self._rule_series[k]
            for st in _RULE_STATES:
                self.metrics.rule_state.remove(self.node, k, st)

    def _lanes(self, policies: Sequence[WaterlinePolicy], results: list[RuleResult]
               ) -> list[tuple[_Lane, list[RuleResult], Actuation | RecordingActuators]]:
        """The live lane (real actuators) and the dry-run lane (recording actuators), with their rules."""
        if self.dry_run or self.actuators is None:
            lanes: list[tuple[_Lane, list[RuleResult], Actuation | RecordingActuators]] = [
                (self._dry, list(results), self.recorder)]
            if self._winding_down() and self.actuators is not None:
                lanes.append((self._live, [], self.actuators))  # no rule: it restores what it did, then rests
            return lanes
        dry_names = {p.name for p in policies if p.dry_run}
        live = [r for r in results if r.policy.name not in dry_names]
        dry = [r for r in results if r.policy.name in dry_names]
        return [(self._live, live, self.actuators), (self._dry, dry, self.recorder)]

    def _run_lane(self, lane: _Lane, results: list[RuleResult], act: Actuation | RecordingActuators,
                  state: NodeState, acc: _Decisions, *, first: bool) -> None:
        """Plan and act for one lane; a dry lane (unless replaying) decides afresh each tick."""
        afresh = lane.dry_run and not self.replay
        if afresh:
            lane.memory = EngineMemory()  # as if nothing had been done: no pod hidden, no quota remembered
        plan = execute(results, state, lane.memory, act, self.eviction_limit)
        for a in plan.actions:
            log.info("%s%s", "[dry-run] " if lane.dry_run else "", a.to_json())
        counted = self._once_per_decision(lane, plan.actions) if afresh else plan.actions
        self._plan_effects(plan, counted, state, lane.dry_run)
        enabled, note = self._scheduling(lane, results, state, act)
        if note:
            acc.notes.append(note)
        if first:
            acc.scheduling = "enabled" if enabled else "disabled"
        acc.add(plan, dry_notes=lane.dry_run and not self.dry_run)
        self._series(self.metrics.throttled, _flag(lane.dry_run)).set(len(lane.memory.throttled))

    @staticmethod
    def _once_per_decision(lane: _Lane, actions: Sequence[ActionRecord]) -> list[ActionRecord]:
        """The actions that were not already decided, identically, on the lane's previous tick.

        A dry-run decision repeats on every tick while its rule stays triggered (nothing is done, so
        nothing changes); its events and released amounts are counted when it is first made.
        """
        keyed = [(a.decision(), a) for a in actions]
        fresh = [a for key, a in keyed if key not in lane.decided]
        lane.decided = {key for key, _ in keyed}
        return fresh

    # -- scheduling (docs/design/waterline.md §6.2) ---------------------------------------------------------------
    def _scheduling(self, lane: _Lane, results: Sequence[RuleResult], state: NodeState, act: Any) -> tuple[bool, str]:
        """Enable or disable scheduling on the node; returns the wanted state and any failure note."""
        acting = [r for r in results if not r.rule.preview]
        want_enabled = self._want_scheduling(lane, acting, state)
        if lane.disabled is not None and lane.disabled == (not want_enabled):
            return want_enabled, ""
        first = lane.disabled is None
        lane.disabled = not want_enabled
        rules = ", ".join(r.key for r in acting if r.active) or "none"
        message = (f"waterline exceeded by {rules}" if not want_enabled
                   else "no waterline rule is triggered and the cool-down has passed")
        self.metrics.scheduling.labels(self.node, _flag(lane.dry_run)).set(1 if want_enabled else 0)
        if first and want_enabled:
            if not lane.dry_run:
                act.set_scheduling(True, message)  # clears a taint left by an earlier run; no event
            return want_enabled, ""
        return want_enabled, self._switch_scheduling(want_enabled, message, lane.dry_run, act)

    @staticmethod
    def _want_scheduling(lane: _Lane, acting: Sequence[RuleResult], state: NodeState) -> bool:
        """Scheduling stays off while a rule is active and through the cool-down after its last trigger."""
        if any(r.triggered for r in acting):
            lane.last_triggered = state.time
        cool_down = max((r.rule.action.cool_down_seconds for r in acting), default=0)
        if any(r.active for r in acting):
            return False
        cooling = lane.last_triggered is not None and state.time < lane.last_triggered + cool_down
        return not (lane.disabled and cooling)

    def _switch_scheduling(self, enabled: bool, message: str, dry: bool, act: Any) -> str:
        """Apply a change of the scheduling switch, with its metric and Event; returns a failure note."""
        res = act.set_scheduling(enabled, message)
        if not res.ok:
            return f"scheduling switch failed: {res.outcome.value} {res.message}"
        self.metrics.actions.labels(self.node, "cordon-hint", "enable" if enabled else "disable",
                                    _flag(dry)).inc()
        self._event("Node", self.node, "", "Normal" if enabled else "Warning",
                    "SchedulingEnabled" if enabled else "SchedulingDisabled", message, dry)
        return ""

    # -- events and metrics -----------------------------------------------------------------------------
    def _event(self, kind: str, name: str, namespace: str, type_: str, reason: str, message: str, dry: bool,
               uid: str = "") -> None:
        if self.cluster is None:
            return
        text = f"[dry-run] {message}" if dry else message
        try:
            self.cluster.emit_event(EventRecord(kind=kind, name=name, namespace=namespace or "default", uid=uid,
                                                reason=reason, message=text, type=type_, component=self.component,
                                                action="Waterline"))
        except ApiError as exc:
            log.warning("cannot emit event %s on %s %s: %s", reason, kind, name, exc)

    def _rule_events(self, results: Sequence[RuleResult], dry_policies: set[str]) -> None:
        for r in results:
            if not (r.triggered or r.restored or r.status is Status.ERROR):
                continue  # nothing to say about this rule this tick
            dry = r.policy.name in dry_policies
            what = f"{r.policy.name}/{r.rule.name}"
            numbers = f"{r.rule.metric.name}={_fmt(r.value)} waterline={_fmt(float(r.rule.metric.value))}"
            if r.triggered:
                self._last_event[r.key] = "trigger"
                self._event("Node", self.node, "", "Warning", "AvoidanceTriggered",
                            f"{what} triggered action {r.rule.action.name} ({numbers})", dry)
            elif r.restored:
                if self._last_event.get(r.key) == "trigger":
                    self._event("Node", self.node, "", "Normal", "RestoreTriggered",
                                f"{what} restored action {r.rule.action.name} ({numbers})", dry)
                self._last_event[r.key] = "restore"
            if r.triggered:
                self.metrics.triggers.labels(self.node, r.key, _flag(dry or r.rule.preview)).inc()
            if r.restored:
                self.metrics.restores.labels(self.node, r.key, _flag(dry or r.rule.preview)).inc()
            if r.status is Status.ERROR:
                log.debug("rule %s: %s", r.key, r.error)

    def _series(self, metric: Gauge, *labels: str) -> Any:
        """``metric.labels(self.node, *labels)``, looked up once: the gauges every tick writes (never removed)."""
        key = (metric, labels)
        child = self._gauges.get(key)
        if child is None:
            child = self._gauges[key] = metric.labels(self.node, *labels)
        return child

    def _rule_metrics(self, results: Sequence[RuleResult]) -> None:
        """Each rule's state gauges; a gauge is written only when its value changes (only this runtime writes
        them), so a calm tick writes none."""
        for r in results:
            states = (r.triggered, r.restored, r.active, r.status is Status.ERROR)
            kept = self._rule_series.get(r.key)
            if kept is None:
                series = tuple(self.metrics.rule_state.labels(self.node, r.key, st) for st in _RULE_STATES)
                for child, on in zip(series, states, strict=True):
                    child.set(1 if on else 0)
            else:
                series, before = kept
                if before == states:
                    continue
                for child, on, was in zip(series, states, before, strict=True):
                    if on != was:
                        child.set(1 if on else 0)
            self._rule_series[r.key] = (series, states)

    def _plan_effects(self, plan: PlanResult, actions: Sequence[ActionRecord], state: NodeState, dry: bool) -> None:
        """Events and counters for ``actions`` (the plan's, or only its new ones in a dry lane)."""
        pods = {p.key: p for p in state.pods}
        flag = _flag(dry)
        for a in actions:
            reason = a.rules[0] if a.rules else ""
            pod = pods.get(a.pod)
            ns, _, name = a.pod.partition("/")
            released = ", ".join(f"{m}={_fmt(float(v))}" for m, v in sorted(a.released.items())) or "n/a"
            if a.action == "evict":
                self.metrics.actions.labels(self.node, "evict", reason, flag).inc()
                self.metrics.evictions.labels(self.node, "accepted", flag).inc()
                self._event("Pod", name, ns, "Warning", "WaterlineEviction",
                            f"evicted by {', '.join(a.rules)} on node {self.node} (grace {a.grace_period_seconds}s, "
                            f"released {released})", dry, uid=pod.uid if pod else "")
            else:
                kind = "throttle" if a.direction == "down" else "unthrottle"
                self.metrics.actions.labels(self.node, kind, reason, flag).inc()
                self._event("Pod", name, ns, "Warning" if a.direction == "down" else "Normal",
                            "WaterlineThrottle" if a.direction == "down" else "WaterlineRestore",
                            f"cpu quota {', '.join(q.describe() for q in a.containers)} by {', '.join(a.rules)} "
                            f"(released {released})",
                            dry, uid=pod.uid if pod else "")
            for m, v in a.released.items():
                self.metrics.released.labels(self.node, m, a.action, flag).inc(float(v))
        if plan.evictions_refused:
            self.metrics.evictions.labels(self.node, "refused", flag).inc(plan.evictions_refused)
        if plan.evictions_rate_limited:
            self.metrics.evictions.labels(self.node, "rate_limited", flag).inc(plan.evictions_rate_limited)

    # -- policy convenience -----------------------------------------------------------------------------
    def active_policies(self, state: NodeState) -> list[WaterlinePolicy]:
        return self.policies.applicable(state.labels)


def _flag(dry: bool) -> str:
    return "true" if dry else "false"


def _fmt(v: float | None) -> str:
    if v is None:
        return "n/a"
    return str(int(v)) if float(v).is_integer() else f"{v:.3f}"
