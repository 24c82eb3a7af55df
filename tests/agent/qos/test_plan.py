"""docs/design/waterline.md §4–§6 planner decisions: gaps, eviction until closed, refusals, rate limit, throttle passes."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from agent.qos.detect import Detector, RuleResult, Status
from agent.qos.plan import (
    ActResult,
    ContainerQuota,
    EngineMemory,
    EvictionRateLimit,
    Outcome,
    PlanResult,
    Waterline,
    execute,
    gap_for,
)
from agent.qos.state import ContainerState, NodeState, PodState
from common.waterline import WaterlinePolicy
from tests.agent.qos.factories import (
    EVICT,
    THROTTLE,
    THROTTLE_20,
    container,
    node,
    pod,
    policy,
    rule,
    three_container_pod,
)


@dataclass
class FakeActuators:
    refuse: set[str] = field(default_factory=set)
    fail_quota: set[str] = field(default_factory=set)
    fail_container: set[str] = field(default_factory=set)
    calls: list[tuple[Any, ...]] = field(default_factory=list)

    def evict(self, p: PodState, grace_period_seconds: int) -> ActResult:
        self.calls.append(("evict", p.key, grace_period_seconds))
        if p.key in self.refuse:
            return ActResult(Outcome.REFUSED, "Cannot evict pod as it would violate the pod's disruption budget")
        return ActResult(Outcome.ACCEPTED)

    def set_cpu_quota(self, p: PodState, c: ContainerState, quota_us: int, period_us: int) -> ActResult:
        self.calls.append(("quota", p.key, c.name, quota_us))
        if p.key in self.fail_quota or c.name in self.fail_container:
            return ActResult(Outcome.FAILED, "EPERM")
        return ActResult(Outcome.ACCEPTED)

    def evicted(self) -> list[str]:
        return [c[1] for c in self.calls if c[0] == "evict"]


NO_LIMIT = EvictionRateLimit(max_evictions=1000, per_seconds=10)


def _quotas(out: PlanResult) -> list[int]:
    """The quotas the plan's throttle actions write, container by container."""
    return [q.quota_us for a in out.actions for q in a.containers]


def _fire(pol: WaterlinePolicy, state: NodeState) -> list[RuleResult]:
    d = Detector()
    return [d.evaluate(pol, r, state) for r in pol.rules]


def _plan(pol: WaterlinePolicy, state: NodeState, act: FakeActuators | None = None,
          memory: EngineMemory | None = None, limit: EvictionRateLimit = NO_LIMIT) -> tuple[Any, FakeActuators]:
    act = act or FakeActuators()
    out = execute(_fire(pol, state), state, memory or EngineMemory(), act, limit)
    return out, act


def test_gap_formulas() -> None:
    wl = Waterline(Fraction(6000), Fraction(1, 10))
    assert gap_for("cpu_total_usage", wl, node(cpu=7000)) == 1100
    assert gap_for("cpu_total_usage", wl, node(cpu=7000), up=True) == -1100
    util = Waterline(Fraction(70), Fraction(1, 10))
    # (1.1)(80-70) percent of 8 cores -> 880 millicores
    assert gap_for("cpu_total_utilization", util, node(cpu_total_utilization=80.0, cores=8)) == 880
    assert gap_for("cpu_total_utilization", util, node(cpu_total_utilization=80.0, cores=0)) is None
    mem = Waterline(Fraction(50), Fraction(0))
    assert gap_for("memory_total_utilization", mem, node(memory_total_utilization=60.0, mem_total=1000)) == 100
    assert gap_for("memory_total_usage", mem, node()) is None


def test_evict_stops_as_soon_as_gap_closes() -> None:
    pol = policy(rule(action=EVICT))  # gap 1100 at 7000 used
    s = node(pod("a", cpu=600), pod("b", cpu=400), pod("c", cpu=300), pod("d", cpu=200), cpu=7000)
    out, act = _plan(pol, s)
    assert act.evicted() == ["default/a", "default/b", "default/c"]  # 600+400 < 1100, +300 closes it
    assert out.order == ["default/a", "default/b", "default/c", "default/d"]
    assert [a.released for a in out.actions] == [{"cpu_total_usage": 600}, {"cpu_total_usage": 400},
                                                 {"cpu_total_usage": 300}]


def test_no_gap_no_action_when_not_triggered() -> None:
    out, act = _plan(policy(rule(action=EVICT)), node(pod("a"), cpu=6000))
    assert act.calls == [] and out.order is None


