from __future__ import annotations

import gc
import logging
import weakref

import pytest

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from scheduler.conf import default_conf
from scheduler.engine import Scheduler
from scheduler.framework.session import Session
from tests.scheduler.factories import T0, conf, node, pod, podgroup

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: noderesources
"""

GANG = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: noderesources
"""


def _cluster(*objs: dict) -> MemoryCluster:
    c = MemoryCluster(clock=FakeClock(T0 + 60))
    c.load(objs)
    return c


def test_engine_binds_through_cluster_and_reports_unschedulable() -> None:
    cluster = _cluster(node("a", cpu="2"), pod("p1", cpu="1500m"), pod("p2", cpu="1500m"))
    sched = Scheduler(cluster, conf(CONF), clock=FakeClock(T0 + 60))
    res = sched.run_once()
    bound = [k for k, v in res.placements.items() if v]
    assert len(bound) == 1
    left = next(k for k, v in res.placements.items() if v is None)
    assert res.pending_messages[left] == "0/1 nodes are available: 1 Insufficient cpu."
    ns, name = left.split("/")
    got = cluster.get("Pod", name, namespace=ns)
    cond = next(c for c in got["status"]["conditions"] if c["type"] == "PodScheduled")
    assert cond["status"] == "False" and cond["reason"] == "Unschedulable"
    reasons = [e.reason for e in cluster.events]
    assert "Scheduled" in reasons and "FailedScheduling" in reasons
    # a second session must not bind the bound pod again nor over-commit the node
    res2 = sched.run_once()
    assert all(v is None for v in res2.placements.values())
    # the attempts counted per pod and session: one scheduled, one unschedulable in each session
    read = sched.metrics.registry.get_sample_value
    attempts = {r: read("loadwise_scheduler_schedule_attempts_total", {"result": r}) for r in ("scheduled", "unschedulable")}
    assert attempts == {"scheduled": 1, "unschedulable": 2}


def test_assumed_pod_counts_before_watch_confirms() -> None:
    cluster = _cluster(node("a", cpu="2"), pod("p1", cpu="1500m"))
    sched = Scheduler(cluster, conf(CONF), clock=FakeClock(T0 + 60))
    sched.run_once()
    sched.cache.assume("default/ghost", "a")
    cluster.create("Pod", pod("p3", cpu="1"))
    snap = sched.cache.snapshot()
    assert any(p.node_name == "a" for p in snap.pods if p.name == "p1")


def test_podgroup_status_written_back() -> None:
    cluster = _cluster(node("a", cpu="4"), podgroup("g", 2, phase="Pending"),
                       pod("g-0", cpu="1", group="g"), pod("g-1", cpu="1", group="g"))
    sched = Scheduler(cluster, conf(GANG), clock=FakeClock(T0 + 60))
    res = sched.run_once()
    assert sorted(v for v in res.placements.values() if v) == ["a", "a"]
    pg = cluster.get("PodGroup", "g", namespace="default")
    assert pg["status"]["phase"] == "Running"
    assert pg["status"]["conditions"][-1]["type"] == "Scheduled"


def test_gang_below_min_member_stays_pending_with_condition_and_event() -> None:
    cluster = _cluster(node("a", cpu="2"), podgroup("g", 3, phase="Inqueue"),
                       *(pod(f"g-{i}", cpu="1", group="g") for i in range(3)))
    sched = Scheduler(cluster, conf(GANG), clock=FakeClock(T0 + 60))
    res = sched.run_once()
    assert not any(res.placements.values())
    pg = cluster.get("PodGroup", "g", namespace="default")
    cond = next(c for c in pg["status"]["conditions"] if c["type"] == "Unschedulable")
    assert cond["message"].startswith("1/3 tasks in gang unschedulable: ")
    assert cond["message"].count("tasks in gang unschedulable") == 1
    warnings = [e for e in cluster.events if e.kind == "PodGroup" and e.reason == "Unschedulable"]
    assert warnings and warnings[0].message.count("tasks in gang unschedulable") == 1


def test_a_pod_with_a_quantity_beyond_int64_does_not_stop_scheduling() -> None:
    # "1Ei" cores is 2**60 * 1000 millicores: past int64. It is capped when parsed, so the session packs it like
    # any other request: that pod is unschedulable for cpu, and the others are placed as usual.
    cluster = _cluster(node("a", cpu="4"), pod("huge", cpu="1Ei"), pod("mem", cpu="1", memory="1e30"),
                       pod("ok", cpu="1"))
    sched = Scheduler(cluster, conf(CONF), clock=FakeClock(T0 + 60))
    res = sched.run_once()
    assert res.placements == {"default/huge": None, "default/mem": None, "default/ok": "a"}
    assert res.pending_messages["default/huge"] == "0/1 nodes are available: 1 Insufficient cpu."
    assert res.pending_messages["default/mem"] == "0/1 nodes are available: 1 Insufficient memory."


