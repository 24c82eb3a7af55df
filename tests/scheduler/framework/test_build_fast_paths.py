"""The session build's fast paths equal what they replace: a PodGroup job's tasks added at once equal adding them one
by one (allocated total: the same entries in the same order, negative requests included), the reused allocatable
matrix equals one made from the nodes, and a NodeMetric's aggregated usage read on demand equals the full map the
load-aware plugin used to build for every metric."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from common.objects import NodeView, PodView
from common.resources import Resources
from scheduler.framework.api import JobInfo, TaskInfo, TaskStatus
from scheduler.framework.arrays import NodeArrays, allocation_matrix, resource_columns
from scheduler.framework.build import _allocatable
from scheduler.framework.memo import SessionMemo
from scheduler.framework.snapshot import Snapshot
from scheduler.loadaware.args import parse_loadaware_args
from scheduler.loadaware.cache import metric_load
from tests.scheduler.factories import node, pod
from tests.scheduler.loadaware.helpers import GI, metric

_POD = PodView.parse(pod("p", cpu="100m"))
_NAMES = ("cpu", "memory", "pods", "nvidia.com/gpu")


def _task(uid: str, status: TaskStatus, req: dict[str, int], best_effort: bool = False) -> TaskInfo:
    return TaskInfo(uid, "j", _POD, Resources(req), status, "", 0, True, "", best_effort, np.zeros(3, dtype=np.int64))


def _job() -> JobInfo:
    return JobInfo("ns/j", "j", "ns", "default", 0, 1, {}, Resources(), None, "Pending", 0.0)


def _fields(job: JobInfo) -> list[Any]:
    out: list[Any] = []
    for f in dataclasses.fields(job):
        v = getattr(job, f.name)
        if f.name == "index":
            v = {s: list(b) for s, b in v.items() if b}
        elif f.name == "tasks":
            v = list(v)
        out.append(v)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(list(TaskStatus)),
                          st.dictionaries(st.sampled_from(_NAMES), st.integers(-3, 5), max_size=4), st.booleans()),
                max_size=8),
       st.booleans())
def test_adding_tasks_at_once_equals_adding_them_in_turn(draw: list[tuple[TaskStatus, dict[str, int], bool]],
                                                         allocated_before: bool) -> None:
    tasks = [_task(f"t{i % 6}", s, req, be) for i, (s, req, be) in enumerate(draw)]   # some uids twice
    one_by_one, at_once = _job(), _job()
    if allocated_before:
        for job in (one_by_one, at_once):
            job.add_task(_task("x", TaskStatus.RUNNING, {"cpu": 7, "pods": 1}))
    for t in tasks:
        one_by_one.add_task(t)
    at_once.add_tasks(tasks)
    assert _fields(at_once) == _fields(one_by_one)
    assert list(at_once.allocated) == list(one_by_one.allocated)   # entry order too


def test_allocatable_matrix_is_reused_only_for_the_same_nodes_and_columns() -> None:
    views = [NodeView.parse(node(f"n{i}", cpu=c, memory="1Gi")) for i, c in enumerate(("2", "1", "3"))]
    snap = Snapshot.build(views, [])
    memo = SessionMemo()
    columns = resource_columns(["cpu", "memory", "pods"])
    first = _allocatable(memo, snap, columns)
    assert _allocatable(memo, snap, columns) is first
    expect = allocation_matrix({c: j for j, c in enumerate(columns)}, [n.allocatable for n in snap.nodes])
    assert first.tolist() == expect.tolist()
    wider = resource_columns(["cpu", "memory", "pods", "nvidia.com/gpu"])
    assert _allocatable(memo, snap, wider).shape == (3, 4)
    changed = [views[0], NodeView.parse(node("n1", cpu="5", memory="1Gi")), views[2]]
    again = _allocatable(memo, Snapshot.build(changed, []), columns)
    assert again[:, 0].tolist() == [2000, 5000, 3000]
    arrays = NodeArrays(columns, again)
    arrays.idle[0, 0] -= 1            # a session's arrays are its own
    arrays.allocatable[0, 0] -= 1
    assert again[0, 0] == 2000
    assert NodeArrays(columns, [n.allocatable for n in snap.nodes]).allocatable.tolist() == expect.tolist()


def _reference_aggregated(m: Any, names: tuple[str, ...]) -> dict[tuple[str, float], tuple[int, ...]]:
    """The map metric_load used to build: every (kind, duration), and (kind, 0) for the longest duration."""
    out: dict[tuple[str, float], tuple[int, ...]] = {}
    longest: dict[str, float] = {}
    for duration, per in m.aggregated.items():
        for kind, res in per.items():
            out[(kind, duration)] = tuple(res.get(n, 0) for n in names)
            if duration >= longest.get(kind, -1.0):
                longest[kind] = duration
    for kind, duration in longest.items():
        out[(kind, 0.0)] = out[(kind, duration)]
    return out


_KINDS = ("avg", "p50", "p95", "p99")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0, 60, 300, 600, 1800]),
                          st.dictionaries(st.sampled_from(_KINDS), st.tuples(st.integers(1, 4000),
                                                                             st.integers(1, 8)), max_size=3)),
                max_size=4))
def test_aggregated_usage_on_demand_equals_the_full_map(entries: list[tuple[int, dict[str, tuple[int, int]]]]) -> None:
    aggregated = [{"duration": f"{d}s", "usage": {k: {"resources": {"cpu": f"{c}m", "memory": str(g * GI)}}
                                                  for k, (c, g) in per.items()}} for d, per in entries]
    m = metric("n", cpu_milli=1000, memory=GI, aggregated=aggregated)
    args = parse_loadaware_args({})
    names = tuple(args.resource_names)
    expect = _reference_aggregated(m, names)
    load = metric_load(m, args)
    assert load.aggregated == expect
    fresh = metric_load(m, args)
    for kind in _KINDS:
        for duration in (0.0, 60.0, 300.0, 600.0, 1800.0, 900.0):
            assert fresh.aggregate(kind, duration) == expect.get((kind, duration))
            assert fresh.aggregate(kind, duration) == expect.get((kind, duration))   # the kept answer


def test_a_renewed_group_of_one_counts_its_task_as_adding_it_does() -> None:
    for status in TaskStatus:
        for best_effort in (False, True):
            task = _task("t", status, {} if best_effort else {"cpu": 5, "pods": 1})
            task.best_effort = best_effort
            old = JobInfo.single("x/y", "y", "x", "q", 7, 1.0, _task("o", TaskStatus.RUNNING, {"cpu": 1}))
            old.update_task_status(next(iter(old.tasks.values())), TaskStatus.RELEASING)
            renewed = JobInfo.single("ns/j", "j", "ns", "default", 0, 2.0, task, old)
            made = JobInfo.single("ns/j", "j", "ns", "default", 0, 2.0, task)
            assert renewed is old
            assert _fields(renewed) == _fields(made), (status, best_effort)
