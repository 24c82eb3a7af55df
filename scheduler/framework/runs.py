"""Runs of alike pods: allocate places pods one by one, but evaluates for each only the nodes changed since the last
pod of its signature.

Pods with the same signature (replicas of one workload, or pods that differ only in what no plugin reads) get the
same filter and score from every plugin on every node, but for what placements change.  When every enabled vector
filter and scorer declares, for the pod, that its value on a node depends on that node alone while only such pods
come and go (:data:`RowsOf`), the runs keep, per signature, the pod's feasibility, resource checks and total score
over every node and, before each of its pods, recompute only the nodes the node arrays logged as changed since the
signature's last pod.  Several signatures are kept at once (the most recently used :data:`SLOTS`), so pods of
a few shapes taking turns each catch up on the placements made since their own last pod.  A scorer may split its
score into such a row-local part and a part made anew for each pod over every node (a normalised score:
:class:`SplitRows`).  The choice among the candidates is :func:`~scheduler.framework.evaluate.select_best`'s, with
the same random tie-break, so the placements are those of the per-pod evaluation (a property test holds the two
equal).  Anything else — a plugin that does not declare it for the pod (inter-pod affinity, hard spreading, most
normalised scores), scalar filters or scores, a best-node vote, a limited node search, ``explain`` — leaves the pod
to the per-pod evaluation, and a pod placed that way (or a statement discarded after one) ends every kept state.

The signature (:func:`signature`) is the pod's spec, its metadata but for its identity, creation time and labels,
its status but for its conditions, and what each declaring plugin says its rows read of the rest
(:data:`RowsKey`: the labels, or what it derives from them); a plugin that says nothing has the labels read.
"""

from __future__ import annotations

import bisect
import marshal
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from common.objects import PodView

from .api import NodeInfo, TaskInfo
from .arrays import NodeArrays
from .carried import CarriedState, opened_state
from .evaluate import (
    FITS_FUTURE,
    FITS_IDLE,
    ROW_BY_ROW,
    _top,
    evaluate_nodes,
    fit_bits,
    fit_floor,
    fit_needs,
    fit_rows,
    score_nodes,
)

if TYPE_CHECKING:
    from scheduler.conf import SchedulerConf

    from .session import Session

__all__ = ["CarriedRuns", "SignatureRuns", "RowFn", "RowsKey", "RowsMoved", "RowsOf", "RowsSince", "SLOTS", "SplitRows",
           "accounting_alone", "signature"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
BitsArray = npt.NDArray[np.uint8]
# A plugin's filter (passes) or score (as it enters the sum) on the nodes ``at``, for one pod, as Python values: a
# run recomputes a few nodes per pod, for which NumPy arrays in and out cost more than the arithmetic.
RowFn = Callable[[list[int]], list[Any]]


@dataclass(frozen=True, slots=True)
class SplitRows:
    """A score that is, on every node, what ``rows`` gives there (depending on that node alone) plus what ``rest``
    gives for the pod over every node, made anew for each pod with the nodes being scored as the session's scoring
    mask (a normalised score, such as the default spreading's).  Integers, as every declared score: the two add
    up to the score whatever the order of the additions."""

    rows: RowFn
    rest: Callable[[TaskInfo], IntArray]


# What a plugin registers next to a vector filter or scorer: for a pod, its :data:`RowFn` when the value on a node
# depends on that node alone while only pods the plugins declare are placed or removed (and, for a score, not on
# which nodes are scored), a scorer's :class:`SplitRows`, else None.  It may read what it needs of the session once,
# when asked: its answer serves every later pod of the signature until the runs are forgotten.
RowsOf = Callable[[TaskInfo], RowFn | SplitRows | None]
# What the rows a plugin declares read of the pod besides its spec and the rest of :func:`signature`'s base (the
# labels, what it derives from them): pods with the same base and the same keys get the same declared rows.
RowsKey = Callable[[TaskInfo], Hashable]
# Whether placing or removing a pod may change the rows a plugin declares for other pods on other nodes than its own
# (a pod with pod affinity terms, say): the kept states then end.  A plugin that says nothing has every pod do so.
RowsMoved = Callable[[TaskInfo], bool]
# For kept states that outlive a session: the nodes whose rows the plugin declares, for any pod, may differ from
# what they were as the previous claiming session opened, besides the nodes whose accounting or view changed (which
# the runs take from the carried state), given whether any node's view changed; None when it cannot tell (nothing
# kept from that session, a change that moves the rows of every node): every kept state then ends.
RowsSince = Callable[[bool], IntArray | None]
# how many signatures' kept states live at once (the most recently used)
SLOTS = 64
# past this many entries of the arrays' change log since a signature's last pod (or this fraction of the nodes, if
# more), its kept state is made anew from the vectors rather than caught up
RESEED_ENTRIES = 64
RESEED_FRACTION = 0.25
# metadata fields that name one pod among alike ones (the creation time too: no plugin that gives RowsOf for a pod
# reads it)
_IDENTITY = frozenset({"name", "uid", "resourceVersion", "generateName", "creationTimestamp", "managedFields"})
_UNKEYED = _IDENTITY | {"labels"}
_CONDITIONS = frozenset({"conditions"})


_NO_NODES: IntArray = np.zeros(0, dtype=np.int64)
_NO_NODES.flags.writeable = False


def accounting_alone(views_moved: bool) -> IntArray:
    """The :data:`RowsSince` of rows that read, of the nodes, only their accounting (which the runs follow)."""
    return _NO_NODES


def _items(raw: Any, keys: frozenset[str]) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in raw.items() if k not in keys] if type(raw) is dict or isinstance(raw, Mapping) else []


