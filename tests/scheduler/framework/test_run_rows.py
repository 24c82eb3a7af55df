"""A run's row functions (``scheduler.framework.runs.RowsOf``): whatever a plugin declares for a pod row by row
gives, on any nodes (one, a few, more than its node-by-node forms take, repeated), the values of its vector filter
(passes) or score on those nodes, also after pods were placed on some of them since the functions were made, as a
run of identical pods uses them."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.framework.api import TaskInfo, TaskStatus
from scheduler.framework.evaluate import evaluate_nodes
from scheduler.framework.runs import RowFn, same_pod
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


def _declared(ssn: Session, task: TaskInfo) -> list[tuple[str, str, RowFn]]:
    out = []
    for kind in ("vector_predicate", "vector_score"):
        rows_of = ssn.fns[f"{kind}_rows"]
        for plugin, _ in ssn.enabled(kind):
            declare = rows_of.get(plugin)
            fn = declare(task) if declare is not None else None
            if fn is not None:
                out.append((kind, plugin, fn))
    return out


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
    declared = _declared(ssn, task)
    for _ in range(3):
        for kind, plugin, fn in declared:
            at = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=2 * n + 2), label="at")
            want = _vector(ssn, kind, plugin, task)
            assert fn(at) == [want[i] for i in at], (kind, plugin, at)
        # a pod like it placed where it fits: the functions made before follow the node it changed
        ev = evaluate_nodes(ssn, task, mode="allocate")
        fitting = [i for i in range(n) if ev.feasible[i] and ev.fits_idle[i]]
        others = [t for t in pending if t.status is TaskStatus.PENDING and t is not task and same_pod(t.pod, task.pod)]
        if not fitting or not others:
            return
        Statement(ssn).allocate(others[0], ssn.nodes[data.draw(st.sampled_from(fitting), label="node")])
