"""PodGroup and Queue status computed from a closed session (scheduler/batch/writeback.py)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from common.resources import Resources
from scheduler.batch.lifecycle import PodGroupPhase, status_changed
from scheduler.batch.writeback import (
    QueueAllocation,
    podgroup_event,
    podgroup_phase_after,
    podgroup_status,
    queue_allocated,
    queue_statuses,
)
from scheduler.framework.api import JobInfo, QueueInfo
from tests.scheduler.factories import node, pod, podgroup, queue, run

CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
"""
NOW = "2023-11-14T22:14:20Z"


def _gang(n: int, min_member: int, cpu: str = "3", *, name: str = "g", **pg: Any) -> list[dict[str, Any]]:
    return [podgroup(name, min_member, **pg)] + [pod(f"{name}-w-{i}", cpu=cpu, group=name) for i in range(n)]


def test_unschedulable_gang_stays_inqueue_with_condition_and_warning() -> None:
    ssn, _ = run([node("a", cpu="4"), *_gang(3, 3)], CONF)
    job = ssn.jobs["default/g"]
    status = podgroup_status(job, {"phase": "Inqueue"}, session_uid="s1", now=NOW)
    assert status["phase"] == "Inqueue"
    assert (status["running"], status["succeeded"], status["failed"]) == (0, 0, 0)
    [cond] = status["conditions"]
    assert cond["type"] == "Unschedulable" and cond["status"] == "True" and cond["reason"] == "NotEnoughResources"
    assert cond["transitionID"] == "s1" and cond["message"].startswith("2/3 tasks in gang unschedulable: ")
    ev = podgroup_event(job, status["phase"], status_changed=True)
    assert ev is not None and ev.type == "Warning" and ev.reason == "Unschedulable"
    assert ev.message.startswith("3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending")
    # the same outcome next session differs only in transitionID/time: no write
    again = podgroup_status(job, status, session_uid="s2", now="2023-11-14T22:15:00Z")
    assert not status_changed(status, again)


def test_pending_group_admitted_and_bound_becomes_running() -> None:
    ssn, sink = run([node("a", cpu="8"), *_gang(2, 2, phase="Pending")], CONF)
    assert len(sink.binds) == 2
    job = ssn.jobs["default/g"]
    assert podgroup_phase_after(job) is PodGroupPhase.RUNNING
    status = podgroup_status(job, {"phase": "Pending"}, session_uid="s1", now=NOW)
    assert status["phase"] == "Running"
    assert [c["type"] for c in status["conditions"]] == ["Scheduled"]
    assert status["conditions"][0]["reason"] == "tasks in gang are ready to be scheduled"
    ev = podgroup_event(job, status["phase"], status_changed=True)
    assert ev is not None and (ev.type, ev.reason, ev.message) == ("Normal", "Scheduled", "pod group is ready")
    assert podgroup_event(job, status["phase"], status_changed=False) is None


def test_running_counts_unknown_and_completed() -> None:
    objs = [node("a", cpu="8"), podgroup("g", 3, phase="Running"),
            pod("g-w-0", group="g", node_name="a"), pod("g-w-1", group="g", node_name="a", phase="Succeeded"),
            pod("g-w-2", cpu="64", group="g")]
    ssn, _ = run(objs, CONF)
    job = ssn.jobs["default/g"]
    status = podgroup_status(job, {"phase": "Running"}, session_uid="s", now=NOW)
    # running tasks while the gang is unschedulable in this session: Unknown
    assert job.unschedulable and status["phase"] == "Unknown"
    assert (status["running"], status["succeeded"]) == (1, 1)
    done = [node("a", cpu="8"), podgroup("d", 2, phase="Running"),
            pod("d-w-0", group="d", node_name="a", phase="Succeeded"),
            pod("d-w-1", group="d", node_name="a", phase="Failed")]
    ssn, _ = run(done, CONF)
    status = podgroup_status(ssn.jobs["default/d"], {"phase": "Running"}, session_uid="s", now=NOW)
    assert status["phase"] == "Completed" and (status["succeeded"], status["failed"]) == (1, 1)


def test_invalid_gang_reason() -> None:
    ssn, _ = run([node("a"), *_gang(1, 2, cpu="1")], CONF)
    status = podgroup_status(ssn.jobs["default/g"], {}, session_uid="s", now=NOW)
    assert status["conditions"][0]["reason"] == "NotEnoughTasks"
    assert status["phase"] == "Inqueue"