def _base(pod: PodView) -> bytes | str:
    """The pod's spec, metadata but for identity, creation time and labels, and status but for its conditions,
    serialised: equal serialisations are equal values (a difference in key order only makes two signatures of one).
    ``marshal``'s format 2 writes values without back-references, so equal values written in the same order give
    the same bytes; the spec is written as its own serialisation (``PodView.spec_bytes`` when the view has it);
    what marshal cannot write (no parsed JSON) is written as text."""
    raw = pod.raw
    meta, status = _items(raw.get("metadata"), _UNKEYED), _items(raw.get("status"), _CONDITIONS)
    try:
        spec = pod.spec_bytes if pod.spec_bytes is not None else marshal.dumps(raw.get("spec"), 2)
        return marshal.dumps((spec, meta, status), 2)
    except ValueError:
        return repr((raw.get("spec"), meta, status))


def _labels(task: TaskInfo) -> Hashable:
    return tuple(sorted(task.pod.labels.items()))


def signature(task: TaskInfo, keys: list[RowsKey | None]) -> Hashable:
    """The pod's signature for the declaring plugins' ``keys`` (None: the plugin gives none, so its rows read the
    labels): pods with equal signatures get the same rows from every declaring plugin."""
    parts = []   # a loop, not a generator: once for every pod the runs are asked about
    for key in keys:
        parts.append(_labels(task) if key is None else key(task))
    return _base(task.pod), tuple(parts)


@dataclass(slots=True)
class _Kept:
    """A signature's view of every node: feasible, fits idle, fits future idle, the total of the row-local scores
    (read only where feasible), and the nodes both feasible and fitting idle (``now``), with how many nodes are
    feasible and how many ``now``; ``rests``: the parts of the scores made anew for each pod (:class:`SplitRows`)."""

    arrays: NodeArrays
    vector: IntArray   # the pod's request vector, and what the resource check compares of it (``fit_needs``)
    need: list[tuple[int, int]]
    filters: list[RowFn]
    scores: list[RowFn]
    rests: list[Callable[[TaskInfo], IntArray]]
    feasible: BoolArray
    fits_idle: BoolArray
    fits_future: BoolArray
    total: FloatArray
    now: BoolArray
    feasible_count: int
    now_count: int
    seen: int   # how much of the arrays' change log the vectors have taken in
    best: _Best | None = None   # the highest totals among the nodes of ``now`` or of ``feasible``
    # the seeding pod's totals with the parts made anew over every node (what its choice reads if every node is a
    # candidate), until that choice
    seeded: FloatArray | None = None
    floor: IntArray | None = None   # the resource check's fit_floor, once a catch-up checks more than a few nodes

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

    def set_rows(self, idx: IntArray, feasible: BoolArray, checks: BitsArray, totals: FloatArray) -> None:
        """:meth:`set_row` of the nodes ``idx`` (distinct), as vectors over them."""
        if self.best is not None:
            for i, ok, b, t in zip(idx.tolist(), feasible.tolist(), checks.tolist(), totals.tolist(), strict=True):
                self.set_row(i, ok, b, t)
            return
        idle = (checks & FITS_IDLE).view(np.bool_)
        now = feasible & idle
        self.feasible_count += int(np.count_nonzero(feasible)) - int(np.count_nonzero(self.feasible[idx]))
        self.now_count += int(np.count_nonzero(now)) - int(np.count_nonzero(self.now[idx]))
        self.feasible[idx], self.now[idx], self.fits_idle[idx] = feasible, now, idle
        self.fits_future[idx] = checks >= FITS_FUTURE
        self.total[idx] = totals


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


