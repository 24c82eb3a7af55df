"""Tasks and groups of one made with their slots set directly (``TaskInfo.filled``, ``JobInfo.single``) are what
the dataclasses' constructors and ``add_task`` make, and renewing one in place notes it as setting a field does;
moving tasks between statuses keeps a job's counts what adding its tasks afresh gives."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.objects import PodView
from common.resources import Resources
from scheduler.framework.api import JobInfo, SingleJob, TaskInfo, TaskStatus, is_untouched, untouch
from tests.scheduler.factories import pod


def _values(status: TaskStatus, best_effort: bool) -> tuple[Any, ...]:
    view = PodView.parse(pod("p", cpu="1"))
    return ("uid-p", "default/p", view, Resources({"cpu": 1000, "pods": 1}), status, "n1", 3, False, "role",
            best_effort, np.arange(3), (100, 200), "n2", True, "message")


def _fields(obj: Any, cls: type) -> dict[str, Any]:
    out = {f.name: getattr(obj, f.name) for f in dataclasses.fields(cls)}
    if "index" in out:
        out["index"] = {s: b for s, b in out["index"].items() if b}
    return out


@pytest.mark.parametrize("status", list(TaskStatus))
def test_a_filled_task_is_what_the_constructor_makes(status: TaskStatus) -> None:
    values = _values(status, False)
    made, want = TaskInfo.filled(values), TaskInfo(*values)
    assert type(made) is TaskInfo
    assert _fields(made, TaskInfo) == _fields(want, TaskInfo)
    assert not is_untouched(made)            # touched until a session build marks it as made
    old = TaskInfo(*_values(TaskStatus.RUNNING, True))
    watch: list[Any] = []
    untouch(old, watch)
    assert TaskInfo.filled(values, old) is old
    assert _fields(old, TaskInfo) == _fields(want, TaskInfo)
    assert watch == [old] and not is_untouched(old)   # noted, as setting a field notes it


@pytest.mark.parametrize("status", list(TaskStatus))
@pytest.mark.parametrize("best_effort", [False, True])
def test_a_group_of_one_is_what_the_constructor_and_add_task_make(status: TaskStatus, best_effort: bool) -> None:
    task = TaskInfo(*_values(status, best_effort))
    want = SingleJob("default/p", "p", "default", "q", 7, 1, {}, Resources(), None,
                     "Pending" if status is TaskStatus.PENDING else "Running", 5.0)
    want.add_task(task)
    made = JobInfo.single("default/p", "p", "default", "q", 7, 5.0, task)
    assert type(made) is SingleJob
    assert _fields(made, JobInfo) == _fields(want, JobInfo)
    assert not is_untouched(made)
    old = JobInfo.single("x/y", "y", "x", "r", 1, 1.0, TaskInfo(*_values(TaskStatus.RUNNING, True)))
    assert isinstance(old, SingleJob)
    old.min_task_member, old.job_fit_error, old.unschedulable = {"r": 1}, "e", True
    watch: list[Any] = []
    untouch(old, watch)
    assert JobInfo.single("default/p", "p", "default", "q", 7, 5.0, task, old) is old
    assert _fields(old, JobInfo) == _fields(want, JobInfo)
    assert watch == [old]


def test_a_new_task_or_job_finds_its_touched_flag_set() -> None:
    """A made object carries the flag the hook reads, so that setting a field does not fail a look-up first."""
    task = TaskInfo(*_values(TaskStatus.PENDING, False))
    job = SingleJob("u", "n", "ns", "q", 0, 1, {}, Resources(), None, "Pending", 0.0)
    for obj in (task, job, TaskInfo.filled(_values(TaskStatus.PENDING, False))):
        assert object.__getattribute__(obj, "_touched") is True


_MOVES = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(list(TaskStatus))), max_size=20)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(list(TaskStatus)), st.booleans(), st.integers(0, 3)), min_size=1,
                max_size=4), _MOVES)
def test_moving_tasks_keeps_what_a_job_made_from_them_holds(made: list[tuple[TaskStatus, bool, int]],
                                                             moves: list[tuple[int, TaskStatus]]) -> None:
    """After any sequence of status moves, a job's counts, allocated total and index are those of a job the tasks
    are added to afresh, and the job noted the change."""
    tasks = []
    for i, (status, best_effort, cpu) in enumerate(made):
        values = list(_values(status, best_effort))
        values[0], values[3] = f"t{i}", Resources({"cpu": cpu})
        tasks.append(TaskInfo.filled(tuple(values)))
    job = SingleJob("default/p", "p", "default", "q", 7, 1, {}, Resources(), None, "Pending", 5.0)
    job.add_tasks(tasks)
    watch: list[Any] = []
    untouch(job, watch)
    for k, status in moves:
        job.update_task_status(tasks[k % len(tasks)], status)
    fresh = SingleJob("default/p", "p", "default", "q", 7, 1, {}, Resources(), None, "Pending", 5.0)
    fresh.add_tasks(tasks)
    got, want = _fields(job, JobInfo), _fields(fresh, JobInfo)
    got["_moved"] = want["_moved"] = False
    got["index"] = {s: set(b) for s, b in got["index"].items()}
    want["index"] = {s: set(b) for s, b in want["index"].items()}
    assert got == want
    assert watch == ([job] if moves else [])
