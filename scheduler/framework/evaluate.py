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

from scheduler.scoring.inputs import row_lists

from .api import NodeInfo, TaskInfo
from .arrays import NodeArrays, RowCache, carried_caches
from .status import FAILURE_CODES, PREEMPT_BLOCKING_CODES, Code, FilterResult, FitErrors, Status

if TYPE_CHECKING:
    from .session import ExplainRecord, Session

__all__ = ["Evaluation", "evaluate_nodes", "fit_bits", "fit_floor", "fit_needs", "fit_rows", "fits_now", "score_nodes",
           "select_best",
           "pre_predicate", "single_node"]

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BitsArray = npt.NDArray[np.uint8]
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
        """Each infeasible node's :meth:`statuses`, the first filter that failed each node found for all of them
        in a few NumPy calls rather than by asking every filter about every node."""
        errors = FitErrors(total_nodes=len(self.node_names))
        failing = np.flatnonzero(~self.feasible)
        if not failing.size:
            return errors
        names, results, scalar = self.node_names, self.results, self.scalar
        for i, k in zip(failing.tolist(), self._first_failed(failing).tolist(), strict=True):
            if k < len(results):
                plugin, res = results[k]
                errors.add(names[i], [Status(code, reason, plugin) for code, reason in res.found(i)])
            else:
                errors.add(names[i], scalar.get(i, [])[:1])
        return errors

    def _first_failed(self, nodes: IntArray) -> IntArray:
        """For each of ``nodes``, the position in :attr:`results` of the first filter it did not pass
        (``len(results)`` when it passed them all)."""
        if not self.results:
            return np.zeros(len(nodes), dtype=np.intp)
        failed = np.stack([np.logical_not(res.passed[nodes]) for _, res in self.results] + [np.ones(len(nodes), dtype=np.bool_)])
        first: IntArray = failed.argmax(axis=0)
        return first


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


# one node's resource check as one integer (_fit_rows): fits idle, fits future idle
FITS_IDLE, FITS_FUTURE = 1, 2
# up to this many changed nodes (a few placements since the vector's last check) the check is redone node by node in
# Python integers; past it the changed rows are checked as a vector, which costs about what NumPy calls on a few
# rows do
ROW_BY_ROW = 4
_LEAST = int(np.iinfo(np.int64).min)


def _fit_bits(arr: NodeArrays, vec: IntArray, rows: IntArray | None) -> BitsArray:
    """Whether ``vec`` fits the idle resources (FITS_IDLE) and what will be idle once releasing pods are gone and
    pipelined ones arrived (FITS_FUTURE) of the nodes ``rows`` (every node when None), as bits of one small
    integer (a byte per node: the answers over every node are read with byte-wide operations)."""
    if rows is not None and len(rows) <= ROW_BY_ROW:
        return np.array(_fit_rows(arr, vec, rows), dtype=np.uint8)
    return fit_bits(arr, fit_floor(arr, fit_needs(arr, vec)), rows)


def fit_floor(arr: NodeArrays, need: list[tuple[int, int]]) -> IntArray | None:
    """What :func:`fit_bits` compares each column of a node with for a vector whose :func:`fit_needs` are
    ``need``: every column at once, one not compared asking for the least int64 (which any amount reaches); None
    when nothing is compared."""
    if not need:
        return None
    least = [_LEAST] * len(arr.columns)
    for j, v in need:
        least[j] = v
    return np.array(least, dtype=np.int64)


def fit_bits(arr: NodeArrays, floor: IntArray | None, rows: IntArray | None) -> BitsArray:
    """:func:`_fit_bits` of the nodes ``rows`` (every node when None) as a vector, for the :func:`fit_floor`
    ``floor`` (None: nothing requested that the check does not skip, so every node fits)."""
    if floor is None:
        return np.full(len(arr) if rows is None else len(rows), FITS_IDLE + FITS_FUTURE, dtype=np.uint8)
    idle = arr.idle if rows is None else arr.idle[rows]
    fits_idle = np.logical_and.reduce(idle >= floor, axis=1)
    future = idle + (arr.releasing if rows is None else arr.releasing[rows])
    future -= arr.pipelined if rows is None else arr.pipelined[rows]
    bits: BitsArray = np.multiply(np.logical_and.reduce(future >= floor, axis=1), FITS_FUTURE, dtype=np.uint8)
    bits += fits_idle
    return bits


