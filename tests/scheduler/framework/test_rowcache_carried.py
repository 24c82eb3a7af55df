"""Row caches carried from one session to the next (``scheduler.framework.arrays.carried_caches``) hold, for every
pod signature, what a session computing everything afresh gives: random sequences of Pods, Nodes, NodeMetrics
and PodGroups added, changed and deleted, sessions run (placing pods, within the session, on rows the caches then
follow) and the clock moving, are replayed against the memory cluster; after every event every pod's resource
check, filters and scores in a session opened from what the scheduler kept equal those of a fresh session.  Each
probing session also places a pending pod and evaluates again, so the next session must take back what its caches
saw of a placement that was never made."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from scheduler.engine import Scheduler
from scheduler.framework.api import TaskStatus
from scheduler.framework.arrays import NodeArrays, RowCache, carried_caches
from scheduler.framework.evaluate import fits_now
from scheduler.framework.memo import SessionMemo
from scheduler.framework.session import Session
from tests.scheduler.factories import T0, RecordingSink, conf, node, pod
from tests.scheduler.framework.test_incremental_state import _apply, _event, _metric

# the default conf, with the resource-fit plugin and the most-allocated scorer as well: every carried row cache
CONF = conf("""
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: noderesources
  - name: nodeorder
    arguments:
      mostrequested.weight: 1
  - name: loadaware
""")
FILTERS = ("noderesources", "loadaware")
SCORERS = ("noderesources", "nodeorder", "loadaware")


def _started() -> tuple[MemoryCluster, FakeClock, Scheduler]:
    clock = FakeClock(T0 + 60)
    cluster = MemoryCluster(clock=clock)
    cluster.load([node("n0"), node("n1", cpu="2"), _metric("n0", 500, T0 + 50), _metric("n1", 1500, T0 + 40),
                  pod("w0", cpu="500m", node_name="n0"), pod("w1", cpu="2"), pod("w2", cpu="100m")])
    sched = Scheduler(cluster, CONF, clock=clock)
    sched.start()
    sched.run_once()
    return cluster, clock, sched


def _probe(ssn: Session) -> dict[str, list[Any]]:
    """Per task (whatever its status: its pod is a signature), the values the carried caches give."""
    out: dict[str, list[Any]] = {}
    for uid, task in sorted(ssn.tasks.items()):
        idle, future = fits_now(ssn, task)
        got: list[Any] = [idle.tolist(), future.tolist()]
        got += [ssn.fns["vector_predicate"][name](task).passed.tolist() for name in FILTERS]
        got += [np.asarray(ssn.fns["vector_score"][name](task)).tolist() for name in SCORERS]
        out[uid] = got
    return out


def _place_one(ssn: Session) -> None:
    """Place a pending task on the first node (as allocate would, for the session only) and evaluate again, so
    that the caches see the placement; the next session's cluster never had it."""
    pending = [t for t in ssn.tasks.values() if t.status is TaskStatus.PENDING]
    if pending and ssn.nodes:
        ssn.place(pending[0], ssn.nodes[0], TaskStatus.ALLOCATED)
        _probe(ssn)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_event, min_size=1, max_size=16))
def test_carried_row_caches_equal_a_fresh_computation_after_every_event(events: list[tuple[Any, ...]]) -> None:
    cluster, clock, sched = _started()
    for event in events:
        _apply(event, cluster, clock, sched)
        kept = sched.open_session(renew=True)
        try:
            got = _probe(kept)
            _place_one(kept)
        finally:
            sched.memo.release(kept)
            kept.release()
        fresh = Session(sched.cache.snapshot(), sched.conf, clock=clock, sink=RecordingSink())
        assert got == _probe(fresh), event


def _arrays(n: int) -> NodeArrays:
    return NodeArrays(["cpu", "memory", "pods"], [{"cpu": 4000, "memory": 1 << 33, "pods": 110}] * n)


def _cpu_used(arr: NodeArrays) -> Any:
    return lambda rows: (arr.used[:, 0] if rows is None else arr.used[rows, 0]).copy()


def test_a_carried_cache_recomputes_changed_inputs_and_the_rows_the_last_session_logged() -> None:
    """Only the rows whose inputs differ and those the previous session changed are computed again; another
    ident, or inputs laid out otherwise, start afresh; a session that does not renew carries nothing."""
    memo = SessionMemo()
    memo.rotate()
    memo.claim("first")
    first = _arrays(5)
    (cache,) = carried_caches(memo, "k", first, "ident", first.row_inputs(), renewing=True)
    asked: list[Any] = []

    def compute(arr: NodeArrays) -> Any:
        def rows_of(rows: Any) -> Any:
            asked.append(None if rows is None else rows.tolist())
            return _cpu_used(arr)(rows)
        return rows_of
    cache.get("sig", compute(first))
    first.add(3, first.vector({"cpu": 100}), TaskStatus.ALLOCATED, (100, 0))   # the session's own placement
    memo.release("first")
    memo.rotate()
    memo.claim("second")
    second = _arrays(5)
    second.add(1, second.vector({"cpu": 700}), TaskStatus.RUNNING, (700, 0))   # the cluster's change
    (again,) = carried_caches(memo, "k", second, "ident", second.row_inputs(), renewing=True)
    assert again is cache
    assert again.get("sig", compute(second)).tolist() == [0, 700, 0, 0, 0]
    assert asked == [None, [1, 3]]
    memo.release("second")
    memo.rotate()
    memo.claim("third")
    assert carried_caches(memo, "k", second, "other", second.row_inputs(), renewing=True)[0] is not cache
    memo.release("third")
    memo.rotate()
    assert isinstance(carried_caches(memo, "k", second, "other", second.row_inputs(), renewing=False)[0], RowCache)
    memo.claim("fourth")
    assert carried_caches(memo, "k", _arrays(6), "other", _arrays(6).row_inputs(), renewing=True)[0] is not cache
