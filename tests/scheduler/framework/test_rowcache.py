"""Memoised row-local scores must equal a fresh computation after any sequence of placements and removals."""

from __future__ import annotations

import numpy as np

from common.clock import FakeClock
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


def test_memoised_scores_match_fresh_sessions() -> None:
    rng = np.random.default_rng(7)
    nodes = [node(f"n{i}", cpu=str(int(rng.integers(2, 9)))) for i in range(12)]
    pods = [pod(f"p{j}", cpu="300m", memory="256Mi") for j in range(30)]
    ssn = Session(Snapshot.from_objects(nodes + pods), conf(CONF), clock=FakeClock(T0), sink=RecordingSink())
    pending = [t for t in ssn.tasks.values() if t.status is TaskStatus.PENDING]
    placed = []
    for k, task in enumerate(pending):
        mask = evaluate_nodes(ssn, task).feasible
        got = score_nodes(ssn, task, mask)
        # a fresh session over the same state, with nothing memoised
        fresh_objs = nodes + [pod(t.name, cpu="300m", memory="256Mi", node_name=t.node_name) for t in placed]
        fresh_objs.append(pod(task.name, cpu="300m", memory="256Mi"))
        fresh = Session(Snapshot.from_objects(fresh_objs), conf(CONF), clock=FakeClock(T0), sink=RecordingSink())
        ftask = next(t for t in fresh.tasks.values() if t.name == task.name)
        want = score_nodes(fresh, ftask, evaluate_nodes(fresh, ftask).feasible)
        assert got[mask].tolist() == want[mask].tolist(), k
        i = int(rng.integers(len(ssn.nodes)))
        ssn.place(task, ssn.nodes[i], TaskStatus.ALLOCATED)
        placed.append(task)
        if k % 5 == 4:   # and sometimes take one back
            back = placed.pop(int(rng.integers(len(placed))))
            ssn.unplace(back)