@dataclass(frozen=True, slots=True)
class CarriedRuns:
    """What an allocate's runs leave in the carried state for the next claiming session (:meth:`SignatureRuns.settle`):
    the kept states (without their row functions), the nodes each carried one has still to recompute, the
    session's arrays (whose change log is complete once the next session opens), its conf and claim."""

    kept: OrderedDict[Hashable, _Kept | None]
    stale: dict[Hashable, BoolArray]
    arrays: NodeArrays
    conf: SchedulerConf
    claim: int


class SignatureRuns:
    """Allocate's kept states per pod signature (one per ``Allocate.execute``, :meth:`carried`: with those the
    previous session left).  :meth:`pick` answers for a pod from its signature's state (made at the signature's
    first pod, or carried from an earlier session); :meth:`forget` must be called when a pod is placed without
    asking and :meth:`moves` says so, or a statement with such a pod is discarded: the kept rows hold only while the
    pods placed and removed are ones the plugins declare, or ones whose placement changes their own node alone for
    the plugins.  :meth:`settle` ends the action."""

    def __init__(self, ssn: Session, slots: int = SLOTS) -> None:
        self.ssn = ssn
        self.slots = slots
        # per signature, its kept state, or None when the plugins do not declare its pods
        self._kept: OrderedDict[Hashable, _Kept | None] = OrderedDict()
        self._keys: list[RowsKey | None] | None = None   # the declaring plugins' keys, once the runs are usable
        # the kept states carried from an earlier session and not yet used in this one, with the nodes to recompute
        self._stale: dict[Hashable, BoolArray] = {}
        self._state: CarriedState | None = None   # the carried state to leave the kept states in (settle)
        self._moved = False   # whether a placement ended the kept states in this session (forget)

    @classmethod
    def carried(cls, ssn: Session) -> SignatureRuns:
        """The runs for an allocate of ``ssn``, with the kept states the previous claiming session's allocate left in
        the carried state when the session renews it (:meth:`_follow`); :meth:`settle` leaves them for the next."""
        runs = cls(ssn)
        state = opened_state(ssn.memo) if ssn.renewing else None
        if state is not None:
            left, state.runs = state.runs, None   # taken: an action that fails leaves nothing
            runs._state = state
            if left is not None:
                runs._follow(left, state)
        return runs

    def settle(self) -> None:
        """The action is done: leave the kept states in the carried state for the next claiming session, with
        nothing that refers back to this one (the row functions are asked again), unless a placement ended them
        here (one made after it may hold what the cluster will not)."""
        state, self._state = self._state, None
        if state is None or self._moved:
            return
        for kept in self._kept.values():
            if kept is not None:
                kept.filters, kept.scores, kept.rests, kept.seeded = [], [], [], None
        ssn = self.ssn
        state.runs = CarriedRuns(self._kept, self._stale, ssn.arrays, ssn.conf, ssn.memo.claimed_epoch)

    def forget(self) -> None:
        self._kept.clear()
        self._stale.clear()
        self._moved = True

    def moves(self, task: TaskInfo) -> bool:
        """Whether placing or removing ``task`` without the runs may change a kept state beyond its node (which the
        change log names): so says a plugin declaring rows, or one that does not say."""
        ssn = self.ssn
        for kind in ("vector_predicate", "vector_score"):
            moved: Mapping[str, RowsMoved] = ssn.fns[f"{kind}_rows_moved"]
            for plugin, _ in ssn.enabled(kind):
                says = moved.get(plugin)
                if says is None or says(task):
                    return True
        return False

    def pick(self, task: TaskInfo) -> tuple[NodeInfo, bool, bool] | None:
        """The node for ``task`` with whether it fits the node's idle and future idle resources, as the per-pod
        evaluation and ``select_best`` would choose it; None when the runs cannot answer (a pod the plugins do not
        declare, a session that does not allow it, no feasible node: the per-pod path then says why)."""
        keys = self._declaring_keys()
        if keys is None:
            return None
        key = signature(task, keys)
        known = key in self._kept
        kept = self._kept[key] if known else None
        if known and kept is None:   # not declared: nothing placed since that the plugins do not declare
            self._kept.move_to_end(key)
            return None
        if kept is not None and key in self._stale:
            kept = self._rebound(key, kept, task)
        if kept is None or not self._current(kept):
            kept = self._seed(task)
            self._keep(key, kept)
            if kept is None:
                return None
        else:
            self._kept.move_to_end(key)
            self._catch_up(kept)
        return self._choose(kept, task)

    def _keep(self, key: Hashable, kept: _Kept | None) -> None:
        self._kept[key] = kept
        self._kept.move_to_end(key)
        self._stale.pop(key, None)
        if len(self._kept) > self.slots:
            self._stale.pop(self._kept.popitem(last=False)[0], None)

    def _current(self, kept: _Kept) -> bool:
        """Whether the kept state may catch up: the session's arrays, not too far behind."""
        arrays = self.ssn.arrays
        return kept.arrays is arrays and len(arrays.changes) - kept.seen <= self._reseed_past()

    def _reseed_past(self) -> float:
        """How many changed nodes (or change-log entries) a kept state catches up at most: past that, made anew."""
        return max(RESEED_ENTRIES, RESEED_FRACTION * len(self.ssn.arrays))

    # ---- carried from one session to the next ----------------------------------------------------------------------

    def _follow(self, left: CarriedRuns, state: CarriedState) -> None:
        """Take over the kept states ``left`` by the claiming session before this one: each is to recompute, when its
        signature comes again, every node the last session's arrays logged, those whose accounting or view changed
        since (``state``) and those the declaring plugins name; a state past :meth:`_reseed_past` of them ends.
        None are taken when a session came between, the conf is another, this session does not allow runs, the
        node rows were laid out anew or a plugin cannot tell what changed."""
        ssn = self.ssn
        if (left.claim != ssn.memo.previous_claim or state.moved is None
                or (ssn.conf is not left.conf and ssn.conf != left.conf) or self._declaring_keys() is None):
            return
        dirty = self._dirty(left.arrays, state)
        if dirty is None:
            return
        past = self._reseed_past()
        for key, kept in left.kept.items():
            stale = left.stale.get(key)
            stale = dirty.copy() if stale is None else np.logical_or(stale, dirty, out=stale)
            if kept is None or np.count_nonzero(stale) > past:   # undeclared pods are asked again
                continue
            kept.arrays, kept.seen = ssn.arrays, 0
            self._kept[key] = kept
            self._stale[key] = stale

    def _dirty(self, last: NodeArrays, state: CarriedState) -> BoolArray | None:
        """The nodes whose declared rows may differ, for any pod, from what the kept states hold (see
        :meth:`_follow`); None when a declaring plugin cannot tell."""
        ssn = self.ssn
        assert state.moved is not None
        dirty = np.zeros(len(ssn.nodes), dtype=np.bool_)
        if len(last) != len(dirty):
            return None
        dirty[list(state.moved)] = True
        dirty[last.changes] = True
        asked: set[int] = set()
        for kind in ("vector_predicate", "vector_score"):
            since: Mapping[str, RowsSince] = ssn.fns[f"{kind}_rows_since"]
            for plugin, _ in ssn.enabled(kind):
                hook = since.get(plugin)
                if hook is None:
                    return None
                if id(hook) in asked:
                    continue
                asked.add(id(hook))
                rows = hook(state.views_moved)
                if rows is None:
                    return None
                dirty[rows] = True
        return dirty

    def _rebound(self, key: Hashable, kept: _Kept, task: TaskInfo) -> _Kept | None:
        """``key``'s state carried from an earlier session, for this one: its row functions asked again and the
        nodes changed since recomputed (with those this session changed so far); None when the plugins do not
        declare the pod now, or too many nodes changed (made anew then)."""
        stale = self._stale.pop(key)
        declared = self._rows_of(task)
        arrays = self.ssn.arrays
        stale[arrays.changes] = True
        at: list[int] = np.flatnonzero(stale).tolist()
        if declared is None or len(at) > self._reseed_past():
            return None
        kept.filters, kept.scores, kept.rests = declared
        kept.need, kept.seen, kept.best, kept.floor = fit_needs(arrays, kept.vector), len(arrays.changes), None, None
        if at:
            self._recompute(kept, at)
        return kept

    def _declaring_keys(self) -> list[RowsKey | None] | None:
        """Each enabled vector filter's and scorer's :data:`RowsKey` (None: it gives none), in that order, each
        distinct key once; None when the session does not allow runs."""
        if self._keys is None and self._usable():
            fns = self.ssn.fns
            keys = [fns[f"{kind}_rows_key"].get(plugin) for kind in ("vector_predicate", "vector_score")
                    for plugin, _ in self.ssn.enabled(kind)]
            # a plugin's filter and score may share one key: asked once (None once: the labels)
            self._keys = list({id(key): key for key in keys}.values())
        return self._keys

    def _usable(self) -> bool:
        ssn = self.ssn
        sampling = ssn.node_sampling
        n = len(ssn.nodes)
        return (ssn.explain is None and n > 0 and (sampling is None or sampling.nodes_to_find(n) >= n)
                and not ssn.enabled("predicate") and not ssn.enabled("node_order") and not ssn.enabled("best_node"))

    def _declared(self, kind: str, task: TaskInfo) -> list[RowFn | SplitRows] | None:
        rows_of: Mapping[str, RowsOf] = self.ssn.fns[f"{kind}_rows"]
        out: list[RowFn | SplitRows] = []
        for plugin, _ in self.ssn.enabled(kind):
            declare = rows_of.get(plugin)
            fn = declare(task) if declare is not None else None
            if fn is None:
                return None
            out.append(fn)
        return out

    def _rows_of(self, task: TaskInfo) -> tuple[list[RowFn], list[RowFn], list[Callable[[TaskInfo], IntArray]]] | None:
        """The declared filters' and scores' row functions for ``task``, and the scores' parts made anew per pod;
        None when a plugin does not declare the pod."""
        # the scorers first: their opting out (normalised scores) is found without reading the session
        declared = self._declared("vector_score", task)
        filters = self._declared("vector_predicate", task) if declared is not None else None
        plain = [f for f in filters if not isinstance(f, SplitRows)] if filters is not None else []
        if filters is None or declared is None or len(plain) < len(filters):   # a filter's rows are its own
            return None
        scores = [d.rows if isinstance(d, SplitRows) else d for d in declared]
        return plain, scores, [d.rest for d in declared if isinstance(d, SplitRows)]

    def _seed(self, task: TaskInfo) -> _Kept | None:
        """Every node evaluated and scored for ``task`` (its signature's first pod), when the plugins declare it."""
        declared = self._rows_of(task)
        if declared is None:
            return None
        plain, scores, rests = declared
        ssn = self.ssn
        ev = evaluate_nodes(ssn, task, mode="allocate")
        # each declared score is the same on a node whichever nodes are scored: score them all once, and take away
        # the parts made anew per pod (integers: the difference is exact)
        seeded = score_nodes(ssn, task, np.ones(len(ssn.nodes), dtype=np.bool_))
        total = seeded.copy() if rests else seeded
        for rest in rests:
            total -= rest(task)
        now = ev.feasible & ev.fits_idle
        return _Kept(ssn.arrays, task.vector, fit_needs(ssn.arrays, task.vector), plain, scores, rests,
                     ev.feasible.copy(), ev.fits_idle.copy(), ev.fits_future.copy(), total, now,
                     int(np.count_nonzero(ev.feasible)), int(np.count_nonzero(now)), len(ssn.arrays.changes),
                     seeded=seeded if rests else None)

    @staticmethod
    def _catch_up(kept: _Kept) -> None:
        """Recompute the nodes changed since the signature's last pod (the placements made since): in Python values
        for a few, each plugin's vector form on the changed nodes past that (the same values)."""
        kept.seeded = None   # a later pod's choice: the parts made anew are its own
        log = kept.arrays.changes
        if kept.seen == len(log):
            return
        at = sorted(set(log[kept.seen:]))
        kept.seen = len(log)
        SignatureRuns._recompute(kept, at)

    @staticmethod
    def _recompute(kept: _Kept, at: list[int]) -> None:
        """The nodes ``at`` (sorted, distinct) anew: each one's resource check, filters and scores."""
        if len(at) == 1:   # a placement's node: the same steps on one value each
            SignatureRuns._catch_up_one(kept, at, fit_rows(kept.arrays, kept.need, at)[0])
            return
        idx = np.array(at, dtype=np.intp)
        if len(at) <= ROW_BY_ROW:
            bits = np.array(fit_rows(kept.arrays, kept.need, at), dtype=np.uint8)
        else:
            if kept.floor is None:
                kept.floor = fit_floor(kept.arrays, kept.need)
            bits = fit_bits(kept.arrays, kept.floor, idx)
        passes = bits >= FITS_FUTURE
        for fn in kept.filters:
            passes &= fn(at)
        totals = np.zeros(len(at), dtype=np.float64)
        for fn in kept.scores:
            # in the order score_nodes adds them, each value made a float64 as it is added
            totals += fn(at)
        kept.set_rows(idx, passes, bits, totals)

    @staticmethod
    def _catch_up_one(kept: _Kept, at: list[int], bits: int) -> None:
        """``_catch_up`` of the one node ``at``, whose resource check gave ``bits``.  The filters stop at the first
        that fails, and an infeasible node is not scored: the runs read the total of feasible nodes only."""
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

    def _choose(self, kept: _Kept, task: TaskInfo) -> tuple[NodeInfo, bool, bool] | None:
        """allocate's choice: nodes the pod fits idle now if any, else every feasible one; ``select_best`` then."""
        if not kept.feasible_count:
            return None
        of_now = kept.now_count > 0
        mask, count = (kept.now, kept.now_count) if of_now else (kept.feasible, kept.feasible_count)
        if count == 1:
            pick = int(np.flatnonzero(mask)[0])
        else:
            top = self._top(kept, task, mask, count, of_now)
            pick = top[0] if len(top) == 1 else int(top[self.ssn.rng.integers(len(top))])
        return self.ssn.nodes[pick], bool(kept.fits_idle[pick]), bool(kept.fits_future[pick])

    def _top(self, kept: _Kept, task: TaskInfo, mask: BoolArray, count: int, of_now: bool) -> list[int]:
        """The candidates with the highest total, in node order: kept as nodes change when every score is
        row-local, else over the totals with this pod's parts made anew (normalised over the candidates)."""
        if not kept.rests:
            best = kept.best
            if best is None or best.of_now != of_now:
                best = kept.best = _Best(of_now)
            return best.nodes(kept)
        total, kept.seeded = kept.seeded, None
        if total is None or count < len(mask):
            total = self._with_rests(kept, task, mask, count)
        out: list[int] = _top(total, mask, count).tolist()
        return out

    def _with_rests(self, kept: _Kept, task: TaskInfo, mask: BoolArray, count: int) -> FloatArray:
        """The kept totals plus the parts made anew for ``task``, normalised over the ``count`` candidates
        ``mask`` (as ``score_nodes`` scores them)."""
        ssn = self.ssn
        ssn.score_mask, ssn.score_count = mask, (mask, count)
        try:
            total: FloatArray | None = None
            for rest in kept.rests:
                total = kept.total + rest(task) if total is None else total + rest(task)
        finally:
            ssn.score_mask = ssn.score_count = None
        return kept.total.copy() if total is None else total
