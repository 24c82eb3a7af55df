"""Tasks and groups of one made with their slots set directly (``TaskInfo.filled``, ``JobInfo.single``) are what
the dataclasses' constructors and ``add_task`` make, and renewing one in place notes it as setting a field does."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

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