def test_pdb_refused_eviction_not_counted() -> None:
    pol = policy(rule(action=EVICT))
    s = node(pod("a", cpu=2000), pod("b", cpu=1500), cpu=7000)
    out, act = _plan(pol, s, FakeActuators(refuse={"default/a"}))
    assert act.evicted() == ["default/a", "default/b"]
    assert [a.pod for a in out.actions] == ["default/b"]
    assert out.evictions_refused == 1
    assert out.skipped[0].pod == "default/a" and out.skipped[0].reason.startswith("refused")


def test_critical_and_terminating_pods_are_skipped() -> None:
    pol = policy(rule(action=EVICT))
    s = node(pod("crit", cpu=5000, critical=True), pod("dying", cpu=5000, terminating=True), pod("ok", cpu=100))
    out, act = _plan(pol, s)
    assert act.evicted() == ["default/ok"]
    assert {(k.pod, k.reason.split(" ")[0]) for k in out.skipped} == {("default/crit", "critical"),
                                                                      ("default/dying", "terminating")}


def test_only_pods_allowed_by_pod_qos() -> None:
    pq = [{"labelSelector": {"matchLabels": {"tier": "batch"}}, "allowedActions": ["eviction"]},
          {"labelSelector": {"matchLabels": {"tier": "web"}}, "allowedActions": ["throttle"]}]
    pol = policy(rule(action=EVICT), pod_qos=pq)
    s = node(pod("web", cpu=5000, labels={"tier": "web"}), pod("batch", cpu=10, labels={"tier": "batch"}),
             pod("none", cpu=5000))
    _, act = _plan(pol, s)
    assert act.evicted() == ["default/batch"]  # releases only 10m, nothing else is allowed


def test_evict_grace_period_from_action() -> None:
    # B6: the action's grace overrides the pod's; the smallest across merged actions wins
    a1 = {"name": "evict-slow", "eviction": {"terminationGracePeriodSeconds": 60}}
    a2 = {"name": "evict-fast", "eviction": {"terminationGracePeriodSeconds": 5}}
    pq = [{"labelSelector": {"matchLabels": {"x": "y"}}, "allowedActions": ["evict-slow", "evict-fast"]}]
    pol = policy(rule("r1", action=a1), rule("r2", value="6500", action=a2), pod_qos=pq)
    s = node(pod("p", cpu=3000, grace=120, labels={"x": "y"}), cpu=7000)
    out, act = _plan(pol, s)
    assert act.calls == [("evict", "default/p", 5)]
    assert out.actions[0].rules == ("p.r1", "p.r2")
    # no action grace: the pod's own, else 30
    for grace, want in ((120, 120), (None, 30)):
        _, act = _plan(policy(rule(action=EVICT)), node(pod("p", cpu=3000, grace=grace)))
        assert act.calls == [("evict", "default/p", want)]


def test_smallest_waterline_among_fired_rules() -> None:
    pol = policy(rule("hi", value="6800"), rule("lo", value="5000"), rule("idle", value="9000"))
    s = node(*(pod(f"p{i}", cpu=1000, start=1000.0 + i) for i in range(5)), cpu=7000)
    _, act = _plan(pol, s)
    assert len(act.evicted()) == 3  # gap (1.1)(7000-5000) = 2200 -> three 1000m pods


def test_evict_two_metrics_own_credit_only() -> None:
    # B9 + docs/design/waterline.md §6.3: cpu first (name order), then memory; a pod evicted for cpu gives memory no credit
    pol = policy(rule("cpu", value="6000"), rule("mem", metric="memory_total_usage", value="1000"))
    s = node(pod("cpu-hog", cpu=3000, memory=900), pod("mem-hog", cpu=10, memory=500), pod("small", cpu=5, memory=10),
             cpu=7000, memory=1800)
    out, act = _plan(pol, s)
    # cpu gap 1100 -> cpu-hog; memory gap 880 -> cpu-hog skipped (no credit), mem-hog 500, small 10
    assert act.evicted() == ["default/cpu-hog", "default/mem-hog", "default/small"]
    assert out.order == ["default/cpu-hog", "default/mem-hog", "default/small"]
    assert [a.released for a in out.actions] == [{"cpu_total_usage": 3000}, {"memory_total_usage": 500},
                                                 {"memory_total_usage": 10}]


