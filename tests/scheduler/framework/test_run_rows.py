"""The runs' row functions (``scheduler.framework.runs.RowsOf``): whatever a plugin declares for a pod row by row
gives, on any nodes (one, a few, more than its node-by-node forms take, repeated), the values of its vector filter
(passes) or score on those nodes (with a split score's part made anew for the pod added), also after pods the
plugins declare were placed on some of them since the functions were made, as the runs use them."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework.api import TaskInfo, TaskStatus
from scheduler.framework.evaluate import evaluate_nodes
from scheduler.framework.runs import RowFn, SplitRows
from scheduler.framework.session import Session
from scheduler.framework.statement import Statement
from tests.scheduler.actions.test_identical_runs import clusters
from tests.scheduler.factories import session

# every plugin that declares rows, with each scorer of nodeorder and the load-aware filter and score's options on
CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: noderesources
    arguments:
      scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 2}, {name: memory, weight: 1}]}
  - name: nodeorder
    arguments:
      mostrequested.weight: 2
      balancedresource.weight: 3
  - name: loadaware
    arguments:
      usageThresholds: {cpu: 65, memory: 85}
      prodUsageThresholds: {cpu: 55}
      dominantResourceWeight: 2
      resourceWeights: {cpu: 2, memory: 1}
"""


def _declared(ssn: Session, task: TaskInfo) -> list[tuple[str, str, RowFn | SplitRows | None]]:
    out = []
    for kind in ("vector_predicate", "vector_score"):
        rows_of = ssn.fns[f"{kind}_rows"]
        for plugin, _ in ssn.enabled(kind):
            declare = rows_of.get(plugin)
            out.append((kind, plugin, declare(task) if declare is not None else None))
    return out


def _rows(fn: RowFn | SplitRows, task: TaskInfo, at: list[int]) -> list[Any]:
    """What the runs read of the nodes ``at``: the rows, plus a split score's part made anew for the pod."""
    if not isinstance(fn, SplitRows):
        return fn(at)
    rest = fn.rest(task).tolist()
    return [v + rest[i] for v, i in zip(fn.rows(at), at, strict=True)]


def _vector(ssn: Session, kind: str, plugin: str, task: TaskInfo) -> list[Any]:
    fn = dict(ssn.enabled(kind))[plugin]
    got = fn(task)
    values: list[Any] = (got.passed if kind == "vector_predicate" else got).tolist()
    return values


@settings(max_examples=80, deadline=None)
@given(objects=clusters(), data=st.data())
def test_row_functions_equal_the_vector_forms_as_pods_are_placed(objects: list[dict[str, Any]],
                                                                 data: st.DataObject) -> None:
    ssn, _ = session(objects, CONF)
    n = len(ssn.nodes)
    pending = [t for job in ssn.jobs.values() for t in job.tasks.values() if t.status is TaskStatus.PENDING]
    if not pending:
        return
    task = pending[0]
    declared = [(kind, plugin, fn) for kind, plugin, fn in _declared(ssn, task) if fn is not None]
    for _ in range(3):
        for kind, plugin, fn in declared:
            at = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=2 * n + 2), label="at")
            want = _vector(ssn, kind, plugin, task)
            assert _rows(fn, task, at) == [want[i] for i in at], (kind, plugin, at)
        # a pod the plugins declare (of any signature) placed where it fits: the functions made before follow the
        # node it changed
        others = [t for t in pending if t.status is TaskStatus.PENDING and t is not task
                  and all(fn is not None for _, _, fn in _declared(ssn, t))]
        if not others:
            return
        other = data.draw(st.sampled_from(others), label="placed")
        ev = evaluate_nodes(ssn, other, mode="allocate")
        fitting = [i for i in range(n) if ev.feasible[i] and ev.fits_idle[i]]
        if not fitting:
            return
        Statement(ssn).allocate(other, ssn.nodes[data.draw(st.sampled_from(fitting), label="node")])