def test_a_malformed_pod_is_skipped_and_the_others_schedule() -> None:
    # an API server would have refused it; the in-memory cluster and explain snapshots do not
    bad = pod("bad", extra_spec={"tolerations": ["all"]})
    cluster = _cluster(node("a", cpu="4"), bad, pod("ok", cpu="1"))
    sched = Scheduler(cluster, conf(CONF), clock=FakeClock(T0 + 60))
    res = sched.run_once()
    assert res.placements == {"default/ok": "a"}
    assert sched.cache.parse_errors == {
        "Pod default/bad": "Pod default/bad: spec.tolerations[0]: expected an object, got 'all'"}


def test_a_malformed_node_is_skipped_and_the_others_are_used() -> None:
    broken = node("broken", cpu="64")
    broken["spec"]["taints"] = "none"  # not a list: an API server refuses it, the in-memory cluster does not
    cluster = _cluster(broken, node("a", cpu="4"), pod("ok", cpu="1"))
    sched = Scheduler(cluster, conf(CONF), clock=FakeClock(T0 + 60))
    assert sched.run_once().placements == {"default/ok": "a"}
    assert sched.cache.parse_errors["Node broken"] == "Node broken: spec.taints: expected a list, got 'none'"


def test_a_skipped_object_is_logged_once_by_name_with_its_field(caplog: pytest.LogCaptureFixture) -> None:
    cluster = _cluster(node("a"), pod("bad", extra_spec={"tolerations": "all"}))
    with caplog.at_level(logging.WARNING, logger="scheduler.cache"):
        Scheduler(cluster, conf(CONF), clock=FakeClock(T0 + 60)).run_once()
    skips = [r.getMessage() for r in caplog.records if r.name == "scheduler.cache" and "default/bad" in r.getMessage()]
    assert len(skips) == 1 and "spec.tolerations" in skips[0], skips  # once, naming the pod and the field


def test_a_finished_session_is_freed_without_the_cycle_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plugins register closures over the session; released when it ends, the session and everything it built
    go with the last reference instead of waiting, in reference cycles, for the cyclic garbage collector (the
    daemon's default conf: every plugin it opens registers some)."""
    cluster = _cluster(node("a", cpu="4"), node("b", cpu="4"), pod("p1", cpu="1"),
                       podgroup("g", 2), pod("g-0", cpu="1", group="g"), pod("g-1", cpu="1", group="g"))
    sched = Scheduler(cluster, default_conf(), clock=FakeClock(T0 + 60))
    seen: list[weakref.ref[Session]] = []
    open_session = sched.open_session

    def spy(*args: object, **kwargs: object) -> Session:
        ssn = open_session(*args, **kwargs)  # type: ignore[arg-type]
        seen.append(weakref.ref(ssn))
        return ssn

    monkeypatch.setattr(sched, "open_session", spy)
    gc.collect()
    gc.disable()
    try:
        res = sched.run_once()
        cluster.create("Pod", pod("p2", cpu="1"))
        sched.run_once()
        freed = [ref() is None for ref in seen]  # before the collector may run again
    finally:
        gc.enable()
    assert sum(1 for v in res.placements.values() if v) == 3
    assert freed == [True, True]


def test_an_invalid_waterline_policy_is_skipped_naming_its_field() -> None:
    """The scheduler's watch checks a WaterlinePolicy as the agent does (the CRD's schema): an invalid one is
    skipped and reported with its field, not silently ignored by the load-aware plugin."""
    policy = {"apiVersion": "qos.loadwise.io/v1alpha1", "kind": "WaterlinePolicy", "metadata": {"name": "wl"},
              "spec": {"objectiveEnsurances": [{"name": "cpu", "metricRule": {"name": "cpu_total_usage", "value": "1"},
                                                "action": {"name": "evict", "eviction": {}}}],
                       "podQOS": [{"scopeSelector": {"matchExpressions": [
                           {"scopeName": "QoSClass", "operator": "In", "values": ["BestEffort"]}]},
                           "allowedActions": ["evict"]}]}}
    cluster = _cluster(node("a", cpu="4"), pod("ok", cpu="1"))
    cluster.create("WaterlinePolicy", policy)
    sched = Scheduler(cluster, conf(CONF), clock=FakeClock(T0 + 60))
    assert sched.run_once().placements == {"default/ok": "a"}
    assert sched.cache.parse_errors["WaterlinePolicy wl"] == (
        "spec.podQOS[0].scopeSelector.matchExpressions[0].scopeName: 'QoSClass' is not one of "
        "['QOSClass', 'Priority', 'Namespace']")
