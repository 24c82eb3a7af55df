"""allocate with gangs and queues: all-or-nothing placement, pipelining while victims terminate, missing queues."""

from __future__ import annotations

from typing import Any

from scheduler.batch.writeback import podgroup_status
from scheduler.framework.api import TaskStatus
from tests.scheduler.actions.helpers import FULL, gang
from tests.scheduler.factories import T0, node, pod, podgroup, run

NOW = "2023-11-14T22:14:20Z"


def test_two_gangs_compete_and_only_a_whole_one_is_bound() -> None:
    # 6 cpu free; gang a needs 4 × 1, gang b needs 4 × 1: exactly one whole gang fits, never 3 + 3
    objs: list[dict[str, Any]] = [node("n1", cpu="3"), node("n2", cpu="3")]
    objs += gang("a", 4, 4, created=T0) + gang("b", 4, 4, created=T0 + 1)
    ssn, sink = run(objs, FULL)
    per_job = {j: sum(1 for k in sink.binds if k.startswith(f"default/{j}-")) for j in ("a", "b")}
    assert sorted(per_job.values()) == [0, 4]
    loser = "b" if per_job["a"] == 4 else "a"
    job = ssn.jobs[f"default/{loser}"]
    assert job.unschedulable and job.job_fit_error.startswith("4/4 tasks in gang unschedulable: ")
    # nothing of the loser was bound and nobody was evicted for it (equal priorities)
    assert not job.tasks_in(TaskStatus.BINDING) and sink.evictions == []
    assert (ssn.arrays.idle[:, 0] >= 0).all()


def test_gang_larger_than_min_binds_min_then_fills() -> None:
    objs = [node("n1", cpu="5"), *gang("g", 8, 3)]
    _, sink = run(objs, FULL)
    assert len(sink.binds) == 5


def test_pipelines_onto_capacity_being_released_and_binds_next_session() -> None:
    terminating = pod("old", cpu="3", node_name="n1")
    terminating["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:00Z"
    objs = [node("n1", cpu="4"), terminating, pod("keep", cpu="1", node_name="n1"), *gang("g", 2, 2, cpu="1")]
    ssn, sink = run(objs, FULL)
    job = ssn.jobs["default/g"]
    # nothing fits what is idle now; both tasks wait for the releasing pod, reserved but not bound
    assert sink.binds == {} and sink.evictions == []
    assert [t.status for t in job.tasks.values()] == [TaskStatus.PIPELINED, TaskStatus.PIPELINED]
    assert ssn.arrays.pipelined[0, 0] == 2000
    status = podgroup_status(job, {"phase": "Inqueue"}, session_uid="s", now=NOW)
    assert status["phase"] == "Inqueue"
    # the releasing pod is gone in the next snapshot: the gang binds whole
    objs = [o for o in objs if o is not terminating]
    _, sink = run(objs, FULL)
    assert sorted(sink.binds) == ["default/g-0", "default/g-1"]


def test_partial_idle_partial_future_is_not_bound() -> None:
    terminating = pod("old", cpu="2", node_name="n1")
    terminating["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:00Z"
    objs = [node("n1", cpu="3"), terminating, *gang("g", 2, 2, cpu="1")]
    ssn, sink = run(objs, FULL)
    statuses = sorted(t.status.value for t in ssn.jobs["default/g"].tasks.values())
    assert sink.binds == {} and statuses == ["Allocated", "Pipelined"]


def test_missing_queue_stays_pending_with_a_clear_reason() -> None:
    objs = [node("n1", cpu="8"), *gang("lost", 1, 1, queue="nope", phase="Pending")]
    ssn, sink = run(objs, FULL)
    job = ssn.jobs["default/lost"]
    assert sink.binds == {} and job.phase == "Pending"
    assert ssn.missing_queue == {"default/lost": "nope"}
    assert "queue 'nope' of job default/lost does not exist" in job.job_fit_error
    status = podgroup_status(job, {"phase": "Pending"}, session_uid="s", now=NOW)
    assert status["phase"] == "Pending"
    assert "queue 'nope'" in status["conditions"][0]["message"]


def test_pod_without_group_is_a_group_of_one_in_the_default_queue() -> None:
    objs = [node("n1", cpu="2"), pod("solo", cpu="1"), pod("huge", cpu="9")]
    ssn, sink = run(objs, FULL)
    assert sink.binds == {"default/solo": "n1"}
    huge = next(j for j in ssn.jobs.values() if "huge" in j.uid)
    assert huge.queue == "default" and huge.min_available == 1 and huge.unschedulable


def test_unadmitted_group_is_not_allocated() -> None:
    objs = [node("n1", cpu="4"), podgroup("big", 1, phase="Pending", min_resources={"cpu": "100"}),
            pod("big-0", cpu="1", group="big")]
    ssn, sink = run(objs, FULL)
    job = ssn.jobs["default/big"]
    assert sink.binds == {} and job.phase == "Pending"
    assert "overused cpu" in job.job_fit_error or "insufficient cpu" in job.job_fit_error
