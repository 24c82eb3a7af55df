"""gang plugin: validity, readiness, pipelining, starving, victim cap, job order, close-time messages."""

from __future__ import annotations

from typing import Any

from scheduler.framework.api import TaskStatus
from scheduler.framework.session import PERMIT, REJECT
from tests.scheduler.factories import node, pod, podgroup, run, session

GANG = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
"""


def _gang(n: int, min_member: int, cpu: str = "3", *, name: str = "g", **pg: Any) -> list[dict[str, Any]]:
    return [podgroup(name, min_member, **pg)] + [pod(f"{name}-w-{i}", cpu=cpu, group=name) for i in range(n)]


def test_all_or_nothing_binds_nothing_and_explains_why() -> None:
    ssn, sink = run([node("a", cpu="4"), node("b", cpu="4"), *_gang(4, 4)], GANG)
    assert sink.binds == {}
    job = ssn.jobs["default/g"]
    assert job.unschedulable
    # two tasks were allocated then discarded (Schedulable), two found no node; the first failing task is named
    assert job.job_fit_error == (
        "2/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; "
        "Pending: 2 Schedulable, 2 Unschedulable. Origin reason is g-w-2: 0/2 nodes are available: "
        "2 Insufficient cpu.")
    # nothing stays reserved on the nodes
    assert (ssn.arrays.used == 0).all() and (ssn.arrays.pipelined == 0).all()


def test_gang_binds_its_minimum_and_is_ready() -> None:
    ssn, sink = run([node("a", cpu="4"), node("b", cpu="4"), *_gang(4, 2)], GANG)
    assert len(sink.binds) == 2 and set(sink.binds.values()) == {"a", "b"}
    job = ssn.jobs["default/g"]
    assert not job.unschedulable and job.job_fit_error == ""


def test_too_few_pods_is_invalid_and_never_allocated() -> None:
    ssn, sink = run([node("a", cpu="8"), *_gang(2, 3, cpu="1")], GANG)
    assert sink.binds == {}
    job = ssn.jobs["default/g"]
    res = ssn.job_valid(job)
    assert res is not None and res.reason == "NotEnoughTasks"
    assert res.message == "Not enough valid tasks for gang-scheduling, valid: 2, min: 3"
    assert job.unschedulable and job.job_fit_error == res.message


def test_min_task_member_by_role() -> None:
    pg = podgroup("r", 2)
    pg["spec"]["minTaskMember"] = {"ps": 1, "worker": 1}
    objs = [node("a", cpu="8"), pg, pod("r-w-0", cpu="1", group="r", labels={"volcano.sh/task-spec": "worker"}),
            pod("r-w-1", cpu="1", group="r", labels={"volcano.sh/task-spec": "worker"})]
    ssn, sink = run(objs, GANG)
    res = ssn.job_valid(ssn.jobs["default/r"])
    assert res is not None and res.reason == "NotEnoughPodsOfTask"
    assert sink.binds == {}
    objs.append(pod("r-p-0", cpu="1", group="r", labels={"volcano.sh/task-spec": "ps"}))
    ssn, sink = run(objs, GANG)
    assert ssn.job_valid(ssn.jobs["default/r"]) is None
    assert "default/r-p-0" in sink.binds and len(sink.binds) >= 2


def test_votes_ready_pipelined_starving() -> None:
    ssn, _ = session([node("a", cpu="4"), *_gang(3, 2, cpu="1")], GANG)
    job = ssn.jobs["default/g"]
    pipelined = ssn.fns["job_pipelined"]["gang"]
    starving = ssn.fns["job_starving"]["gang"]
    assert not ssn.job_ready(job) and pipelined(job) == REJECT and starving(job)
    tasks = ssn.sorted_tasks(list(job.tasks.values()))
    ssn.place(tasks[0], ssn.nodes[0], TaskStatus.PIPELINED)
    assert pipelined(job) == REJECT
    ssn.place(tasks[1], ssn.nodes[0], TaskStatus.ALLOCATED)
    assert pipelined(job) == PERMIT and not starving(job) and not ssn.job_ready(job)
    ssn.place(tasks[2], ssn.nodes[0], TaskStatus.ALLOCATED)
    assert ssn.job_ready(job)


def test_victims_capped_at_ready_minus_min_and_ready_jobs_sort_last() -> None:
    objs = [node("a", cpu="8"), podgroup("v", 2), podgroup("w", 1), podgroup("p", 1),
            pod("p-0", cpu="1", group="p")]
    objs += [pod(f"v-{i}", cpu="1", group="v", node_name="a") for i in range(3)]
    objs += [pod("w-0", cpu="1", group="w", node_name="a")]
    ssn, _ = session(objs, GANG)
    preemptor = next(iter(ssn.jobs["default/p"].tasks.values()))
    cands = [t for t in ssn.nodes[0].tasks.values()]
    victims, vote = ssn.fns["preemptable"]["gang"](preemptor, cands)
    assert vote == PERMIT
    assert [v.name for v in victims] == ["v-0"]
    order = ssn.fns["job_order"]["gang"]
    assert order(ssn.jobs["default/p"], ssn.jobs["default/v"]) == -1
    assert order(ssn.jobs["default/v"], ssn.jobs["default/w"]) == 0


def test_job_fit_error_formula() -> None:
    from scheduler.batch.gang import job_fit_error

    msg = job_fit_error(False, {"Pending": 3, "Running": 1, "Allocated": 0}, 4, {"Unschedulable": 3},
                        "w-1: 0/2 nodes are available: 2 Insufficient cpu.")
    assert msg == ("pod group is not ready, 1 Running, 3 Pending, 4 minAvailable; Pending: 3 Unschedulable. "
                   "Origin reason is w-1: 0/2 nodes are available: 2 Insufficient cpu.")
    assert job_fit_error(True, {"Running": 2}, 0, {}) == "pod group is ready, 0 minAvailable, 2 Running"