def test_unquantified_metric_evicts_every_candidate() -> None:
    pol = policy(rule("load", metric="cpu_load_1_min", value="4"), rule("cpu", value="6000"))
    s = node(pod("a", cpu=10), pod("b", cpu=10), pod("c", cpu=10), cpu=6500, cpu_load_1_min=9.0)
    out, act = _plan(pol, s)
    assert act.evicted() == ["default/a", "default/b", "default/c"] and out.order is None
    # only unregistered metrics: nothing is evicted, but the rule still triggers
    pol = policy(rule("load", metric="cpu_load_1_min", value="4"))
    out, act = _plan(pol, node(pod("a"), cpu_load_1_min=9.0))
    assert act.calls == [] and out.notes


def test_rate_limit_per_node() -> None:
    pol = policy(rule(action=EVICT))
    s = node(pod("a", cpu=100), pod("b", cpu=100), pod("c", cpu=100), cpu=7000)
    mem = EngineMemory()
    limit = EvictionRateLimit()  # default: 1 per 10 s
    out, act = _plan(pol, s, memory=mem, limit=limit)
    assert act.evicted() == ["default/a"] and out.evictions_rate_limited == 1
    out, act = _plan(pol, node(*s.pods, t=s.time + 5), memory=mem, limit=limit)
    assert act.evicted() == []
    out, act = _plan(pol, node(*s.pods, t=s.time + 10), memory=mem, limit=limit)
    assert act.evicted() == ["default/b"]  # a is remembered as evicted while it is still listed


def test_throttle_down_precise_single_pass() -> None:
    # The throttle gap runs to the settling target, 95 % of the line: (1 + 0.1)(6700 - 5700) = 1100.
    pol = policy(rule(action=THROTTLE))
    s = node(pod("a", cpu=5000), pod("b", cpu=4000), pod("c", cpu=3000), pod("d", cpu=100), cpu=6700)
    out, act = _plan(pol, s)
    # a and b take whole 10 % steps (500 + 400); c is left only 200 to release, so it stops at 2800.
    assert [c[1:] for c in act.calls] == [("default/a", "c", 450_000), ("default/b", "c", 360_000),
                                           ("default/c", "c", 280_000)]
    assert sum(a.released["cpu_total_usage"] for a in out.actions) == 1100
    assert all(a.direction == "down" and [q.previous_quota_us for q in a.containers] == [-1] for a in out.actions)


def test_throttle_failed_write_releases_nothing() -> None:
    pol = policy(rule(action=THROTTLE))
    s = node(pod("a", cpu=5000), pod("b", cpu=5000), cpu=7000)
    out, act = _plan(pol, s, FakeActuators(fail_quota={"default/a"}))
    assert [a.pod for a in out.actions] == ["default/b"] and out.errors


def test_throttle_on_unquantified_metric_does_nothing_unless_cpu_also_fired() -> None:
    pol = policy(rule("mem", metric="memory_total_usage", value="10", action=THROTTLE))
    out, act = _plan(pol, node(pod("a"), memory=100))
    assert act.calls == [] and out.notes
    pol = policy(rule("mem", metric="memory_total_usage", value="10", action=THROTTLE),
                 rule("cpu", action=THROTTLE))
    out, act = _plan(pol, node(pod("a", cpu=10), pod("b", cpu=20), memory=100, cpu=7000))
    assert [c[1] for c in act.calls] == ["default/a", "default/b"]  # every candidate, list order, no gap


def test_throttle_ratios_merge_to_the_larger() -> None:
    t1 = {"name": "t1", "throttle": {"cpuThrottle": {"stepCPURatio": 10, "minCPURatio": 0}}}
    t2 = {"name": "t2", "throttle": {"cpuThrottle": {"stepCPURatio": 50, "minCPURatio": 0}}}
    pq = [{"labelSelector": {"matchLabels": {"a": "b"}}, "allowedActions": ["t1", "t2"]}]
    pol = policy(rule("r1", action=t1), rule("r2", action=t2), pod_qos=pq)
    # Far enough above the line that the gap (1.1 x 3300) does not cut the 50 % step short.
    out, act = _plan(pol, node(pod("a", cpu=4000, labels={"a": "b"}), cpu=9000))
    assert act.calls == [("quota", "default/a", "c", 200_000)]


def test_preview_rules_act_on_nothing() -> None:
    pol = policy(rule(action=EVICT, strategy="Preview"))
    out, act = _plan(pol, node(pod("a", cpu=5000), cpu=7000))
    assert act.calls == [] and out.actions == []


