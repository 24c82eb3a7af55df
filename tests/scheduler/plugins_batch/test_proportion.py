"""proportion plugin: deserved shares, queue order, overused/allocatable/preemptive, reclaim and admission."""

from __future__ import annotations

from typing import Any

import pytest

from common.resources import Resources
from scheduler.framework.session import PERMIT, REJECT
from scheduler.plugins.proportion import Proportion
from tests.scheduler.factories import node, pod, podgroup, queue, run, session

CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: proportion
"""
GI = 1024**3


def _prop(ssn: Any) -> Proportion:
    p = ssn.plugins["proportion"]
    assert isinstance(p, Proportion)
    return p


def _job(q: str, n: int, cpu: str = "1", *, running: int = 0, **pg: Any) -> list[dict[str, Any]]:
    name = f"{q}-job"
    out = [podgroup(name, 1, queue=q, **pg)]
    out += [pod(f"{name}-{i}", cpu=cpu, memory="1Gi", group=name, node_name="a" if i < running else "")
            for i in range(n)]
    return out


@pytest.mark.parametrize(("weights", "demand", "extra", "expected_cpu"), [
    # equal weights, both hungry: half each
    ((1, 1), (10, 10), {}, (5000, 5000)),
    # 1:3 split
    ((1, 3), (10, 10), {}, (2500, 7500)),
    # a small request is met and the rest flows to the hungry queue (water-filling)
    ((1, 1), (2, 10), {}, (2000, 8000)),
    # capability caps q0 at 3 cpu; q1 takes the remainder
    ((1, 1), (10, 10), {"capability": {"cpu": "3"}}, (3000, 7000)),
])
def test_water_filled_deserved(weights: tuple[int, int], demand: tuple[int, int], extra: dict[str, Any],
                               expected_cpu: tuple[int, int]) -> None:
    objs: list[dict[str, Any]] = [node("a", cpu="10", memory="100Gi", pods=100)]
    q0 = queue("q0", weights[0], **extra)
    objs += [q0, queue("q1", weights[1])]
    objs += _job("q0", demand[0]) + _job("q1", demand[1])
    ssn, _ = session(objs, CONF)
    attrs = _prop(ssn).attrs
    assert (attrs["q0"].deserved["cpu"], attrs["q1"].deserved["cpu"]) == expected_cpu
    assert attrs["q0"].request == Resources(cpu=demand[0] * 1000, memory=demand[0] * GI, pods=demand[0])


def test_guarantee_floors_deserved_and_counts_queues_without_jobs() -> None:
    g = queue("g")
    g["spec"]["guarantee"] = {"resource": {"cpu": "4"}}
    idle = queue("idle")
    idle["spec"]["guarantee"] = {"resource": {"cpu": "2"}}
    objs = [node("a", cpu="10", memory="100Gi"), g, queue("o"), idle, *_job("g", 1), *_job("o", 20)]
    ssn, _ = session(objs, CONF)
    attrs = _prop(ssn).attrs
    assert "idle" not in attrs
    assert attrs["g"].deserved["cpu"] == 4000          # floored by its guarantee although it asks for 1
    # o's real capability leaves the guarantees of g and idle aside: 10 - 6 = 4 cpu
    assert attrs["o"].real_capability["cpu"] == 4000
    assert attrs["o"].deserved["cpu"] == 4000


def test_allocation_stops_at_deserved_and_queue_order_follows_share() -> None:
    objs = [node("a", cpu="8", memory="64Gi"), queue("q0"), queue("q1"), *_job("q0", 10), *_job("q1", 2)]
    ssn, sink = run(objs, CONF)
    per_queue = {q: sum(1 for k in sink.binds if k.startswith(f"default/{q}-")) for q in ("q0", "q1")}
    # q1 needs 2, so q0 deserves 6 of 8 and is overused at 6
    assert per_queue == {"q0": 6, "q1": 2}
    attrs = _prop(ssn).attrs
    assert attrs["q0"].deserved["cpu"] == 6000 and attrs["q0"].share == pytest.approx(1.0)
    big = next(t for t in ssn.jobs["default/q0-job"].tasks.values() if not t.node_name)
    assert not ssn.allocatable(ssn.queues["q0"], big) and not ssn.preemptive(ssn.queues["q0"], big)
    # not overused: deserved memory and pods (10 requested) are not all reached, only cpu is
    assert not ssn.overused(ssn.queues["q0"])
    attrs["q0"].allocated = attrs["q0"].deserved
    assert ssn.overused(ssn.queues["q0"])


def test_queue_priority_beats_share() -> None:
    hi = queue("hi")
    hi["spec"]["priority"] = 10
    objs = [node("a", cpu="8", memory="64Gi"), hi, queue("lo"), *_job("hi", 4, running=4), *_job("lo", 4)]
    ssn, _ = session(objs, CONF)
    assert ssn.queue_order(ssn.queues["hi"], ssn.queues["lo"]) == -1


def test_closed_queue_neither_admits_nor_allocates() -> None:
    closed = queue("c")
    closed["status"]["state"] = "Closed"
    objs = [node("a", cpu="8", memory="64Gi"), closed, *_job("c", 2, phase="Pending", min_resources={"cpu": "1"}),
            podgroup("free", 1, queue="c", phase="Pending"), pod("free-0", group="free")]
    ssn, sink = run(objs, CONF)
    assert sink.binds == {} and ssn.jobs["default/c-job"].phase == "Pending"
    assert ssn.fns["job_enqueueable"]["proportion"](ssn.jobs["default/c-job"]) == REJECT
    # a group without minResources is admitted without a vote (as in Volcano) but a closed queue never allocates
    assert ssn.jobs["default/free"].phase == "Inqueue"


def test_admission_against_real_capability_with_message() -> None:
    capped = queue("q", capability={"cpu": "4"})
    objs: list[dict[str, Any]] = [node("a", cpu="8", memory="64Gi"), capped]
    objs += _job("q", 2, phase="Pending", min_resources={"cpu": "3"})
    objs += [podgroup("second", 1, queue="q", phase="Pending", min_resources={"cpu": "2"}),
             pod("second-0", cpu="2", group="second")]
    ssn, sink = run(objs, CONF.replace("enqueue, allocate", "enqueue"))
    first, second = ssn.jobs["default/q-job"], ssn.jobs["default/second"]
    assert first.phase == "Inqueue"            # 3 of 4 cpu reserved by admission
    assert second.phase == "Pending"           # 3 + 2 > 4
    assert "queue resource quota insufficient: insufficient cpu" in second.job_fit_error
    assert _prop(ssn).attrs["q"].inqueue["cpu"] == 3000


def test_reclaimable_takes_only_from_queues_above_deserved() -> None:
    objs = [node("a", cpu="8", memory="64Gi"), queue("over"), queue("fair"), queue("hungry"),
            *_job("over", 6, running=6), *_job("fair", 2, running=2), *_job("hungry", 4)]
    ssn, _ = session(objs, CONF)
    attrs = _prop(ssn).attrs
    assert attrs["over"].deserved["cpu"] < attrs["over"].allocated["cpu"]
    reclaimer = next(iter(ssn.jobs["default/hungry-job"].tasks.values()))
    cands = sorted(ssn.nodes[0].tasks.values(), key=lambda t: t.name)
    victims, vote = ssn.fns["reclaimable"]["proportion"](reclaimer, cands)
    names = [v.name for v in victims]
    assert vote == PERMIT and names and all(n.startswith("over-") for n in names)
    # each chosen victim brings its queue down; it stops once the queue is within deserved
    left = attrs["over"].allocated["cpu"] - 1000 * len(names)
    assert left <= attrs["over"].deserved["cpu"] < left + 1000


def test_shares_read_between_placements_are_those_of_the_allocations_then() -> None:
    """A queue's share is computed when read: after any placements and removals, it is its allocated over its
    deserved now, and the queue order follows it."""
    from scheduler.batch.proportion import queue_share
    from scheduler.framework.api import TaskStatus

    objs = [node("a", cpu="8", memory="64Gi"), queue("q0"), queue("q1"), *_job("q0", 4), *_job("q1", 4, cpu="2")]
    ssn, _ = session(objs, CONF)
    attrs = _prop(ssn).attrs
    tasks = [t for job in ssn.jobs.values() for t in job.tasks.values()]
    for step, task in enumerate(tasks + tasks[1::3]):
        if task.status is TaskStatus.PENDING:
            ssn.place(task, ssn.nodes[0], TaskStatus.ALLOCATED)
        else:
            ssn.unplace(task)
        if step % 3 == 1:
            continue   # not read after every step
        for attr in attrs.values():
            assert attr.share == queue_share(attr.allocated, attr.deserved)
        q0, q1 = ssn.queues["q0"], ssn.queues["q1"]
        s0, s1 = attrs["q0"].share, attrs["q1"].share
        if s0 != s1:
            assert ssn.queue_order(q0, q1) == (-1 if s0 < s1 else 1)