def test_queue_status_allocated_counts_and_hierarchy() -> None:
    root = queue("root")
    eng = queue("eng")
    eng["spec"]["parent"] = "root"
    dev = queue("dev")
    dev["spec"]["parent"] = "eng"
    closing = queue("old")
    closing["status"]["state"] = "Closing"
    objs = [node("a", cpu="8"), root, eng, dev, closing,
            *_gang(2, 2, cpu="1", name="g", queue="dev"),
            podgroup("r", 1, queue="dev", phase="Running"), pod("r-0", cpu="2", memory="1Gi", group="r", node_name="a"),
            *_gang(1, 1, cpu="100", name="big", queue="eng")]
    ssn, _ = run(objs, CONF)
    alloc = queue_allocated(ssn.jobs.values(), ssn.queues)
    assert alloc["dev"]["cpu"] == 4000 and alloc["dev"]["pods"] == 3
    assert alloc["eng"] == alloc["dev"] and alloc["root"] == alloc["dev"]
    phases = {j.uid: podgroup_phase_after(j) for j in ssn.jobs.values() if j.podgroup is not None}
    statuses = queue_statuses(ssn.jobs.values(), ssn.queues, phases)
    assert statuses["dev"]["running"] == 2 and statuses["dev"]["inqueue"] == 0
    assert statuses["dev"]["allocated"] == {"cpu": "4", "memory": "3Gi", "pods": "3"}
    assert statuses["eng"]["inqueue"] == 1 and statuses["eng"]["state"] == "Open"
    assert statuses["old"]["state"] == "Closed" and statuses["old"]["allocated"] == {}


_AMOUNTS = [Resources(), Resources({"cpu": 500, "pods": 1}), Resources({"cpu": 500, "pods": 1}),
            Resources({"cpu": 2000, "memory": 1 << 30, "pods": 1}), Resources({"nvidia.com/gpu": 1, "pods": 1}),
            Resources({"cpu": -300, "memory": 5})]
_QUEUE_NAMES = ["default", "a", "b", "gone"]


def _queue(name: str) -> QueueInfo:
    return QueueInfo(name, 1, Resources(), Resources(), Resources(), True, 0, "", "Open", 0.0)


def _naive(jobs: list[JobInfo], queues: dict[str, QueueInfo]) -> dict[str, Resources]:
    """What each queue's own jobs hold, summed job by job (no roll-up: no root queue in these cases)."""
    out: dict[str, Resources] = {}
    for name in queues:
        total = Resources()
        for job in jobs:
            if job.queue == name:
                total = total + job.allocated
        out[name] = total
    return out


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.lists(st.tuples(st.integers(0, 9), st.integers(0, len(_QUEUE_NAMES) - 1),
                                             st.integers(0, len(_AMOUNTS) - 1), st.booleans()), max_size=10),
                          st.sets(st.sampled_from(_QUEUE_NAMES[:3]))), min_size=1, max_size=6))
def test_kept_queue_allocation_equals_a_fresh_sum(sessions: list[tuple[list[tuple[int, int, int, bool]], set[str]]]
                                                  ) -> None:
    """Job objects live on from session to session (as taken-over jobs do), changing queue and amount, coming and
    going, listed twice; an amount is one of a few shared objects or an equal copy."""
    kept = QueueAllocation()
    pool = [JobInfo(f"ns/j{i}", f"j{i}", "ns", "default", 0, 1, {}, Resources(), None, "Running", 0.0)
            for i in range(10)]
    for members, names in sessions:
        jobs = []
        for i, q, a, shared in members:
            job = pool[i]
            job.queue = _QUEUE_NAMES[q]
            job.allocated = _AMOUNTS[a] if shared else Resources(_AMOUNTS[a])
            jobs.append(job)
        queues = {n: _queue(n) for n in names}
        want = _naive(jobs, queues)
        assert queue_allocated(jobs, queues, kept) == want
        assert queue_allocated(jobs, queues) == want


def test_kept_queue_allocation_follows_a_job_that_moves_queue() -> None:
    kept = QueueAllocation()
    amount = Resources({"cpu": 1000, "pods": 1})
    queues = {n: _queue(n) for n in "ab"}
    job = JobInfo("ns/j", "j", "ns", "a", 0, 1, {}, Resources(), None, "Running", 0.0)
    job.allocated = amount
    assert queue_allocated([job], queues, kept) == {"a": amount, "b": Resources()}
    job.queue = "b"   # the same amount object, another queue
    assert queue_allocated([job], queues, kept) == {"a": Resources(), "b": amount}
    assert queue_allocated([job, job], queues, kept) == {"a": Resources(), "b": amount + amount}
    assert queue_allocated([job], queues, kept) == {"a": Resources(), "b": amount}
    assert queue_allocated([], queues, kept) == {"a": Resources(), "b": Resources()}
