"""Runs of identical pods: allocate places them one by one, but evaluates only the nodes each placement changed.

Consecutive pods with the same spec, labels and annotations (replicas of one workload) get the same filter and
score from every plugin on every node, until a placement changes a node.  When every enabled vector filter and
scorer declares, for the pod, that its value on a node depends on that node alone while only such pods come and
go (:data:`RowsOf`), the run keeps the pod's feasibility, resource checks and total score over every node and,
before each pod, recomputes only the nodes the node arrays logged as changed since the previous one.  The choice
among the candidates is :func:`~scheduler.framework.evaluate.select_best`'s, with the same random tie-break, so the
placements are those of the per-pod evaluation (a property test holds the two equal).  Anything else — a plugin
that does not declare it for the pod (spreading, inter-pod affinity, normalised scores), scalar filters or scores,
a best-node vote, a limited node search, ``explain`` — leaves the pod to the per-pod evaluation.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from common.objects import PodView

from .api import NodeInfo, TaskInfo
from .arrays import NodeArrays
from .evaluate import FITS_FUTURE, FITS_IDLE, _top, evaluate_nodes, fit_needs, fit_rows, score_nodes

if TYPE_CHECKING:
    from .session import Session

__all__ = ["IdenticalRun", "RowFn", "RowsOf", "same_pod"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
# A plugin's filter (passes) or score (as it enters the sum) on the nodes ``at``, for one pod, as Python values: a
# run recomputes a few nodes per pod, for which NumPy arrays in and out cost more than the arithmetic.
RowFn = Callable[[list[int]], list[Any]]
# What a plugin registers next to a vector filter or scorer: for a pod, its :data:`RowFn` when the value on a node
# depends on that node alone while only pods identical to it are placed or removed (and, for a score, not on which
# nodes are scored), else None.  It may read what it needs of the session once, when asked.
RowsOf = Callable[[TaskInfo], RowFn | None]
# metadata fields that name one pod among identical ones (the creation time too: no plugin that gives RowsOf for a
# pod reads it)
_IDENTITY = frozenset({"name", "uid", "resourceVersion", "generateName", "creationTimestamp", "managedFields"})
_CONDITIONS = frozenset({"conditions"})


def _without(raw: Any, keys: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if k not in keys} if isinstance(raw, Mapping) else {}


_ABSENT = object()


def _alike(a: Any, b: Any, keys: frozenset[str]) -> bool:
    """``_without(a, keys) == _without(b, keys)``, compared entry by entry instead of making the two dicts."""
    if type(a) is not dict or type(b) is not dict:
        return _without(a, keys) == _without(b, keys)
    n = 0
    for k, v in a.items():
        if k in keys:
            continue
        w = b.get(k, _ABSENT)
        if v is not w and (w is _ABSENT or v != w):
            return False
        n += 1
    return n == len(b) - len(keys.intersection(b))


def same_pod(a: PodView, b: PodView) -> bool:
    """Whether two pods are alike for scheduling: the same spec, the same metadata but for their identity and
    creation time, the same status but for its conditions (a failed pod's message)."""
    ra, rb = a.raw, b.raw
    return (ra.get("spec") == rb.get("spec") and _alike(ra.get("metadata"), rb.get("metadata"), _IDENTITY)
            and _alike(ra.get("status"), rb.get("status"), _CONDITIONS))



@dataclass(slots=True)
class _Kept:
    """A run's view of every node for its pod: feasible, fits idle, fits future idle, the total score (read only
    where feasible), and the nodes both feasible and fitting idle (``now``), with how many nodes are feasible and
    how many ``now``."""

    arrays: NodeArrays
    need: list[tuple[int, int]]   # what the resource check compares for the pod (``fit_needs``)
    filters: list[RowFn]
    scores: list[RowFn]
    feasible: BoolArray
    fits_idle: BoolArray
    fits_future: BoolArray
    total: FloatArray
    now: BoolArray
    feasible_count: int
    now_count: int
    seen: int   # how much of the arrays' change log the vectors have taken in
    best: _Best | None = None   # the highest totals among the nodes of ``now`` or of ``feasible``

    def set_row(self, i: int, ok: bool, bits: int, total: float) -> None:
        """Node ``i`` anew: whether it passes every filter and the resource check, the check's bits, its score."""
        idle = (bits & FITS_IDLE) != 0
        now = ok and idle
        self.feasible_count += ok - bool(self.feasible[i])
        self.now_count += now - bool(self.now[i])
        self.feasible[i], self.now[i], self.fits_idle[i] = ok, now, idle
        self.fits_future[i] = bits >= FITS_FUTURE
        self.total[i] = total
        if self.best is not None:
            self.best.changed(i, total, now if self.best.of_now else ok)


class _Best:
    """The nodes of one mask of a run (``now``, or ``feasible``) with the highest total, in node order, kept as nodes
    change instead of a pass over every node per pod: a node of the top whose total drops (the node just chosen)
    or that leaves the mask leaves the top, one that reaches the top's total joins it, one above it makes the top
    anew; so does an empty top (a node leaves or enters the mask only when it changes)."""

    __slots__ = ("of_now", "top", "members", "best")

    def __init__(self, of_now: bool) -> None:
        self.of_now = of_now
        self.top: list[int] = []
        self.members: set[int] = set()
        self.best = 0.0

    def changed(self, i: int, total: float, inside: bool) -> None:
        if not self.top:
            return
        if i in self.members and not (inside and total == self.best):
            del self.top[bisect.bisect_left(self.top, i)]
            self.members.discard(i)
        if inside and total >= self.best and i not in self.members:
            if total > self.best:
                self.top = []   # made anew when read
                return
            bisect.insort(self.top, i)
            self.members.add(i)

    def nodes(self, kept: _Kept) -> list[int]:
        """``_top(total, mask, count)``: the nodes of ``kept``'s mask with the highest total, in node order."""
        if not self.top:
            mask = kept.now if self.of_now else kept.feasible
            count = kept.now_count if self.of_now else kept.feasible_count
            self.top = _top(kept.total, mask, count).tolist()
            self.members = set(self.top)
            self.best = float(kept.total[self.top[0]]) if self.top else 0.0
        return self.top


class IdenticalRun:
    """Allocate's runs of identical pods in one session (one per ``Allocate.execute``).  :meth:`pick` answers for a
    pod like the one evaluated before it; :meth:`forget` must be called when a pod is placed without asking."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self._last: PodView | None = None
        self._kept: _Kept | None = None
        self._refused = False   # the current run's pod cannot be answered (a plugin or the session opts out)

    def forget(self) -> None:
        self._last, self._kept, self._refused = None, None, False

    def pick(self, task: TaskInfo) -> tuple[NodeInfo, bool, bool] | None:
        """The node for ``task`` with whether it fits the node's idle and future idle resources, as the per-pod
        evaluation and ``select_best`` would choose it; None when the run cannot answer (the first pod of a run,
        a pod the plugins do not declare, no feasible node: the per-pod path then says why)."""
        last, self._last = self._last, task.pod
        if last is None or not same_pod(last, task.pod):
            self._kept, self._refused = None, False
            return None
        if self._refused:
            return None
        kept = self._kept if self._kept is not None and self._kept.arrays is self.ssn.arrays else self._seed(task)
        if kept is None:
            self._refused = True
            return None
        self._kept = kept
        self._catch_up(kept)
        return self._choose(kept)

    def _usable(self) -> bool:
        ssn = self.ssn
        sampling = ssn.node_sampling
        n = len(ssn.nodes)
        return (ssn.explain is None and n > 0 and (sampling is None or sampling.nodes_to_find(n) >= n)
                and not ssn.enabled("predicate") and not ssn.enabled("node_order") and not ssn.enabled("best_node"))

    def _declared(self, kind: str, task: TaskInfo) -> list[RowFn] | None:
        rows_of: Mapping[str, RowsOf] = self.ssn.fns[f"{kind}_rows"]
        out: list[RowFn] = []
        for plugin, _ in self.ssn.enabled(kind):
            declare = rows_of.get(plugin)
            fn = declare(task) if declare is not None else None
            if fn is None:
                return None
            out.append(fn)
        return out

    def _seed(self, task: TaskInfo) -> _Kept | None:
        """Every node evaluated and scored for ``task`` (the second pod of a run), when the run may go on."""
        if not self._usable():
            return None
        # the scorers first: their opting out (spreading, normalised scores) is found without reading the session
        scores = self._declared("vector_score", task)
        filters = self._declared("vector_predicate", task) if scores is not None else None
        if filters is None or scores is None:
            return None
        ssn = self.ssn
        ev = evaluate_nodes(ssn, task, mode="allocate")
        # each declared score is the same on a node whichever nodes are scored: score them all once
        total = score_nodes(ssn, task, np.ones(len(ssn.nodes), dtype=np.bool_))
        now = ev.feasible & ev.fits_idle
        return _Kept(ssn.arrays, fit_needs(ssn.arrays, task.vector), filters, scores, ev.feasible.copy(),
                     ev.fits_idle.copy(), ev.fits_future.copy(), total, now, int(np.count_nonzero(ev.feasible)),
                     int(np.count_nonzero(now)), len(ssn.arrays.changes))

    @staticmethod
    def _catch_up(kept: _Kept) -> None:
        """Recompute the nodes changed since the run's last pod (the previous placements' nodes), in Python values
        for the few nodes a placement changes."""
        log = kept.arrays.changes
        if kept.seen == len(log):
            return
        at = sorted(set(log[kept.seen:]))
        kept.seen = len(log)
        bits = fit_rows(kept.arrays, kept.need, at)
        if len(at) == 1:   # a placement's node: the same steps on one value each
            IdenticalRun._catch_up_one(kept, at, bits[0])
            return
        passes = [b >= FITS_FUTURE for b in bits]
        for fn in kept.filters:
            passes = [p and q for p, q in zip(passes, fn(at), strict=True)]
        totals = [0.0] * len(at)
        for fn in kept.scores:
            # in the order score_nodes adds them, each value made a float64 as it is added
            totals = [t + v for t, v in zip(totals, fn(at), strict=True)]
        for i, ok, b, t in zip(at, passes, bits, totals, strict=True):
            kept.set_row(i, bool(ok), b, t)

    @staticmethod
    def _catch_up_one(kept: _Kept, at: list[int], bits: int) -> None:
        """``_catch_up`` of the one node ``at``, whose resource check gave ``bits``.  The filters stop at the first
        that fails, and an infeasible node is not scored: the run reads the total of feasible nodes only."""
        ok = bits >= FITS_FUTURE
        for fn in kept.filters:
            if not ok:
                break
            ok = bool(fn(at)[0])
        total = 0.0
        if ok:
            for fn in kept.scores:
                total = total + fn(at)[0]
        kept.set_row(at[0], ok, bits, total)

    def _choose(self, kept: _Kept) -> tuple[NodeInfo, bool, bool] | None:
        """allocate's choice: nodes the pod fits idle now if any, else every feasible one; ``select_best`` then."""
        if not kept.feasible_count:
            return None
        of_now = kept.now_count > 0
        mask, count = (kept.now, kept.now_count) if of_now else (kept.feasible, kept.feasible_count)
        if count == 1:
            pick = int(np.flatnonzero(mask)[0])
        else:
            best = kept.best
            if best is None or best.of_now != of_now:
                best = kept.best = _Best(of_now)
            top = best.nodes(kept)
            pick = top[0] if len(top) == 1 else top[self.ssn.rng.integers(len(top))]
        return self.ssn.nodes[pick], bool(kept.fits_idle[pick]), bool(kept.fits_future[pick])
