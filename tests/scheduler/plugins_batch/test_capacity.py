"""capacity plugin: deserved vs capability, borrowing, preemptive, reclaim and hierarchical queues."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler.framework.session import PERMIT, REJECT
from scheduler.plugins.capacity import Capacity
from tests.scheduler.factories import node, pod, podgroup, queue, run, session

CONF = """
actions: "enqueue, allocate, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: capacity
"""
HIER = CONF.replace("  - name: capacity", "  - name: capacity\n    enableHierarchy: true")


def _cap(ssn: Any) -> Capacity:
    p = ssn.plugins["capacity"]
    assert isinstance(p, Capacity)
    return p


def _job(q: str, n: int, cpu: str = "1", *, running: int = 0, name: str = "", **pg: Any) -> list[dict[str, Any]]:
    name = name or f"{q}-job"
    out = [podgroup(name, 1, queue=q, **pg)]
    out += [pod(f"{name}-{i}", cpu=cpu, memory=None, group=name, node_name="a" if i < running else "")
            for i in range(n)]
    return out


def _q(name: str, deserved: str | None = None, capability: str | None = None, guarantee: str | None = None,
       parent: str = "") -> dict[str, Any]:
    q = queue(name, deserved={"cpu": deserved} if deserved else None,
              capability={"cpu": capability} if capability else None)
    if guarantee:
        q["spec"]["guarantee"] = {"resource": {"cpu": guarantee}}
    if parent:
        q["spec"]["parent"] = parent
    return q


@pytest.mark.parametrize(("deserved", "capability", "guarantee", "exp_deserved", "exp_real"), [
    ("4", None, None, 4000, 10000),
    ("4", "3", None, 3000, 3000),          # deserved never above the real capability
    ("2", "6", "3", 3000, 6000),           # ... nor below the guarantee
    (None, "5", None, 0, 5000),            # best-effort queue
])
def test_limits_table(deserved: str | None, capability: str | None, guarantee: str | None, exp_deserved: int,
                      exp_real: int) -> None:
    objs = [node("a", cpu="10"), _q("q", deserved, capability, guarantee), *_job("q", 1)]
    ssn, _ = session(objs, CONF)
    lim = _cap(ssn).limits["q"]
    assert lim.deserved.get("cpu", 0) == exp_deserved and lim.real_capability["cpu"] == exp_real


def test_queue_borrows_up_to_capability_not_deserved() -> None:
    objs = [node("a", cpu="10"), _q("q", deserved="2", capability="6"), *_job("q", 10)]
    _, sink = run(objs, CONF)
    assert len(sink.binds) == 6


def test_queue_order_share_then_quota() -> None:
    objs = [node("a", cpu="10"), _q("busy", deserved="2"), _q("calm", deserved="4"), _q("be"),
            *_job("busy", 2, running=2), *_job("calm", 2, running=1), *_job("be", 1)]
    ssn, _ = session(objs, CONF)
    c = _cap(ssn)
    assert (c.share("busy"), c.share("calm"), c.share("be")) == (1.0, 0.25, 1.0)
    qs = ssn.queues
    assert ssn.queue_order(qs["calm"], qs["busy"]) == -1
    assert ssn.queue_order(qs["busy"], qs["be"]) == -1          # equal share: the queue with a deserved first


def test_preemptive_and_reclaim_victims() -> None:
    objs = [node("a", cpu="8"), _q("lender", deserved="2"), _q("owner", deserved="6"),
            *_job("lender", 8, running=8), *_job("owner", 4)]
    ssn, sink = run(objs, CONF)
    owner = ssn.queues["owner"]
    task = next(iter(ssn.jobs["default/owner-job"].tasks.values()))
    assert ssn.preemptive(owner, task)
    # the owner reclaims from the lender, which holds 8 against a deserved 2: enough evictions to start its job
    assert len(sink.evictions) >= 1 and all(e.startswith("default/lender-job-") for e in sink.evictions)
    # the lender cannot reclaim back beyond its deserved
    lender_task = next(iter(ssn.jobs["default/lender-job"].tasks.values()))
    assert not ssn.preemptive(ssn.queues["lender"], lender_task)


def test_reclaim_respects_guarantee() -> None:
    objs = [node("a", cpu="4"), _q("safe", deserved="1", guarantee="3"), _q("other", deserved="3"),
            *_job("safe", 4, running=4), *_job("other", 1)]
    ssn, _ = session(objs, CONF)
    reclaimer = next(iter(ssn.jobs["default/other-job"].tasks.values()))
    cands = list(ssn.nodes[0].tasks.values())
    victims, vote = ssn.fns["reclaimable"]["capacity"](reclaimer, cands)
    assert vote == PERMIT and len(victims) == 1           # 4 → 3 keeps the guarantee, 3 → 2 would not


def test_admission_against_capability() -> None:
    objs = [node("a", cpu="10"), _q("q", deserved="2", capability="4"),
            *_job("q", 1, phase="Pending", min_resources={"cpu": "3"}),
            *_job("q", 1, name="second", phase="Pending", min_resources={"cpu": "2"})]
    ssn, _ = run(objs, CONF.replace("enqueue, allocate, reclaim", "enqueue"))
    assert ssn.jobs["default/q-job"].phase == "Inqueue"
    second = ssn.jobs["default/second"]
    assert second.phase == "Pending" and "insufficient cpu" in second.job_fit_error


def test_hierarchy_checks_every_ancestor() -> None:
    objs = [node("a", cpu="10"), _q("eng", deserved="6", capability="4"), _q("dev", deserved="6", parent="eng"),
            _q("ops", deserved="4"), *_job("dev", 8), *_job("ops", 1)]
    ssn, sink = run(objs, HIER)
    c = _cap(ssn)
    assert c.limits["dev"].path == ("root", "eng", "dev")
    assert c.limits["dev"].real_capability["cpu"] == 4000     # capped by its parent
    dev_binds = sum(1 for k in sink.binds if k.startswith("default/dev-job"))
    assert dev_binds == 4 and c.allocated["eng"]["cpu"] == 4000
    assert "default/ops-job-0" in sink.binds


def test_hierarchy_rejects_jobs_in_inner_queues() -> None:
    objs = [node("a", cpu="10"), _q("eng", deserved="6"), _q("dev", deserved="6", parent="eng"),
            *_job("eng", 1, phase="Pending", min_resources={"cpu": "1"})]
    ssn, sink = run(objs, HIER)
    job = ssn.jobs["default/eng-job"]
    assert sink.binds == {} and job.phase == "Pending"
    assert ssn.fns["job_enqueueable"]["capacity"](job) == REJECT
    assert "not a leaf" in job.job_fit_error


def test_victim_queue_order_prefers_closer_queues() -> None:
    objs = [node("a", cpu="10"), _q("eng"), _q("dev", parent="eng"), _q("web", parent="eng"), _q("ops"),
            *_job("dev", 1), *_job("web", 1, running=1), *_job("ops", 1, running=1)]
    ssn, _ = session(objs, HIER)
    qs = ssn.queues
    assert ssn.victim_queue_order(qs["web"], qs["ops"], qs["dev"]) == -1


def test_closed_queue_gets_nothing() -> None:
    closed = _q("shut", deserved="4")
    closed["status"]["state"] = "Closing"
    objs = [node("a", cpu="10"), closed, *_job("shut", 2), *_job("shut", 1, name="gated", phase="Pending",
                                                                 min_resources={"cpu": "1"})]
    ssn, sink = run(objs, CONF)
    assert sink.binds == {}
    assert ssn.fns["job_enqueueable"]["capacity"](ssn.jobs["default/gated"]) == REJECT
