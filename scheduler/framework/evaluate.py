"""Evaluate every node for one task with vector arithmetic: the resource check against (future) idle, the plugins'
vectorised predicates, then the plugins' scores summed (docs/design/scheduler.md §2.6, §3.2).  Per-node Python runs only for
scalar plugins, for failure reasons when a message is needed, and for explanations.  A session with a
:class:`~scheduler.framework.sampling.NodeSampling` stops allocate's and preempt's search once enough feasible
nodes were found (docs/design/scheduler.md §2.9)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .api import NodeInfo, TaskInfo
from .status import FAILURE_CODES, PREEMPT_BLOCKING_CODES, Code, FilterResult, FitErrors, Status

if TYPE_CHECKING:
    from .session import ExplainRecord, Session

__all__ = ["Evaluation", "evaluate_nodes", "score_nodes", "select_best", "pre_predicate", "single_node"]

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
RESOURCE_PLUGIN = "noderesources"
SAMPLING_PLUGIN = "nodesToFind"  # the explanation's key for a node a limited search did not reach


@dataclass(slots=True)
class Evaluation:
    """Which nodes pass, and the raw material for the kube-style failure message."""

    feasible: BoolArray
    fits_idle: BoolArray
    fits_future: BoolArray
    node_names: list[str]
    results: list[tuple[str, FilterResult]] = field(default_factory=list)
    scalar: dict[int, list[Status]] = field(default_factory=dict)
    walked: BoolArray | None = None  # the nodes a limited search looked at (None: every node)

    def statuses(self, i: int, *, first_only: bool = True) -> list[Status]:
        out: list[Status] = []
        for plugin, res in self.results:
            ss = res.statuses(i, plugin)
            if ss:
                out.extend(ss)
                if first_only:
                    return out
        out.extend(self.scalar.get(i, ()))
        return out[:1] if first_only and out else out

    def fit_errors(self) -> FitErrors:
        errors = FitErrors(total_nodes=len(self.node_names))
        for i in np.flatnonzero(~self.feasible).tolist():
            errors.add(self.node_names[i], self.statuses(i))
        return errors


def single_node(n: int, i: int) -> BoolArray:
    """A candidate mask holding node ``i`` only."""
    mask = np.zeros(n, dtype=np.bool_)
    mask[i] = True
    return mask


def pre_predicate(ssn: Session, task: TaskInfo) -> Status | None:
    for plugin, fn in ssn.enabled("pre_predicate"):
        st = fn(task)
        if st is not None and st.code is not Code.SUCCESS:
            return Status(st.code, st.reason, st.plugin or plugin)
    return None


def _resource_check(ssn: Session, task: TaskInfo) -> tuple[FilterResult, BoolArray, BoolArray]:
    arr = ssn.arrays
    fits_idle = arr.fits(task.vector, arr.idle)
    future = arr.future_idle()
    fits_future = arr.fits(task.vector, future)
    res = FilterResult(fits_future.copy(), lazy=lambda i: [
        (Code.UNSCHEDULABLE, f"Insufficient {arr.first_insufficient(task.vector, future[i])}")])
    return res, fits_idle, fits_future


def evaluate_nodes(ssn: Session, task: TaskInfo, *, mode: str = "allocate",
                   candidates: BoolArray | None = None) -> Evaluation:
    """``mode``: ``allocate`` (resource check + predicates, any failure code disqualifies), ``backfill`` (no
    resource check), ``preempt`` (no resource check; only unresolvable/error/wait/skip disqualify)."""
    n = len(ssn.nodes)
    names = ssn.node_names
    feasible = np.ones(n, dtype=np.bool_) if candidates is None else candidates.copy()
    ev = Evaluation(feasible, np.ones(n, dtype=np.bool_), np.ones(n, dtype=np.bool_), names)
    blocking = PREEMPT_BLOCKING_CODES if mode == "preempt" else FAILURE_CODES
    if mode == "allocate":
        res, ev.fits_idle, ev.fits_future = _resource_check(ssn, task)
        ev.results.append((RESOURCE_PLUGIN, res))
        feasible &= res.passed
    elif mode == "preempt":
        ev.fits_idle = ssn.arrays.fits(task.vector, ssn.arrays.idle)
        ev.fits_future = ssn.arrays.fits(task.vector, ssn.arrays.future_idle())
    for plugin, fn in ssn.enabled("vector_predicate"):
        res = fn(task)
        ev.results.append((plugin, res))
        if mode == "preempt":
            failing = np.flatnonzero(~res.passed).tolist()
            for i in failing:
                if any(code in blocking for code, _ in res.found(i)):
                    feasible[i] = False
        else:
            feasible &= res.passed
    scalar_fns = ssn.enabled("predicate")

    def passes(i: int) -> bool:
        """The scalar predicates on node ``i``; the first plugin's blocking statuses are kept for the message."""
        node = ssn.nodes[i]
        for plugin, fn in scalar_fns:
            statuses = [s if s.plugin else Status(s.code, s.reason, plugin) for s in fn(task, node)]
            bad = [s for s in statuses if s.code in blocking]
            if bad:
                ev.scalar[i] = bad
                return False
        return True

    # Allocate and preempt stop once enough feasible nodes were found (docs/design/scheduler.md §2.9); backfill and single-node checks
    # look at every node they are given.
    sampling = ssn.node_sampling if candidates is None and mode != "backfill" else None
    if sampling is not None and sampling.nodes_to_find(n) < n:
        found, ev.walked = sampling.search(feasible, passes if scalar_fns else None)
        feasible[:] = found
    elif scalar_fns:
        for i in np.flatnonzero(feasible).tolist():
            if not passes(i):
                feasible[i] = False
    if ssn.explain is not None:
        _explain_filter(ssn, task, ev, candidates)
    return ev