def test_a_small_excess_is_throttled_only_down_to_the_settling_target() -> None:
    pol = policy(rule(action=THROTTLE))  # line 6000, excess 0.1, a 10 % step
    # The gap to 95 % of the line is 1.1 x (6100 - 5700) = 440.  A pod using 2000 takes its whole 10 %
    # step (200 < 440); one using 5000 would release 500, so it stops at 5000 - 440.
    out, act = _plan(pol, node(pod("a", cpu=2000), cpu=6100))
    assert act.calls == [("quota", "default/a", "c", 180_000)]
    out, act = _plan(pol, node(pod("a", cpu=5000), cpu=6100))
    assert act.calls == [("quota", "default/a", "c", 456_000)]


def test_restore_holds_inside_the_dead_band_and_lifts_an_idle_quota() -> None:
    pol = policy(rule(action=THROTTLE, restoreThreshold=1))
    mem = EngineMemory()
    det = Detector()
    act = FakeActuators()

    def tick(cpu: int, usage: int, t: float) -> Any:
        quota = mem.throttled[("default/a", "c")].written_quota_us if mem.throttled else -1
        p = pod("a", cpu=usage, containers=(container("c", usage=usage, quota=quota),))
        s = node(p, cpu=cpu, t=t)
        return execute([det.evaluate(pol, r, s) for r in pol.rules], s, mem, act, NO_LIMIT)

    tick(7000, 3000, 0)  # over the line: 3000 -> 2700
    assert [c[3] for c in act.calls] == [270_000]
    assert tick(5500, 2700, 10).actions == []  # restore tick, but 5500 >= 90 % of 6000: held
    assert tick(5500, 2700, 20).actions == []  # calm tick inside the dead band: held
    out = tick(5000, 2700, 30)  # below 5400 and the quota is used up: one 10 % step (270 < the 700 head-room)
    assert _quotas(out) == [297_000]
    out = tick(5650, 2970, 40)  # 5650 is inside the dead band: held although the quota is used up
    assert out.actions == []
    out = tick(5380, 2970, 50)  # head-room 5700 - 5380 = 320, more than 10 % of 2970 = 297: the step
    assert _quotas(out) == [326_700]
    out = tick(5390, 3267, 60)  # head-room 310 < 10 % of 3267: raised by the head-room only
    assert _quotas(out) == [326_700 + 31_000]
    out = tick(3000, 1000, 70)  # the load stopped: the quota goes straight back to unlimited
    assert [(a.direction, q.quota_us) for a in out.actions for q in a.containers] == [("up", -1)]
    assert not mem.throttled


def test_restore_tick_steps_up_and_memory_walks_back_to_original() -> None:
    pol = policy(rule(action=THROTTLE, restoreThreshold=1))
    mem = EngineMemory()
    det = Detector()
    act = FakeActuators()
    p0 = pod("a", cpu=2000, containers=(container("c", usage=2000, quota=200_000, limit=2000),))

    def tick(cpu: int, t: float) -> Any:
        s = node(p0, cpu=cpu, t=t)
        return execute([det.evaluate(pol, r, s) for r in pol.rules], s, mem, act, NO_LIMIT)

    tick(7000, 0)
    tick(7000, 10)
    tick(7000, 20)  # 200000 -> 180000 -> 162000 -> 145800 (replayed state: memory overlays our writes)
    assert [c[3] for c in act.calls] == [180_000, 162_000, 145_800]
    out = tick(3000, 30)  # restore tick: one step up
    assert [(a.direction, q.quota_us) for a in out.actions for q in a.containers] == [("up", 160_380)]
    assert _quotas(tick(3000, 40)) == [176_418]  # calm ticks keep stepping up
    assert _quotas(tick(3000, 50)) == [194_059]
    assert _quotas(tick(3000, 60)) == [200_000]  # capped at the original (= the limit)
    assert not mem.throttled
    assert tick(3000, 70).actions == []


def _forced(pol: WaterlinePolicy, state: NodeState) -> list[RuleResult]:
    """Rule results that fired on an earlier snapshot, executed against one that lacks the metric (docs/design/waterline.md §6.7)."""
    return [RuleResult(pol.rule_key(r), pol, r, Status.TRIGGERED, True) for r in pol.rules]


