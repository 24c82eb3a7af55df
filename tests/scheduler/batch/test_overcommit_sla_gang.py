from __future__ import annotations

import pytest

from common.resources import Resources as R
from scheduler.batch.gang import (
    NOT_ENOUGH_PODS_OF_TASK,
    NOT_ENOUGH_TASKS,
    GangJob,
    gang_job_order,
    gang_victims,
    unschedulable_message,
    validity_error,
)
from scheduler.batch.overcommit import enqueue_overused, overcommit_factor, overcommit_idle, overused_message
from scheduler.batch.sla import SlaJob, sla_job_order, sla_reached, waiting_time


@pytest.mark.parametrize(("raw", "expected"), [(None, 1.2), ("1.5", 1.5), (2, 2.0), (0.5, 1.2), ("x", 1.2), (True, 1.2)])
def test_overcommit_factor(raw: object, expected: float) -> None:
    assert overcommit_factor(raw) == expected


def test_overcommit_idle_and_admission() -> None:
    idle = overcommit_idle(R(cpu=10000, memory=1000), [R(cpu=4000), R(cpu=2000, memory=100)], 1.2)
    assert idle == R(cpu=6000, memory=1100)
    assert enqueue_overused(R(cpu=5000), R(cpu=1000, pods=1), idle) == []
    assert enqueue_overused(R(cpu=5500), R(cpu=1000, pods=1), idle) == ["cpu"]
    assert enqueue_overused(R(cpu=99999), R(), idle) == []
    assert overused_message(["cpu", "memory"]) == "resource in cluster is overused: overused cpu, overused memory"


def test_sla_waiting_time_and_order() -> None:
    assert waiting_time({}, None) is None
    assert waiting_time({}, 60.0) == 60.0
    assert waiting_time({"volcano.sh/sla-waiting-time": "5m"}, 60.0) == 300.0
    assert waiting_time({"sla-waiting-time": "1h", "volcano.sh/sla-waiting-time": "5m"}, None) == 3600.0
    with pytest.raises(ValueError, match="PodGroup ns/pg annotation sla-waiting-time"):
        waiting_time({"sla-waiting-time": "soon"}, None, job="ns/pg")
    a, b, none = SlaJob(100.0, 50.0), SlaJob(0.0, 200.0), SlaJob(0.0, None)
    assert sla_job_order(a, b) == -1 and sla_job_order(b, a) == 1
    assert sla_job_order(a, none) == -1 and sla_job_order(none, a) == 1
    assert sla_job_order(none, none) == 0
    assert not sla_reached(a, 149.0) and sla_reached(a, 150.0)
    assert not sla_reached(none, 1e9)


def test_gang_victims_capped_at_ready_minus_min() -> None:
    jobs = {"a": GangJob(ready=4, min_available=2), "b": GangJob(ready=2, min_available=2)}
    assert gang_victims(["a", "b", "a", "a", "a"], jobs) == [0, 2]


def test_gang_order_validity_and_message() -> None:
    assert gang_job_order(False, True) == -1
    assert gang_job_order(True, False) == 1
    assert gang_job_order(True, True) == 0
    assert validity_error(4, 4, {}, {}) is None
    err = validity_error(3, 4, {}, {})
    assert err == (NOT_ENOUGH_TASKS, "Not enough valid tasks for gang-scheduling, valid: 3, min: 4")
    err = validity_error(9, 4, {"ps": 0, "worker": 9}, {"ps": 1})
    assert err is not None and err[0] == NOT_ENOUGH_PODS_OF_TASK
    msg = unschedulable_message(4, 1, 4, "0/2 nodes are available: 2 Insufficient cpu.")
    assert msg == "3/4 tasks in gang unschedulable: 0/2 nodes are available: 2 Insufficient cpu."


@pytest.mark.parametrize("seed", range(300))
def test_gang_victims_never_break_a_gang(seed: int) -> None:
    import random

    rng = random.Random(seed)
    jobs = {f"j{i}": GangJob(ready=rng.randint(0, 6), min_available=rng.randint(1, 4)) for i in range(rng.randint(1, 4))}
    preemptees = [job for job, info in jobs.items() for _ in range(info.ready)]
    rng.shuffle(preemptees)
    chosen = gang_victims(preemptees, jobs)
    for job, info in jobs.items():
        taken = sum(1 for i in chosen if preemptees[i] == job)
        assert taken == max(0, info.ready - info.min_available)
        assert info.ready - taken >= min(info.ready, info.min_available)