def _fit_rows(arr: NodeArrays, vec: IntArray, rows: IntArray) -> list[int]:
    """:func:`_fit_bits` of the nodes ``rows``, compared column by column in Python integers."""
    return fit_rows(arr, fit_needs(arr, vec), rows.tolist())


def fit_needs(arr: NodeArrays, vec: IntArray) -> list[tuple[int, int]]:
    """The columns the resource check compares for ``vec`` (those it requests and the check does not skip), with
    the amounts: what :func:`fit_rows` takes."""
    skip = arr.fit_ignored
    return [(j, v) for j, v in enumerate(vec.tolist()) if v > 0 and (skip is None or not skip[j])]


def fit_rows(arr: NodeArrays, need: list[tuple[int, int]], at: list[int]) -> list[int]:
    """:func:`_fit_bits` of the nodes ``at`` for the vector whose :func:`fit_needs` are ``need``, in Python
    integers (what a run of identical pods asks of the few nodes a placement changed)."""
    out = []
    for idle, releasing, pipelined in zip(row_lists(arr.idle, at), row_lists(arr.releasing, at),
                                          row_lists(arr.pipelined, at), strict=True):
        fits_idle = fits_future = True
        for j, v in need:
            fits_idle = fits_idle and idle[j] >= v
            fits_future = fits_future and idle[j] + releasing[j] - pipelined[j] >= v
        out.append((FITS_IDLE if fits_idle else 0) + (FITS_FUTURE if fits_future else 0))
    return out


class FitChecks:
    """A session's resource checks per task vector: whether it fits each node's idle and future idle resources.

    A node's answer depends on that node's row of the node arrays alone, so the answers are a :class:`RowCache` of
    the vector: kept per vector (up to ``slots`` of them), and only the nodes the arrays logged as changed since its
    last check are redone.  In a renewing session the cache is carried from the previous one (:meth:`carried`)."""

    def __init__(self, arrays: NodeArrays, slots: int = 32, rows: RowCache | None = None) -> None:
        self.arrays = arrays
        self._rows = RowCache(arrays, slots) if rows is None else rows

    @classmethod
    def carried(cls, ssn: Session) -> FitChecks:
        """The checks of ``ssn``, their answers carried from the previous renewing session where its rows hold.

        Inputs read per node: idle, releasing and pipelined (all of the arrays' rows are compared); besides them
        the resource columns (the vectors' layout) and the columns the check ignores (part of each key)."""
        arr = ssn.arrays
        (rows,) = carried_caches(ssn.memo, "fitchecks", arr, tuple(arr.columns), arr.row_inputs(),
                                 renewing=ssn.renewing)
        return cls(arr, rows=rows)

    def get(self, vec: IntArray) -> tuple[BoolArray, BoolArray]:
        """Fresh ``(fits idle, fits future idle)`` over every node."""
        arr = self.arrays
        # the ignored columns are set once the session opens; a conf reload makes a new session
        key = vec.tobytes() if arr.fit_ignored is None else vec.tobytes() + arr.fit_ignored.tobytes()
        bits = self._rows.read(key, lambda rows: _fit_bits(arr, vec, rows))
        # the bits are 0 or 1 once masked: a view of them as booleans is the answer
        return (bits & FITS_IDLE).view(np.bool_), bits >= FITS_FUTURE


def fits_now(ssn: Session, task: TaskInfo) -> tuple[BoolArray, BoolArray]:
    """Whether the task fits each node's idle resources, and its future idle ones (:class:`FitChecks`)."""
    checks = ssn.fit_checks
    if checks is None or checks.arrays is not ssn.arrays:
        checks = ssn.fit_checks = FitChecks.carried(ssn)
    return checks.get(task.vector)


def _resource_check(ssn: Session, task: TaskInfo) -> tuple[FilterResult, BoolArray, BoolArray]:
    arr = ssn.arrays
    fits_idle, fits_future = fits_now(ssn, task)
    # read only, as the evaluation's fits_future: the reasons of a node are made when asked for, on its row then
    res = FilterResult(fits_future, lazy=lambda i: [
        (Code.UNSCHEDULABLE, f"Insufficient {arr.first_insufficient(task.vector, arr.future_idle_row(i))}")])
    return res, fits_idle, fits_future


