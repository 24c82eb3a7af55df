"""The per-pod path's shortcuts against the steps they stand for."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from common.cluster import EventRecord
from common.objects import NodeView, PodView
from scheduler import binder
from scheduler.framework import runs
from scheduler.framework.api import NodeInfo, TaskInfo, TaskStatus
from scheduler.framework.arrays import NodeArrays
from scheduler.framework.evaluate import FITS_FUTURE, FITS_IDLE, _top
from tests.scheduler.factories import node, pod

COLUMNS = ["cpu", "memory", "pods"]
STATUSES = list(TaskStatus)


def _task(uid: str, status: TaskStatus, vec: list[int]) -> TaskInfo:
    view = PodView.parse(pod(uid))
    return TaskInfo(uid=uid, job="j", pod=view, resreq=view.requests, status=status, node_name="n", priority=0,
                    preemptable=True, role="", best_effort=False, vector=np.array(vec, dtype=np.int64),
                    nonzero=(vec[0], vec[1]))


def _node() -> NodeInfo:
    arrays = NodeArrays(COLUMNS, [{"cpu": 4000, "memory": 8 << 30, "pods": 110}])
    return NodeInfo(NodeView.parse(node("n")), 0, arrays)


def _state(info: NodeInfo) -> tuple[object, ...]:
    a = info.arrays
    return (list(info.tasks), a.idle.tolist(), a.used.tolist(), a.releasing.tolist(), a.pipelined.tolist(),
            a.nonzero_requested.tolist(), a.task_count.tolist(), list(a.changes))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(STATUSES), st.sampled_from(STATUSES),
                          st.booleans()), min_size=1, max_size=12))
def test_restatus_is_remove_then_add(steps: list[tuple[int, TaskStatus, TaskStatus, bool]]) -> None:
    """``NodeInfo.restatus`` leaves the node's task order, accounting and change log as ``remove_task`` in the old
    status then ``add_task`` in the new one do, whether or not the task was on the node."""
    fast, slow = _node(), _node()
    tasks: dict[int, tuple[TaskInfo, TaskInfo]] = {}
    for k, was, now, placed in steps:
        if k not in tasks:
            vec = [100 * (k + 1), 1 << (20 + k), 1]
            tasks[k] = (_task(f"t{k}", was, vec), _task(f"t{k}", was, vec))
        a, b = tasks[k]
        if placed and a.uid not in fast.tasks:
            a.status = b.status = was
            fast.add_task(a)
            slow.add_task(b)
        old = a.status
        slow.remove_task(b)
        b.status = now
        slow.add_task(b)
        a.status = now
        fast.restatus(a, old)
        assert _state(fast) == _state(slow)


def _kept(start: list[tuple[int, bool, bool]]) -> runs._Kept:
    """A kept state of nodes with these totals, feasibility and fits (idle and future alike)."""
    feasible = np.array([ok for _, ok, _ in start])
    idle = np.array([fits for _, _, fits in start])
    return runs._Kept(None, np.zeros(3, dtype=np.int64), [], [], [], [],  # type: ignore[arg-type]
                      feasible.copy(), idle.copy(), idle.copy(), np.array([float(t) for t, _, _ in start]),
                      feasible & idle, int(feasible.sum()), int((feasible & idle).sum()), 0)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.booleans()), min_size=1, max_size=9),
       st.lists(st.tuples(st.integers(0, 8), st.integers(0, 3), st.booleans(), st.integers(0, 3)), max_size=12))
def test_setting_rows_at_once_is_setting_them_one_by_one(start: list[tuple[int, bool, bool]],
                                                         rows: list[tuple[int, int, bool, int]]) -> None:
    """A catch-up's vector form of the kept state's update: every mask, count and total as node by node."""
    n = len(start)
    at = sorted({i for i, _, _, _ in rows if i < n})
    new = {i: (float(total), ok, bits) for i, total, ok, bits in rows if i < n}
    one, many = _kept(start), _kept(start)
    for i in at:
        one.set_row(i, new[i][1], new[i][2], new[i][0])
    many.set_rows(np.array(at, dtype=np.intp), np.array([new[i][1] for i in at], dtype=np.bool_),
                  np.array([new[i][2] for i in at], dtype=np.uint8), np.array([new[i][0] for i in at]))
    for name in ("feasible", "fits_idle", "fits_future", "total", "now"):
        assert getattr(one, name).tolist() == getattr(many, name).tolist(), name
    assert (one.feasible_count, one.now_count) == (many.feasible_count, many.now_count)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.booleans()), min_size=1, max_size=9),
       st.lists(st.tuples(st.integers(0, 8), st.integers(0, 3), st.booleans(), st.booleans(), st.booleans()),
                max_size=40))
def test_a_runs_best_nodes_are_those_of_a_pass_over_every_node(
        start: list[tuple[int, bool, bool]], steps: list[tuple[int, int, bool, bool, bool]]) -> None:
    """The top a run keeps as nodes change (few distinct totals: many ties) is, whenever read, ``_top`` over
    every node of its mask, for either mask."""
    n = len(start)
    kept = _kept(start)
    for of_now in (True, False):
        kept.best = runs._Best(of_now)
        for i, total, ok, fits, read in steps:
            if i >= n:
                continue
            kept.set_row(i, ok, (FITS_IDLE if fits else 0) + FITS_FUTURE, float(total))
            mask = kept.now if of_now else kept.feasible
            if read and mask.any():
                assert kept.best.nodes(kept) == _top(kept.total, mask, int(mask.sum())).tolist()


@given(st.lists(st.text(max_size=3), min_size=9, max_size=9))
def test_a_bind_event_is_what_the_constructor_makes(values: list[str]) -> None:
    """The binder's event, its slots set one by one, is the ``EventRecord`` its constructor makes of the same
    values, field by field (a fresh ``extra`` of its own each)."""
    kind, name, namespace, reason, message, type_, uid, component, action = values
    made = binder._event(kind, name, namespace, reason, message, type_, uid, component, action)
    direct = EventRecord(kind=kind, name=name, namespace=namespace, reason=reason, message=message, type=type_,
                         uid=uid, component=component, action=action)
    assert type(made) is EventRecord and made == direct and repr(made) == repr(direct)
    assert made.extra is not binder._event(*values).extra
