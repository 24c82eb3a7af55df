"""preempt inside a queue by priority, reclaim across queues in queue order, conformance protection, backfill."""

from __future__ import annotations

from typing import Any

from scheduler.framework.api import TaskStatus
from tests.scheduler.actions.helpers import FULL, gang, priority_class
from tests.scheduler.factories import node, pod, podgroup, queue, run

PCS = [priority_class("high", 1000), priority_class("low", 10)]
PREEMPT = FULL.replace("enqueue, allocate, preempt, reclaim, backfill", "enqueue, allocate, preempt")
RECLAIM = FULL.replace("enqueue, allocate, preempt, reclaim, backfill", "enqueue, allocate, reclaim")


def test_preempt_evicts_the_fewest_lower_priority_pods_and_pipelines() -> None:
    objs: list[dict[str, Any]] = [node("n1", cpu="4"), *PCS]
    objs += gang("lo", 4, 1, running=4, running_on="n1", priority_class="low")
    objs += gang("hi", 1, 1, cpu="2", priority_class="high")
    ssn, sink = run(objs, PREEMPT)
    # 2 cpu needed, 1 cpu per victim: exactly two.  gang lets 3 of lo's 4 go (the first three it is shown:
    # lo-0..lo-2); of those the job's last tasks are evicted first (reverse task order)
    assert sink.evictions == ["default/lo-2", "default/lo-1"]
    hi = next(iter(ssn.jobs["default/hi"].tasks.values()))
    assert hi.status is TaskStatus.PIPELINED and hi.nominated_node == "n1" and hi.eviction_occurred
    assert sink.binds == {}
    # next session: the victims are gone; allocate binds the preemptor on its nominated node
    gone = {"lo-1", "lo-2"}
    objs = [o for o in objs if o.get("metadata", {}).get("name") not in gone]
    _, sink = run(objs, PREEMPT)
    assert sink.binds == {"default/hi-0": "n1"} and sink.evictions == []


def test_preempt_never_takes_equal_priority_or_breaks_a_gang() -> None:
    objs: list[dict[str, Any]] = [node("n1", cpu="4"), *PCS]
    objs += gang("peer", 2, 1, cpu="2", running=2, running_on="n1", priority_class="high")
    objs += gang("hi", 1, 1, cpu="2", priority_class="high")
    _, sink = run(objs, PREEMPT)
    assert sink.evictions == []
    objs = [node("n1", cpu="4"), *PCS, *gang("tight", 2, 2, cpu="2", running=2, running_on="n1",
                                            priority_class="low"), *gang("hi", 1, 1, cpu="2", priority_class="high")]
    _, sink = run(objs, PREEMPT)
    assert sink.evictions == []       # taking one would leave "tight" below its minMember


def test_preempt_never_evicts_protected_pods() -> None:
    crit = priority_class("system-cluster-critical", 5)
    objs: list[dict[str, Any]] = [node("n1", cpu="3"), *PCS, crit]
    objs += gang("sys", 1, 1, namespace="kube-system", running=1, running_on="n1", priority_class="low")
    objs += gang("crit", 1, 1, running=1, running_on="n1", priority_class="low",
                 pod_kw={"extra_spec": {"priorityClassName": "system-cluster-critical"}})
    objs += gang("pinned", 1, 1, running=1, running_on="n1", priority_class="low",
                 pod_kw={"annotations": {"volcano.sh/preemptable": "false"}})
    objs += gang("hi", 1, 1, cpu="1", priority_class="high")
    ssn, sink = run(objs, FULL)
    assert sink.evictions == [] and sink.binds == {}
    assert ssn.jobs["default/hi"].unschedulable


def test_reclaim_takes_back_lent_capacity_queue_by_queue() -> None:
    # "lender" borrowed the whole node while the others were idle; only two of its pods may be evicted
    lender = gang("lend", 6, 1, running=6, running_on="n1", queue="lender")
    for p in lender[1 + 2:]:
        p["metadata"]["annotations"]["volcano.sh/preemptable"] = "false"
    first, second = queue("first"), queue("second")
    first["spec"]["priority"] = 10          # served before "second"
    objs: list[dict[str, Any]] = [node("n1", cpu="6", memory="64Gi"), queue("lender"), first, second, *lender]
    objs += gang("a", 2, 2, queue="first") + gang("b", 2, 2, queue="second")
    ssn, sink = run(objs, RECLAIM)
    assert sorted(sink.evictions) == ["default/lend-0", "default/lend-1"]
    assert [t.status for t in ssn.jobs["default/a"].tasks.values()] == [TaskStatus.PIPELINED] * 2
    assert all(t.status is TaskStatus.PENDING for t in ssn.jobs["default/b"].tasks.values())


def test_reclaim_never_from_unreclaimable_queue_or_within_deserved() -> None:
    objs: list[dict[str, Any]] = [node("n1", cpu="4", memory="64Gi"), queue("keeper", reclaimable=False),
                                  queue("want")]
    objs += gang("k", 4, 1, running=4, running_on="n1", queue="keeper") + gang("w", 1, 1, queue="want")
    _, sink = run(objs, RECLAIM)
    assert sink.evictions == []
    # a queue at or below its deserved share keeps its pods even when reclaimable
    objs = [node("n1", cpu="4", memory="64Gi"), queue("fair"), queue("want"),
            *gang("f", 2, 1, running=2, running_on="n1", queue="fair"),
            *gang("o", 2, 1, running=2, running_on="n1", queue="want"), *gang("w", 1, 1, queue="want")]
    _, sink = run(objs, RECLAIM)
    assert sink.evictions == []


def test_backfill_places_best_effort_pods_on_full_nodes() -> None:
    objs: list[dict[str, Any]] = [node("n1", cpu="2"), pod("busy", cpu="2", node_name="n1")]
    objs += gang("be", 2, 2, cpu=None, memory=None)
    objs += gang("heavy", 1, 1, cpu="1")
    ssn, sink = run(objs, FULL)
    assert sink.binds == {"default/be-0": "n1", "default/be-1": "n1"}
    assert all(t.best_effort for t in ssn.jobs["default/be"].tasks.values())
    assert "default/heavy-0" not in sink.binds


def test_backfill_skips_unadmitted_groups() -> None:
    objs = [node("n1", cpu="2"), podgroup("gate", 1, phase="Pending", min_resources={"cpu": "50"}),
            pod("gate-0", cpu=None, memory=None, group="gate")]
    ssn, sink = run(objs, FULL)
    assert sink.binds == {} and ssn.jobs["default/gate"].phase == "Pending"