def evaluate_nodes(ssn: Session, task: TaskInfo, *, mode: str = "allocate",
                   candidates: BoolArray | None = None) -> Evaluation:
    """``mode``: ``allocate`` (resource check + predicates, any failure code disqualifies), ``backfill`` (no
    resource check), ``preempt`` (no resource check; only unresolvable/error/wait/skip disqualify)."""
    n = len(ssn.nodes)
    blocking = PREEMPT_BLOCKING_CODES if mode == "preempt" else FAILURE_CODES
    if mode == "allocate":
        res, fits_idle, fits_future = _resource_check(ssn, task)
        feasible = fits_future.copy() if candidates is None else candidates & fits_future
        ev = Evaluation(feasible, fits_idle, fits_future, ssn.node_names, [(RESOURCE_PLUGIN, res)])
    else:
        every = np.ones(n, dtype=np.bool_)
        fits_idle, fits_future = fits_now(ssn, task) if mode == "preempt" else (every, every)
        feasible = every.copy() if candidates is None else candidates.copy()
        ev = Evaluation(feasible, fits_idle, fits_future, ssn.node_names)
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


def score_nodes(ssn: Session, task: TaskInfo, mask: BoolArray, count: int | None = None) -> FloatArray:
    """Per-node total score (only meaningful where ``mask``): the sum of every enabled scorer (docs/design/scheduler.md
    §2.6), in float64 as Volcano sums node-order scores: a fractional score (binpack 50.5) is kept, not truncated.
    ``count``: how many nodes ``mask`` holds, when the caller knows (the scorers read it, ``Session.scoring_count``)."""
    n = len(ssn.nodes)
    total: FloatArray | None = None
    # the leading integer scores, summed in int64 before they are made float64: integers far below 2**53 sum to
    # the same float64 in any order, each partial sum exact
    ints: IntArray | None = None
    explain = ssn.explain is not None
    parts: list[tuple[str, FloatArray]] = []
    # scorers that normalise across nodes (kube's NormalizeScore) do so over the nodes being scored only
    ssn.score_mask = mask
    ssn.score_count = None if count is None else (mask, count)
    try:
        for plugin, fn in ssn.enabled("vector_score"):
            raw = fn(task)
            if total is None and raw.dtype.kind == "i":
                ints = raw if ints is None else np.add(ints, raw, dtype=np.int64)
            elif total is None:   # the first scores as float64: what 0.0 plus each of them gives
                total = np.array(raw if ints is None else ints, dtype=np.float64)
                if ints is not None:
                    total += raw
            else:
                total += raw   # each value cast to float64 as it is added, as np.asarray(raw, float64) would
            if explain:
                parts.append((plugin, np.asarray(raw, dtype=np.float64)))
    finally:
        ssn.score_mask = None
        ssn.score_count = None
    if total is None:
        total = np.zeros(n, dtype=np.float64) if ints is None else np.array(ints, dtype=np.float64)
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
    count = int(np.count_nonzero(mask))
    if count == 0:
        return None
    if count == 1 and ssn.explain is None:
        return ssn.nodes[int(np.flatnonzero(mask)[0])]
    total = score_nodes(ssn, task, mask, count)
    best_fns = ssn.enabled("best_node")
    if best_fns:
        scores = {ssn.nodes[i].name: float(total[i]) for i in np.flatnonzero(mask).tolist()}
        for _, fn in best_fns:
            chosen = fn(task, scores)
            if chosen is not None and chosen in ssn.node_by_name:
                return ssn.node_by_name[chosen]
    top = _top(total, mask, count)
    pick = int(top[0]) if top.size == 1 else int(top[ssn.rng.integers(top.size)])
    return ssn.nodes[pick]


def _top(total: FloatArray, mask: BoolArray, count: int) -> IntArray:
    """The candidates with the highest total, in node order (with every node a candidate, read in place)."""
    if count == len(total):
        return np.flatnonzero(total == total.max())
    # the others' totals below every candidate's: one pass over the nodes, not a gather of the candidates
    among = np.where(mask, total, -np.inf)
    return np.flatnonzero(among == among.max())
