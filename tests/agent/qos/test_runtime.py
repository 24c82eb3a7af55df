"""The engine across ticks against the in-memory cluster: taint/condition, cool-down, PDBs, dry-run, policies."""

from __future__ import annotations

import copy
from typing import Any

from prometheus_client import CollectorRegistry

from agent.qos.actuate import CONDITION_TYPE, TAINT_KEY, Actuation, ClusterEvictor, NodeScheduling, RecordingActuators
from agent.qos.runtime import WaterlineRuntime
from agent.qos.state import PodState
from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from tests.agent.qos.factories import (
    EVICT,
    T0,
    THROTTLE,
    THROTTLE_20,
    node,
    pod,
    policy_dict,
    rule,
    three_container_pod,
)


def _pod_obj(p: PodState) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": p.name, "namespace": p.namespace, "uid": p.uid, "labels": dict(p.labels)},
            "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}}


class Env:
    def __init__(self, *pods: PodState, dry_run: bool = False, policy: dict[str, Any] | None = None) -> None:
        self.clock = FakeClock(T0)
        self.cluster = MemoryCluster(clock=self.clock)
        self.cluster.create("Node", {"kind": "Node", "metadata": {"name": "n1", "labels": {"pool": "x"}},
                                     "spec": {"taints": [{"key": "other", "effect": "NoSchedule"}]},
                                     "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        for p in pods:
            self.cluster.create("Pod", _pod_obj(p))
        self.pods = pods
        self.quota = RecordingActuators()
        self.registry = CollectorRegistry()
        act = Actuation(self.quota, ClusterEvictor(self.cluster), NodeScheduling(self.cluster, "n1", self.clock))
        self.rt = WaterlineRuntime(self.cluster, "n1", self.clock, act, dry_run, registry=self.registry)
        if policy is not None:
            self.cluster.create("WaterlinePolicy", policy)
        self.rt.policies.watch(self.cluster)

    def tick(self, cpu: int | None, dt: float = 10.0, **kw: Any) -> Any:
        report = self.rt.tick(node(*self.pods, cpu=cpu, t=self.clock.now(), labels={"pool": "x"}, **kw))
        self.clock.advance(dt)
        return report

    def node_obj(self) -> dict[str, Any]:
        return self.cluster.get("Node", "n1")

    def tainted(self) -> bool:
        return any(t["key"] == TAINT_KEY and t["effect"] == "PreferNoSchedule"
                   for t in self.node_obj()["spec"].get("taints", []))

    def condition(self) -> str | None:
        for c in self.node_obj()["status"].get("conditions", []):
            if c["type"] == CONDITION_TYPE:
                return str(c["status"])
        return None

    def reasons(self) -> list[str]:
        return [e.reason for e in self.cluster.events]

    def metric(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)


def test_schedule_restore_after_cooldown() -> None:
    # B3: re-enabled once no rule is triggered and coolDownSeconds passed since the last trigger
    only_taint = {"name": "taint", "coolDownSeconds": 30}
    env = Env(policy=policy_dict(rule(action=only_taint, restoreThreshold=1)))
    got = []
    for cpu in (5000, 7000, 5000, 5000, 5000, 5000):
        r = env.tick(cpu)
        got.append((r.scheduling, env.tainted(), env.condition()))
    assert got == [("enabled", False, "False"), ("disabled", True, "True"), ("disabled", True, "True"),
                   ("disabled", True, "True"), ("enabled", False, "False"), ("enabled", False, "False")]
    assert {"key": "other", "effect": "NoSchedule"} in env.node_obj()["spec"]["taints"]  # others' taints kept
    assert [c["type"] for c in env.node_obj()["status"]["conditions"]] == ["Ready", CONDITION_TYPE]
    assert env.reasons() == ["AvoidanceTriggered", "SchedulingDisabled", "RestoreTriggered", "SchedulingEnabled"]
    assert env.metric("loadwise_agent_waterline_scheduling_enabled", node="n1", dry_run="false") == 1


def test_scheduling_stays_disabled_while_rule_active_and_reenabled_when_policy_goes() -> None:
    env = Env(policy=policy_dict(rule(action={"name": "taint", "coolDownSeconds": 1}, restoreThreshold=3)))
    env.tick(7000)
    env.tick(5000)
    assert env.tainted()  # active until 3 consecutive under-samples
    env.cluster.delete("WaterlinePolicy", "p")
    r = env.tick(5000)
    assert r.scheduling == "enabled" and not env.tainted()


def test_rule_state_series_leave_with_the_rule() -> None:
    env = Env(policy=policy_dict(rule(action={"name": "taint", "coolDownSeconds": 1}, restoreThreshold=3)))
    env.tick(7000)
    assert env.metric("loadwise_agent_waterline_rule_state", node="n1", rule="p.cpu", state="active") == 1
    env.tick(5000)  # the series are kept (and updated) while the rule exists
    assert env.metric("loadwise_agent_waterline_rule_state", node="n1", rule="p.cpu", state="triggered") == 0
    assert env.metric("loadwise_agent_waterline_rule_state", node="n1", rule="p.cpu", state="active") == 1
    env.cluster.delete("WaterlinePolicy", "p")
    env.tick(5000)
    # a deleted rule is not shown active (nor in any other state) forever
    for state in ("triggered", "restored", "active", "error"):
        assert env.metric("loadwise_agent_waterline_rule_state", node="n1", rule="p.cpu", state=state) is None
    env.cluster.create("WaterlinePolicy", policy_dict(rule(action=THROTTLE)))
    env.tick(7000)  # a rule under the same key again: fresh series
    assert env.metric("loadwise_agent_waterline_rule_state", node="n1", rule="p.cpu", state="active") == 1


def test_preview_only_events() -> None:
    env = Env(pod("a", cpu=5000), policy=policy_dict(rule(action=EVICT, strategy="Preview")))
    r = env.tick(7000)
    assert r.preview == ("p.cpu",) and r.triggered == () and r.actions == ()
    assert not env.tainted() and env.cluster.evictions == []
    assert env.reasons() == ["AvoidanceTriggered"]


def test_pdb_refused_eviction_not_counted() -> None:
    a = pod("a", cpu=3000, labels={"app": "guarded"})
    b = pod("b", cpu=2000)
    env = Env(a, b, policy=policy_dict(rule(action=EVICT)))
    env.cluster.create("PodDisruptionBudget", {"kind": "PodDisruptionBudget", "metadata": {"name": "g", "namespace": "default"},
                                               "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}}})
    r = env.tick(7000)
    assert env.cluster.refused_evictions == ["default/a"] and env.cluster.evictions == ["default/b"]
    assert [x.pod for x in r.actions] == ["default/b"]
    assert r.skipped[0].pod == "default/a" and "disruption budget" in r.skipped[0].reason
    assert env.metric("loadwise_agent_waterline_evictions_total", node="n1", result="refused", dry_run="false") == 1
    assert env.metric("loadwise_agent_waterline_evictions_total", node="n1", result="accepted", dry_run="false") == 1
    assert env.metric("loadwise_agent_waterline_released_total", node="n1", metric="cpu_total_usage",
                      action="evict", dry_run="false") == 2000
    assert "WaterlineEviction" in env.reasons()


def test_dry_run_actuates_nothing() -> None:
    pol = policy_dict(rule("cpu", action=EVICT), rule("t", value="5000", action=THROTTLE))
    env = Env(pod("a", cpu=3000), pod("b", cpu=2000), dry_run=True, policy=pol)
    r = env.tick(7000)
    assert r.dry_run and r.scheduling == "disabled"
    assert {a.action for a in r.actions} == {"evict", "throttle"}
    assert env.cluster.evictions == [] and env.quota.calls == [] and not env.tainted() and env.condition() is None
    assert all(e.message.startswith("[dry-run] ") for e in env.cluster.events)
    assert env.metric("loadwise_agent_waterline_evictions_total", node="n1", result="accepted", dry_run="true") == 1
    assert env.metric("loadwise_agent_actions_total", node="n1", action="throttle", reason="p.t", dry_run="true") == 1


def test_dry_run_decides_afresh_each_tick_and_counts_a_decision_once() -> None:
    pol = policy_dict(rule("cpu", action=EVICT))
    env = Env(pod("a", cpu=3000), pod("b", cpu=2000), dry_run=True, policy=pol)
    reports = [env.tick(7000) for _ in range(3)]
    # Nothing was evicted, so "a" is still there and still the pod to evict: no pod is hidden.
    assert [[a.pod for a in r.actions] for r in reports] == [["default/a"]] * 3
    assert env.metric("loadwise_agent_waterline_evictions_total", node="n1", result="accepted", dry_run="true") == 1
    assert env.metric("loadwise_agent_waterline_released_total", node="n1", metric="cpu_total_usage",
                      action="evict", dry_run="true") == 3000
    assert env.reasons().count("WaterlineEviction") == 1
    # A different decision (b, once a's usage falls) is a new one and is counted.
    env.pods = (pod("a", cpu=500), pod("b", cpu=2000))
    r = env.tick(7000)
    assert [a.pod for a in r.actions] == ["default/b"]
    assert env.metric("loadwise_agent_waterline_evictions_total", node="n1", result="accepted", dry_run="true") == 2


def test_dry_run_throttle_steps_from_the_real_quota_every_tick() -> None:
    env = Env(pod("a", cpu=3000), dry_run=True, policy=policy_dict(rule("t", action=THROTTLE)))
    quotas = [[q.quota_us for a in env.tick(7000).actions for q in a.containers] for _ in range(3)]
    assert quotas == [[270_000]] * 3  # not 270 -> 243 -> 218: the quota was never written
    assert env.metric("loadwise_agent_actions_total", node="n1", action="throttle", reason="p.t", dry_run="true") == 1


def test_released_is_in_the_rule_metrics_unit() -> None:
    # 2000 of 8000 millicores is 25 percent points of cpu_total_utilization.
    env = Env(pod("a", cpu=2000), policy=policy_dict(rule("u", metric="cpu_total_utilization", value="70",
                                                          action=EVICT)))
    r = env.tick(7000, cpu_total_utilization=87.5)
    assert [a.released for a in r.actions] == [{"cpu_total_utilization": 25}]
    assert env.metric("loadwise_agent_waterline_released_total", node="n1", metric="cpu_total_utilization",
                      action="evict", dry_run="false") == 25


def test_dry_run_policy_annotation() -> None:
    pol = policy_dict(rule(action=EVICT))
    pol["metadata"]["annotations"] = {"qos.loadwise.io/dry-run": "true"}
    env = Env(pod("a", cpu=3000), policy=pol)
    r = env.tick(7000)
    assert [a.pod for a in r.actions] == ["default/a"]
    assert env.cluster.evictions == [] and not env.tainted()
    assert r.scheduling == "enabled"  # the live lane has nothing triggered


def test_invalid_policy_rejected_and_last_valid_keeps_running() -> None:
    env = Env(pod("a", cpu=3000), policy=policy_dict(rule(action=EVICT, avoidanceThreshold=2)))
    bad = copy.deepcopy(env.cluster.get("WaterlinePolicy", "p"))
    bad["spec"]["objectiveEnsurances"][0]["avoidanceThreshold"] = 0
    env.cluster.replace("WaterlinePolicy", bad)
    ev = [e for e in env.cluster.events if e.reason == "InvalidPolicy"]
    assert len(ev) == 1 and ev[0].kind == "WaterlinePolicy" and ev[0].type == "Warning"
    assert "spec.objectiveEnsurances[0].avoidanceThreshold" in ev[0].message
    cond = env.cluster.get("WaterlinePolicy", "p")["status"]["conditions"]
    assert cond[0]["status"] == "False" and cond[0]["field"] == "spec.objectiveEnsurances[0].avoidanceThreshold"
    env.tick(7000)
    r = env.tick(7000)
    assert r.triggered == ("p.cpu",)  # the previous version (threshold 2) still runs
    assert env.cluster.evictions == ["default/a"]
    assert env.metric("loadwise_agent_waterline_rejected_policies", node="n1") == 1
    # mended: the condition turns valid and loses the field of the rejection (it is merged in by type)
    good = copy.deepcopy(env.cluster.get("WaterlinePolicy", "p"))
    good["spec"]["objectiveEnsurances"][0]["avoidanceThreshold"] = 2
    env.cluster.replace("WaterlinePolicy", good)
    (cond,) = env.cluster.get("WaterlinePolicy", "p")["status"]["conditions"]
    assert cond["status"] == "True" and cond["reason"] == "Valid" and "field" not in cond
    # a new, never-valid policy runs nothing
    env.cluster.create("WaterlinePolicy", {**policy_dict(name="q"), "spec": {"objectiveEnsurances": []}})
    assert [p.name for p in env.rt.policies.policies()] == ["p"]


def test_node_selector_limits_policies() -> None:
    env = Env(pod("a", cpu=3000), policy=policy_dict(rule(action=EVICT), nodeSelector={"matchLabels": {"pool": "y"}}))
    r = env.tick(7000)
    assert r.triggered == () and r.rules == ()


def test_missing_metric_is_reported_and_freezes() -> None:
    env = Env(pod("a"), policy=policy_dict(rule(action=EVICT)))
    r = env.tick(None)
    assert r.errors == ("p.cpu: cpu_total_usage: metric not found",)
    assert env.metric("loadwise_agent_waterline_rule_state", node="n1", rule="p.cpu", state="error") == 1


def test_all_preview_reenables_scheduling() -> None:
    env = Env(policy=policy_dict(rule(action={"name": "taint", "coolDownSeconds": 300})))
    env.tick(7000)
    assert env.tainted()
    cur = env.cluster.get("WaterlinePolicy", "p")
    cur["spec"]["objectiveEnsurances"][0]["strategy"] = "Preview"
    env.cluster.replace("WaterlinePolicy", cur)
    r = env.tick(7000)
    assert r.scheduling == "enabled" and not env.tainted() and r.preview == ("p.cpu",)


def test_a_multi_container_throttle_is_one_event_and_one_count() -> None:
    env = Env(three_container_pod(), policy=policy_dict(rule("t", action=THROTTLE_20, restoreThreshold=1)))
    r = env.tick(6100)  # the gap of 440 millicores split 220, 110, 110 (test_plan computes it)
    assert [(a.pod, a.action, len(a.containers)) for a in r.actions] == [("default/web", "throttle", 3)]
    assert [c[2:] for c in env.quota.calls] == [("app", 198_000, 100_000), ("sidecar", 99_000, 100_000),
                                                ("log", 99_000, 100_000)]
    (event,) = [e for e in env.cluster.events if e.reason == "WaterlineThrottle"]
    assert (event.name, event.namespace) == ("web", "default")
    assert event.message == ("cpu quota app -1 -> 198000/100000us (gap share 220m), sidecar 120000 -> 99000/100000us "
                             "(gap share 110m), log -1 -> 99000/100000us (gap share 110m) by p.t "
                             "(released cpu_total_usage=440)")
    assert env.metric("loadwise_agent_actions_total", node="n1", action="throttle", reason="p.t", dry_run="false") == 1
    assert env.metric("loadwise_agent_waterline_released_total", node="n1", metric="cpu_total_usage",
                      action="throttle", dry_run="false") == 440
    assert env.metric("loadwise_agent_waterline_throttled_containers", node="n1", dry_run="false") == 3
    # Restored: one pod action back up, one event, one count (1980 -> 2376 and 990 -> 1188, a 20 % step each).
    r = env.tick(4000)
    assert [(a.direction, [q.quota_us for q in a.containers]) for a in r.actions] == [("up", [237_600, 118_800, 118_800])]
    assert env.reasons().count("WaterlineRestore") == 1
    assert env.metric("loadwise_agent_actions_total", node="n1", action="unthrottle", reason="p.t", dry_run="false") == 1


def _throttled_and_tainted() -> Env:
    """An enforcing engine whose one rule has throttled pod a's container and tainted the node."""
    pol = policy_dict(rule("t", value="5000", action={**THROTTLE, "coolDownSeconds": 300}, restoreThreshold=1))
    env = Env(pod("a", cpu=3000), policy=pol)
    env.tick(7000)
    assert env.tainted() and env.quota.calls[-1][2:] == ("c", 270_000, 100_000)
    return env


def test_switching_to_dry_run_undoes_what_the_live_lane_did_and_back_acts_again() -> None:
    env = _throttled_and_tainted()
    env.rt.set_dry_run(True)
    assert not env.rt.idle()  # the live lane still holds a throttle and the taint
    r = env.tick(7000)  # still over the line: the dry lane decides, the live lane only restores
    assert r.dry_run and r.scheduling == "disabled" and not env.tainted()
    assert env.quota.calls[-1][2:] == ("c", -1, 100_000)  # back to the quota it had before the throttle
    assert env.metric("loadwise_agent_waterline_throttled_containers", node="n1", dry_run="false") == 0
    calls = len(env.quota.calls)
    env.tick(7000)
    assert len(env.quota.calls) == calls and not env.tainted()  # nothing more is written while dry-run
    env.rt.set_dry_run(False)
    r = env.tick(7000)
    assert not r.dry_run and env.tainted() and len(env.quota.calls) == calls + 1


def test_without_a_cluster_the_engine_stays_dry_run() -> None:
    rt = WaterlineRuntime(None, "n1", FakeClock(T0), dry_run=True)
    rt.set_dry_run(False)
    assert rt.dry_run and rt.actuators is None


def test_switching_the_engine_off_undoes_its_actions_then_idles_and_on_again_resumes() -> None:
    env = _throttled_and_tainted()
    env.rt.set_enabled(False)
    assert not env.rt.idle()
    r = env.tick(7000)
    assert r.triggered == () and r.scheduling == "enabled" and not env.tainted()
    assert env.quota.calls[-1][2:] == ("c", -1, 100_000)
    assert env.metric("loadwise_agent_waterline_rule_state", node="n1", rule="p.t", state="active") is None
    assert env.rt.idle()
    env.rt.set_enabled(True)
    assert not env.rt.idle()
    r = env.tick(7000)
    assert r.triggered == ("p.t",) and env.tainted()


def test_applicable_policies_follow_every_change_of_the_store() -> None:
    """The policies applicable to a label set are matched once and kept, and a policy added, replaced, rejected
    or deleted is seen at once, for every label set."""
    from agent.qos.policy import PolicyStore

    store = PolicyStore()
    pool_y = {"pool": "y"}
    store.upsert(policy_dict(name="all"))
    store.upsert(policy_dict(name="y", nodeSelector={"matchLabels": pool_y}))
    names = lambda labels: [p.name for p in store.applicable(labels)]  # noqa: E731
    assert names(pool_y) == ["all", "y"] and names({}) == ["all"]
    store.applicable(pool_y).clear()  # the caller's own list
    assert names(dict(pool_y)) == ["all", "y"]
    store.upsert(policy_dict(name="y", nodeSelector={"matchLabels": {"pool": "z"}}))
    assert names(pool_y) == ["all"]
    store.upsert(policy_dict(name="a", nodeSelector={"matchLabels": pool_y}))
    assert names(pool_y) == ["a", "all"]
    store.upsert({**policy_dict(name="a"), "spec": {"objectiveEnsurances": "no"}})  # rejected: the last valid runs
    assert names(pool_y) == ["a", "all"]
    store.delete("all")
    assert names(pool_y) == ["a"] and names({}) == []
    store.replace_all([policy_dict(name="b")])
    assert names(pool_y) == ["b"]
