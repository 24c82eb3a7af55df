"""noderesources: kube's NodeResourcesFit — the fit filter with kube's reasons and the LeastAllocated /
MostAllocated / RequestedToCapacityRatio scores (docs/design/kube-scoring.md §3-§6), over the session's node arrays.

The filter compares with what the node will have free once releasing pods are gone and pipelined ones arrive
(``allocatable − future idle``), so that pipelining onto a node being preempted stays possible, exactly as the
session's own future-idle check does.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from scheduler.framework.api import TaskInfo
from scheduler.framework.arrays import carried_caches
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.runs import RowFn, accounting_alone
from scheduler.framework.session import Session
from scheduler.framework.status import Code, FilterResult
from scheduler.scoring.fit import FitResult, fit_filter, is_ignored
from scheduler.scoring.inputs import ColumnInputs, PodRows, RowInputs, scoring_inputs, scoring_rows
from scheduler.scoring.resource_fit import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    ROW_BY_ROW,
    ScoringStrategy,
    allocated_columns,
    least_allocated_ref,
    most_allocated_ref,
    parse_scoring_strategy,
    score_strategy,
)

__all__ = ["ComputeOf", "NodeResources", "strategy_compute", "strategy_parts", "strategy_scorer"]

NAME = "noderesources"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = (
    "scoringStrategy/type", "scoringStrategy/resources", "scoringStrategy/requestedToCapacityRatio",
    "ignoredResources", "ignoredResourceGroups",
)
IntArray = npt.NDArray[np.int64]
# for a pod: a row-local computation's values on the nodes ``rows`` (every node when None), as RowCache takes it
ComputeOf = Callable[[TaskInfo], Callable[[IntArray | None], IntArray]]


def _names(raw: Any, key: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, Sequence) or isinstance(raw, str) or not all(isinstance(x, str) for x in raw):
        raise ValueError(f"{NAME} argument {key}: must be a list of strings")
    return tuple(raw)


def strategy_scorer(ssn: Session, strategy: ScoringStrategy, name: str) -> Callable[[TaskInfo], IntArray]:
    """A scoring strategy's 0..100 per node over the session's arrays (non-zero cpu/memory defaults, docs/design/kube-scoring.md §2.1),
    memoised per pod signature and recomputed only on nodes changed since the last identical pod; ``name`` names
    the memo, carried from session to session (it reads the node arrays' allocatable, used and non-zero requested
    rows, and besides them the strategy, the resource columns and the pod's requests)."""
    return strategy_parts(ssn, strategy, name)[0]


def strategy_parts(ssn: Session, strategy: ScoringStrategy,
                   name: str) -> tuple[Callable[[TaskInfo], IntArray], Callable[[TaskInfo], RowFn]]:
    """:func:`strategy_scorer`, and its scores on some nodes for a run of a pod (``runs.RowsOf``: each node's
    depends on its row of the arrays alone), node by node with the scalar reference where there is one."""
    arr = ssn.arrays
    (memo,) = carried_caches(ssn.memo, name, arr, (strategy, tuple(arr.columns)), arr.row_inputs(),
                             renewing=ssn.renewing)
    compute_of, rows_of = strategy_compute(ssn, strategy)

    def score(task: TaskInfo) -> IntArray:
        """Read-only, valid until the next pod's: the callers sum or scale the scores at once."""
        return memo.read((task.pod.requests, task.pod.nonzero_requests), compute_of(task))
    return score, rows_of


def strategy_compute(ssn: Session, strategy: ScoringStrategy) -> tuple[ComputeOf, Callable[[TaskInfo], RowFn]]:
    """A scoring strategy's row-local computation for a pod, as a row cache takes it (what a cache of it keeps,
    per pod requests and non-zero requests), and its scores on some nodes for a run of a pod."""
    arr = ssn.arrays
    ref = _REFS.get(strategy.type)
    weights = [r.weight for r in strategy.resources]
    # least and most allocated over one vector per resource where every node keeps every configured resource
    columns = (ColumnInputs(strategy.names, arr.columns, arr.allocatable, non_zero=True) if ref is not None
               else None)

    def compute_of(task: TaskInfo) -> Callable[[IntArray | None], IntArray]:
        lean = columns is not None and columns.usable and columns.active(task.pod)
        # the column form costs less than the scalar reference's from two nodes on
        by_row = 1 if lean else ROW_BY_ROW

        def compute(rows: IntArray | None) -> IntArray:
            if ref is not None and rows is not None and len(rows) <= by_row:
                return _scored_rows(ref, scoring_rows(strategy.names, task.pod, arr.columns, arr.allocatable,
                                                      arr.used, arr.nonzero_requested, rows.tolist(), non_zero=True),
                                    weights)
            if lean and columns is not None:
                alloc_cols, req_cols = columns.read(arr.allocatable, arr.used, arr.nonzero_requested, rows)
                return allocated_columns(strategy.type, alloc_cols, req_cols, columns.pod_request(task.pod), weights)
            sel = slice(None) if rows is None else rows
            alloc, node_req, pod_vec, active = scoring_inputs(
                strategy.names, task.pod, arr.columns, arr.allocatable[sel], arr.used[sel],
                arr.nonzero_requested[sel], non_zero=True)
            return score_strategy(strategy, alloc, node_req + pod_vec[None, :], active)
        return compute

    def rows_of(task: TaskInfo) -> RowFn:
        compute = compute_of(task)
        if ref is None:
            return lambda at: compute(np.array(at, dtype=np.int64)).tolist()
        scalar = ref
        pod = PodRows(strategy.names, task.pod, arr.columns, non_zero=True)

        def rows(at: list[int]) -> list[int]:
            if len(at) > 1:   # the vector form (node by node itself up to where that costs less)
                vector: list[int] = compute(np.array(at, dtype=np.int64)).tolist()
                return vector
            return [scalar([(a, r, weights[k]) for a, r, k in pod.with_pod(arr.allocatable, arr.used,
                                                                            arr.nonzero_requested, i)])
                    for i in at]
        return rows
    return compute_of, rows_of


# the strategies whose vector form scores up to ROW_BY_ROW nodes with these scalar references
_REFS: dict[str, Callable[[Sequence[tuple[int, int, int]]], int]] = {
    LEAST_ALLOCATED: least_allocated_ref, MOST_ALLOCATED: most_allocated_ref}


def _scored_rows(ref: Callable[[Sequence[tuple[int, int, int]]], int], rows: RowInputs,
                 weights: Sequence[int]) -> IntArray:
    """``ref`` on each node's kept resources (allocatable > 0 and active), the pod's request added, as the
    vector form's row-by-row path computes them."""
    pod, on = rows.pod_request, rows.active
    return np.array([ref([(a, r + p, w) for a, r, p, w, o in zip(alloc, req, pod, weights, on, strict=True)
                          if o and a > 0])
                     for alloc, req in zip(rows.allocatable, rows.requested, strict=True)], dtype=np.int64)


def _no_labels(task: TaskInfo) -> Hashable:
    return ()


def _own_node(task: TaskInfo) -> bool:
    return False   # a placement moves its node's row alone


class NodeResources:
    name = NAME

    def __init__(self, args: Arguments) -> None:
        self.strategy = parse_scoring_strategy(args.get("scoringStrategy"), source=f"plugin {NAME}",
                                               field="scoringStrategy")
        self.ignored = _names(args.get("ignoredResources"), "ignoredResources")
        self.ignored_groups = _names(args.get("ignoredResourceGroups"), "ignoredResourceGroups")
        self.weight = args.score_weight()

    def on_session_open(self, ssn: Session) -> None:
        arr = ssn.arrays
        if self.ignored or self.ignored_groups:
            # the session's own resource check (allocate, backfill, preempt) skips them too, as kube's Fit does
            arr.fit_ignored = np.array([is_ignored(c, self.ignored, self.ignored_groups) for c in arr.columns],
                                       dtype=np.bool_)

        def fit(task: TaskInfo, rows: IntArray | None = None) -> FitResult:
            sel = slice(None) if rows is None else rows
            idle = arr.idle[sel] + arr.releasing[sel] - arr.pipelined[sel]
            return fit_filter(task.pod.requests, arr.columns, arr.allocatable[sel], arr.allocatable[sel] - idle,
                              arr.task_count[sel], ignored_resources=self.ignored, ignored_groups=self.ignored_groups)

        def predicate(task: TaskInfo) -> FilterResult:
            res = fit(task)

            def reasons(i: int) -> list[tuple[Code, str]]:
                code = Code.UNRESOLVABLE if res.unresolvable[i] else Code.UNSCHEDULABLE
                return [(code, r) for r in res.reasons(i)]
            return FilterResult(res.mask, lazy=reasons)

        strategy, strategy_rows = strategy_parts(ssn, self.strategy, NAME)

        def score(task: TaskInfo) -> IntArray:
            out: IntArray = strategy(task) * self.weight
            return out

        def score_rows(task: TaskInfo) -> RowFn:
            scores = strategy_rows(task)
            return lambda at: [v * self.weight for v in scores(at)]

        def fit_rows(task: TaskInfo) -> RowFn:
            return lambda at: fit(task, np.array(at, dtype=np.int64)).mask.tolist()

        # each node's fit and score depend on its row of the node arrays alone, and on the pod's requests (its
        # spec): not on its labels
        ssn.add_vector_predicate_fn(NAME, predicate, rows=fit_rows, rows_key=_no_labels, rows_moved=_own_node,
                                    rows_since=accounting_alone)
        ssn.add_vector_score_fn(NAME, score, rows=score_rows, rows_key=_no_labels, rows_moved=_own_node,
                                rows_since=accounting_alone)

    def on_session_close(self, ssn: Session) -> None:
        ssn.arrays.fit_ignored = None


@register_plugin(NAME)
def _build(args: Arguments) -> NodeResources:
    return NodeResources(args)