def _explain_filter(ssn: Session, task: TaskInfo, ev: Evaluation, candidates: BoolArray | None) -> None:
    rec = _record(ssn, task)
    rec.filter = {}
    for i, name in enumerate(ev.node_names):
        if candidates is not None and not candidates[i]:
            continue
        entry: dict[str, str] = {}
        statuses = ev.statuses(i, first_only=False)
        for s in statuses:
            entry[s.plugin] = s.reason if s.plugin not in entry else f"{entry[s.plugin]}; {s.reason}"
        if not statuses and ev.walked is not None and not ev.walked[i]:
            # passed the vectorised filters, but the search had found enough nodes before reaching it
            entry[SAMPLING_PLUGIN] = f"not checked: the search stopped after {int(ev.feasible.sum())} feasible nodes"
        rec.filter[name] = entry


def _record(ssn: Session, task: TaskInfo) -> ExplainRecord:
    from .session import ExplainRecord

    assert ssn.explain is not None
    return ssn.explain.setdefault(task.key, ExplainRecord())


def score_nodes(ssn: Session, task: TaskInfo, mask: BoolArray) -> FloatArray:
    """Per-node total score (only meaningful where ``mask``): the sum of every enabled scorer (docs/design/scheduler.md
    §2.6), in float64 as Volcano sums node-order scores: a fractional score (binpack 50.5) is kept, not truncated."""
    n = len(ssn.nodes)
    total = np.zeros(n, dtype=np.float64)
    explain = ssn.explain is not None
    parts: list[tuple[str, FloatArray]] = []
    # scorers that normalise across nodes (kube's NormalizeScore) do so over the nodes being scored only
    ssn.score_mask = mask
    try:
        for plugin, fn in ssn.enabled("vector_score"):
            s = np.asarray(fn(task), dtype=np.float64)
            total += s
            if explain:
                parts.append((plugin, s))
    finally:
        ssn.score_mask = None
    scalar = ssn.enabled("node_order")
    if scalar:
        idx = np.flatnonzero(mask).tolist()
        for plugin, fn in scalar:
            s = np.zeros(n, dtype=np.float64)
            for i in idx:
                s[i] = float(fn(task, ssn.nodes[i]))
            total += s
            if explain:
                parts.append((plugin, s))
    if explain:
        rec = _record(ssn, task)
        rec.scores, rec.total = {}, {}
        for i in np.flatnonzero(mask).tolist():
            name = ssn.nodes[i].name
            rec.scores[name] = {plugin: _number(float(s[i])) for plugin, s in parts}
            rec.total[name] = _number(float(total[i]))
    return total


def _number(value: float) -> float:
    """A score for the explanation: an integral score as an int, a fractional one to 6 decimals."""
    return int(value) if value.is_integer() else round(value, 6)


def select_best(ssn: Session, task: TaskInfo, mask: BoolArray) -> NodeInfo | None:
    """One candidate → it; several → scored, ``BestNodeFn`` first, else the highest total, ties at random."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return None
    if idx.size == 1 and ssn.explain is None:
        return ssn.nodes[int(idx[0])]
    total = score_nodes(ssn, task, mask)
    best_fns = ssn.enabled("best_node")
    if best_fns:
        scores = {ssn.nodes[i].name: float(total[i]) for i in idx.tolist()}
        for _, fn in best_fns:
            chosen = fn(task, scores)
            if chosen is not None and chosen in ssn.node_by_name:
                return ssn.node_by_name[chosen]
    sub = total[idx]
    top = idx[sub == sub.max()]
    pick = int(top[0]) if top.size == 1 else int(top[ssn.rng.integers(top.size)])
    return ssn.nodes[pick]
