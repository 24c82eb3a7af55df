"""Memoised row-local scores must equal a fresh computation after any sequence of placements and removals."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from common.clock import FakeClock, to_rfc3339
from scheduler.framework.api import TaskStatus
from scheduler.framework.arrays import RowCache
from scheduler.framework.evaluate import evaluate_nodes, score_nodes
from scheduler.framework.session import Session
from scheduler.framework.snapshot import Snapshot
from tests.scheduler.factories import T0, RecordingSink, conf, node, pod

CONF = """
actions: "allocate"
tiers:
- plugins:
  - name: nodeorder
  - name: noderesources
  - name: loadaware
"""


def _metric(name: str, cpu_milli: int) -> dict[str, Any]:
    return {"apiVersion": "slo.loadwise.io/v1alpha1", "kind": "NodeMetric", "metadata": {"name": name},
            "status": {"updateTime": to_rfc3339(T0 - 10),
                       "nodeMetric": {"nodeUsage": {"resources": {"cpu": f"{cpu_milli}m", "memory": "1Gi"}}}}}


def test_rowcache_recomputes_only_changed_rows() -> None:
    ssn = Session(Snapshot.from_objects([node(f"n{i}") for i in range(4)]), conf(CONF), clock=FakeClock(T0),
                  sink=RecordingSink())
    calls: list[object] = []

    def compute(rows: np.ndarray | None) -> np.ndarray:
        calls.append(None if rows is None else rows.tolist())
        src = ssn.arrays.used[:, 0] if rows is None else ssn.arrays.used[rows, 0]
        return src.copy()

    memo = RowCache(ssn.arrays)
    assert memo.get("k", compute).tolist() == [0, 0, 0, 0]
    ssn.arrays.add(2, ssn.arrays.vector({"cpu": 500}), TaskStatus.RUNNING, (500, 0))
    assert memo.get("k", compute).tolist() == [0, 0, 500, 0]
    assert calls == [None, [2]]
    memo.get("other", compute)
    assert calls[-1] is None


@pytest.mark.parametrize("shapes", [[("300m", "256Mi")], [("300m", "256Mi"), ("1", "1Gi"), ("150m", "2Gi")]])
def test_memoised_scores_match_fresh_sessions(shapes: list[tuple[str, str]]) -> None:
    """Several signatures taking turns: each one's memo must follow the placements made while others were used."""
    rng = np.random.default_rng(7)
    cores = [int(rng.integers(2, 9)) for _ in range(12)]
    nodes = [node(f"n{i}", cpu=str(c)) for i, c in enumerate(cores)]
    # real usage near the default thresholds: the load-aware filter fails some nodes, more as pods are placed
    nodes += [_metric(f"n{i}", int(c * 1000 * rng.uniform(0.3, 0.7))) for i, c in enumerate(cores)]
    shape = {f"p{j}": shapes[j % len(shapes)] for j in range(30)}
    pods = [pod(name, cpu=c, memory=m) for name, (c, m) in shape.items()]
    ssn = Session(Snapshot.from_objects(nodes + pods), conf(CONF), clock=FakeClock(T0), sink=RecordingSink())
    pending = sorted((t for t in ssn.tasks.values() if t.status is TaskStatus.PENDING), key=lambda t: int(t.name[1:]))
    placed = []
    failing = 0
    for k, task in enumerate(pending):
        mask = evaluate_nodes(ssn, task).feasible
        got = score_nodes(ssn, task, mask)
        # a fresh session over the same state, with nothing memoised
        fresh_objs = nodes + [pod(t.name, *shape[t.name], node_name=t.node_name) for t in placed]
        fresh_objs.append(pod(task.name, *shape[task.name]))
        fresh = Session(Snapshot.from_objects(fresh_objs), conf(CONF), clock=FakeClock(T0), sink=RecordingSink())
        ftask = next(t for t in fresh.tasks.values() if t.name == task.name)
        want = score_nodes(fresh, ftask, evaluate_nodes(fresh, ftask).feasible)
        assert mask.tolist() == evaluate_nodes(fresh, ftask).feasible.tolist(), k
        assert got[mask].tolist() == want[mask].tolist(), k
        failing += int((~mask).sum())
        i = int(rng.integers(len(ssn.nodes)))
        ssn.place(task, ssn.nodes[i], TaskStatus.ALLOCATED)
        placed.append(task)
        if k % 5 == 4:   # and sometimes take one back
            back = placed.pop(int(rng.integers(len(placed))))
            ssn.unplace(back)
    assert failing > 0   # the filters were exercised, not only the scores


def test_changed_rows_are_read_once_per_log_range() -> None:
    """Row caches brought up to date at the same log position share one reading of the rows changed since; the
    answer follows the log as it grows."""
    ssn = Session(Snapshot.from_objects([node(f"n{i}") for i in range(4)]), conf(CONF), clock=FakeClock(T0),
                  sink=RecordingSink())
    arr = ssn.arrays
    for i in (2, 0, 2):
        arr.add(i, arr.vector({"cpu": 100}), TaskStatus.RUNNING, (100, 0))
    first = arr.changed_since(0)
    assert first.tolist() == [0, 2] and arr.changed_since(0) is first and not first.flags.writeable
    arr.add(3, arr.vector({"cpu": 100}), TaskStatus.RUNNING, (100, 0))
    assert arr.changed_since(0).tolist() == [0, 2, 3] and arr.changed_since(3).tolist() == [3]


def test_read_is_get_without_the_copy() -> None:
    """``read`` gives the kept values themselves, read-only, in the dtype the computation gave; ``get`` a copy."""
    from scheduler.framework.arrays import NodeArrays

    arr = NodeArrays(["cpu", "memory", "pods"], [{"cpu": 1000, "memory": 1, "pods": 1}] * 5)
    cache = RowCache(arr)

    def compute(rows: np.ndarray | None) -> np.ndarray:
        idle = arr.idle[:, 0] if rows is None else arr.idle[rows, 0]
        return (idle // 100).astype(np.uint8)
    seen = cache.read("k", compute)
    assert seen.dtype == np.uint8 and not seen.flags.writeable and seen.tolist() == [10] * 5
    copy = cache.get("k", compute)
    copy[:] = 0
    arr.add(2, np.array([500, 0, 1], dtype=np.int64), TaskStatus.ALLOCATED, (500, 0))
    assert cache.read("k", compute).tolist() == [10, 10, 5, 10, 10]