def test_usage_missing_evicts_every_candidate() -> None:
    pol = policy(rule(action=EVICT))
    s = node(pod("a", cpu=10), pod("b", cpu=10), cpu=None)
    act = FakeActuators()
    out = execute(_forced(pol, s), s, EngineMemory(), act, NO_LIMIT)
    assert act.evicted() == ["default/a", "default/b"] and "usage missing" in out.notes[0]


def test_usage_missing_throttles_every_candidate_one_step() -> None:
    pol = policy(rule(action=THROTTLE))
    s = node(pod("a", cpu=10), pod("b", cpu=5000), cpu=None)
    act = FakeActuators()
    execute(_forced(pol, s), s, EngineMemory(), act, NO_LIMIT)
    assert [c[1] for c in act.calls] == ["default/a", "default/b"]  # list order, no sort, no gap


def test_percent_metric_without_capacity_evicts_nothing() -> None:
    pol = policy(rule(metric="cpu_total_utilization", value="70"))
    out, act = _plan(pol, node(pod("a", cpu=5000), cores=0, cpu_total_utilization=90.0))
    assert act.calls == [] and out.errors == ["evict: no gap for cpu_total_utilization (capacity metric missing)"]
    out, act = _plan(pol, node(pod("a", cpu=5000), pod("b", cpu=5000), cores=8, cpu_total_utilization=90.0))
    assert act.evicted() == ["default/a"]  # (1.1)(90-70)% of 8000m = 1760m < 5000m


def test_finished_pods_are_skipped() -> None:
    pol = policy(rule(action=EVICT))
    done = replace(pod("done", cpu=5000), phase="Succeeded")
    out, act = _plan(pol, node(done, pod("ok", cpu=100)))
    assert act.evicted() == ["default/ok"] and out.skipped[0].reason == "phase Succeeded"


def test_a_multi_container_pod_is_one_throttle_action_with_each_containers_quota() -> None:
    pol = policy(rule(action=THROTTLE_20, restoreThreshold=1))
    det, mem, act = Detector(), EngineMemory(), FakeActuators()

    def tick(p: PodState, cpu: int, t: float) -> PlanResult:
        s = node(p, cpu=cpu, t=t)
        return execute([det.evaluate(pol, r, s) for r in pol.rules], s, mem, act, NO_LIMIT)

    # Down: gap (1 + 0.1)(6100 - 0.95 x 6000) = 440, split by usage 2200:1100:1100 = 220, 110, 110. Each share
    # binds before the 20 % step: app 2200 - 220 = 1980, sidecar and log 1100 - 110 = 990 millicores.
    out = tick(three_container_pod(), 6100, 0)
    (down,) = out.actions
    assert (down.pod, down.action, down.direction) == ("default/web", "throttle", "down")
    assert down.containers == (ContainerQuota("app", -1, 198_000, 100_000, Fraction(220), Fraction(220)),
                               ContainerQuota("sidecar", 120_000, 99_000, 100_000, Fraction(110), Fraction(110)),
                               ContainerQuota("log", -1, 99_000, 100_000, Fraction(110), Fraction(110)))
    assert down.released == {"cpu_total_usage": 440}
    assert [c[2:] for c in act.calls] == [("app", 198_000), ("sidecar", 99_000), ("log", 99_000)]  # still per container
    # Up, once restored (a live snapshot: each container now uses its whole quota): head-room 5700 - 4000 = 1700,
    # split 1980:990:990 = 850, 425, 425; each rises one 20 % step, less than its share: 1980 -> 2376, 990 -> 1188.
    out = tick(three_container_pod((1980, 198_000), (990, 99_000), (990, 99_000)), 4000, 10)
    (up,) = out.actions
    assert up.direction == "up" and up.released == {"cpu_total_usage": 396 + 198 + 198}
    assert up.containers == (ContainerQuota("app", 198_000, 237_600, 100_000, Fraction(396), Fraction(850)),
                             ContainerQuota("sidecar", 99_000, 118_800, 100_000, Fraction(198), Fraction(425)),
                             ContainerQuota("log", 99_000, 118_800, 100_000, Fraction(198), Fraction(425)))


def test_a_failed_container_write_is_left_out_of_the_pod_action() -> None:
    pol = policy(rule(action=THROTTLE_20))
    act = FakeActuators(fail_container={"sidecar"})
    out, _ = _plan(pol, node(three_container_pod(), cpu=6100), act)
    (action,) = out.actions
    assert [q.name for q in action.containers] == ["app", "log"] and action.released == {"cpu_total_usage": 330}
    assert out.errors == ["throttle down default/web/sidecar: failed EPERM"]
