"""Node accounting as int64 matrices ``[nodes, resources]`` so that a task can be checked against every node at
once (docs/design/scheduler.md §2.3).  Columns are the session's resource names; cpu in millicores, others base units.
The matrices are laid out resource-major (Fortran order): each resource's column is one contiguous vector, so a
check or score over every node reads whole columns, not a few values of every row."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from common.resources import CPU, MEMORY, PODS, Resources

from .api import TaskStatus, on_node
from .memo import SessionMemo

__all__ = ["NodeArrays", "RowCache", "allocation_matrix", "carried_caches", "carried_changes", "carried_row_caches",
           "resource_columns"]

IntArray = npt.NDArray[np.int64]
# what a row cache keeps per node (int64 for most computations, a narrower integer type for some)
Values = npt.NDArray[Any]


def resource_columns(names: Iterable[str]) -> list[str]:
    """cpu, memory, pods first (Volcano's check order), then the other names sorted."""
    rest = sorted(set(names) - {CPU, MEMORY, PODS})
    return [CPU, MEMORY, PODS, *rest]


def allocation_matrix(col: Mapping[str, int], allocatable: Sequence[Mapping[str, int]]) -> IntArray:
    """The ``[nodes, columns]`` matrix of the nodes' allocatable resources (names without a column left out)."""
    out = np.zeros((len(allocatable), len(col)), dtype=np.int64)
    for i, alloc in enumerate(allocatable):
        for name, v in alloc.items():
            j = col.get(name)
            if j is not None:
                out[i, j] = v
    return out


# how add() treats a status: not on a node, pipelined, on the node, on the node and releasing
_OFF, _PIPELINED, _ON, _RELEASING = 0, 1, 2, 3
_KIND = {s: (_PIPELINED if s is TaskStatus.PIPELINED else _RELEASING if s is TaskStatus.RELEASING
             else _ON if on_node(s) else _OFF) for s in TaskStatus}


def _scatter_add(target: IntArray, rows: IntArray, values: IntArray) -> None:
    """``target[rows[i]] += values[i]`` for every i, rows repeating (exact int64 sums, unlike a float bincount)."""
    order = np.argsort(rows, kind="stable")
    r = rows[order]
    starts = np.flatnonzero(np.concatenate(([True], r[1:] != r[:-1])))
    target[r[starts]] += np.add.reduceat(values[order], starts, axis=0)


class NodeArrays:
    """Allocatable, idle, used, releasing and pipelined per node, plus kube's non-zero cpu/memory requests."""

    def __init__(self, columns: Sequence[str], allocatable: Sequence[Mapping[str, int]] | IntArray) -> None:
        """``allocatable``: per node, its allocatable resources, or already the ``[nodes, columns]`` matrix (copied)."""
        self.columns = list(columns)
        self.col = {c: j for j, c in enumerate(self.columns)}
        matrix = allocatable if isinstance(allocatable, np.ndarray) else allocation_matrix(self.col, allocatable)
        self.allocatable: IntArray = np.array(matrix, dtype=np.int64, order="F")   # a copy, resource-major
        n, k = self.allocatable.shape
        self.idle: IntArray = self.allocatable.copy(order="F")
        self.used: IntArray = np.zeros((n, k), dtype=np.int64, order="F")
        self.releasing: IntArray = np.zeros((n, k), dtype=np.int64, order="F")
        self.pipelined: IntArray = np.zeros((n, k), dtype=np.int64, order="F")
        self.nonzero_requested: IntArray = np.zeros((n, 2), dtype=np.int64, order="F")
        self.task_count = np.zeros(n, dtype=np.int64)
        # every row changed by add/remove, in order: lets row-local computations redo only those rows
        self.changes: list[int] = []
        self._since: tuple[int, int, IntArray] | None = None   # the last changed_since answer, with its range
        # columns the fit check skips: extended resources NodeResourcesFit is told to ignore (ignoredResources,
        # ignoredResourceGroups), which something else (an extender, a device plugin's own scheduler) accounts
        self.fit_ignored: npt.NDArray[np.bool_] | None = None

    def __len__(self) -> int:
        return int(self.allocatable.shape[0])

    def copy(self) -> NodeArrays:
        """An independent copy of the accounting, with an empty change log and no ignored columns (what a session
        sets for itself)."""
        out = NodeArrays.__new__(NodeArrays)
        out.columns = list(self.columns)
        out.col = dict(self.col)
        out.allocatable = self.allocatable.copy(order="F")
        out.idle = self.idle.copy(order="F")
        out.used = self.used.copy(order="F")
        out.releasing = self.releasing.copy(order="F")
        out.pipelined = self.pipelined.copy(order="F")
        out.nonzero_requested = self.nonzero_requested.copy(order="F")
        out.task_count = self.task_count.copy()
        out.changes = []
        out._since = None
        out.fit_ignored = None
        return out

    def vector(self, res: Mapping[str, int]) -> IntArray:
        vec = np.zeros(len(self.columns), dtype=np.int64)
        for name, v in res.items():
            j = self.col.get(name)
            if j is not None:
                vec[j] = v
        return vec

    def to_resources(self, row: IntArray) -> Resources:
        return Resources({c: int(v) for c, v in zip(self.columns, row.tolist(), strict=True) if v})

    def row_inputs(self) -> list[npt.NDArray[Any]]:
        """Every per-node matrix of the accounting: what a computation over a node's row of them may read."""
        return [self.allocatable, self.idle, self.used, self.releasing, self.pipelined, self.nonzero_requested,
                self.task_count]

    def changed_since(self, seen: int) -> IntArray:
        """The rows logged after the first ``seen`` entries of the change log, each once, sorted (read-only).  The
        last answer is kept: the row caches of one pod (its resource check, filters and scores), last brought up to
        date at the same earlier pod, ask for the same rows in turn."""
        end = len(self.changes)
        last = self._since
        if last is not None and last[0] == seen and last[1] == end:
            return last[2]
        rows = _distinct_rows(self.changes[seen:], None)
        rows.flags.writeable = False
        self._since = (seen, end, rows)
        return rows

    def future_idle(self) -> IntArray:
        return self.idle + self.releasing - self.pipelined

    def future_idle_row(self, i: int) -> IntArray:
        row: IntArray = self.idle[i] + self.releasing[i] - self.pipelined[i]
        return row

    def requested(self) -> IntArray:
        """kube's ``NodeInfo.Requested``: what bound, binding and allocated pods request (releasing included)."""
        return self.used

    def add(self, i: int, vec: IntArray, status: TaskStatus, nonzero: tuple[int, int]) -> None:
        self.changes.append(i)
        if status is TaskStatus.PIPELINED:
            self.pipelined[i] += vec
            return
        if not on_node(status):
            return
        self.idle[i] -= vec
        self.used[i] += vec
        if status is TaskStatus.RELEASING:
            self.releasing[i] += vec
        self.nonzero_requested[i, 0] += nonzero[0]
        self.nonzero_requested[i, 1] += nonzero[1]
        self.task_count[i] += 1

    def add_many(self, rows: Sequence[int], packed: Sequence[IntArray], statuses: Sequence[TaskStatus]) -> None:
        """``add`` for each row in turn, as a few array operations; ``packed[i]`` is the i-th task's vector with its
        non-zero cpu and memory requests appended (``TaskTemplate.packed``)."""
        if not rows:
            return
        self.changes.extend(rows)
        rows_a = np.asarray(rows, dtype=np.int64)
        k = len(self.columns)
        both = np.concatenate(packed).reshape(len(rows), k + 2)
        vecs = both[:, :k]
        kind = np.array([_KIND.get(s, _OFF) for s in statuses], dtype=np.int8)
        piped = kind == _PIPELINED
        if piped.any():
            _scatter_add(self.pipelined, rows_a[piped], vecs[piped])
        on = kind >= _ON
        if on.any():
            r, v = rows_a[on], vecs[on]
            _scatter_add(self.idle, r, -v)
            _scatter_add(self.used, r, v)
            _scatter_add(self.nonzero_requested, r, both[on, k:])
            self.task_count += np.bincount(r, minlength=len(self.task_count))
        releasing = kind == _RELEASING
        if releasing.any():
            _scatter_add(self.releasing, rows_a[releasing], vecs[releasing])

    def remove(self, i: int, vec: IntArray, status: TaskStatus, nonzero: tuple[int, int]) -> None:
        self.changes.append(i)
        if status is TaskStatus.PIPELINED:
            self.pipelined[i] -= vec
            return
        if not on_node(status):
            return
        self.idle[i] += vec
        self.used[i] -= vec
        if status is TaskStatus.RELEASING:
            self.releasing[i] -= vec
        self.nonzero_requested[i, 0] -= nonzero[0]
        self.nonzero_requested[i, 1] -= nonzero[1]
        self.task_count[i] -= 1

    def fits(self, vec: IntArray, free: IntArray) -> npt.NDArray[np.bool_]:
        """``vec <= free`` on every column the task requests (a zero request never fails, even on negative idle),
        one column at a time (a contiguous vector in these matrices)."""
        need = vec > 0
        if self.fit_ignored is not None:
            need &= ~self.fit_ignored
        out: npt.NDArray[np.bool_] | None = None
        for j in np.flatnonzero(need).tolist():
            col = free[:, j] >= vec[j]
            if out is None:
                out = col
            else:
                out &= col
        return np.ones(free.shape[0], dtype=np.bool_) if out is None else out

    def first_insufficient(self, vec: IntArray, free_row: IntArray) -> str:
        skip = self.fit_ignored
        for j, c in enumerate(self.columns):
            if vec[j] > 0 and free_row[j] < vec[j] and (skip is None or not skip[j]):
                return c
        return ""


class _Rows:
    """One signature's values, a read-only view of them (what :meth:`RowCache.read` hands out: the values are
    updated in place), how much of the change log they have seen, and the rows to compute anew besides the log's:
    a mask over the nodes, set when the cache was carried into another session (:meth:`RowCache.carry`; shared
    between entries, never written in place)."""

    __slots__ = ("value", "frozen", "seen", "stale")

    def __init__(self, value: Values, seen: int) -> None:
        self.value = value
        self.frozen = value.view()
        self.frozen.flags.writeable = False
        self.seen = seen
        self.stale: npt.NDArray[np.bool_] | None = None


def _distinct_rows(changed: list[int], stale: npt.NDArray[np.bool_] | None) -> IntArray:
    """The rows in ``changed`` (a piece of the change log) and those ``stale`` marks, each once, sorted."""
    if stale is not None:
        mask = stale.copy()
        mask[changed] = True
        return np.flatnonzero(mask)
    # a few hundred changes (the placements since this signature's last pod, a few log entries each) sort faster
    # in Python than in NumPy
    return (np.array(sorted(set(changed)), dtype=np.int64) if len(changed) < 256
            else np.unique(np.asarray(changed, dtype=np.int64)))


class RowCache:
    """Memo of a *row-local* vector computation (row i depends only on node i's row and the pod), per pod signature.

    Pods with the same signature — replicas of one workload, or the few shapes of a mixed workload taking turns —
    reuse the values last computed for it, recomputing only the rows the node arrays logged as changed since.
    Up to ``slots`` signatures are kept (the least recently used goes first).  ``compute(rows)`` must return the
    values for ``rows`` (an index array), or for every node when ``rows`` is None (in the dtype the values are
    kept in).  A cache may be carried into
    the next session (:func:`carried_caches`), its entries then recomputing the rows whose inputs changed.
    """

    def __init__(self, arrays: NodeArrays, slots: int = 32) -> None:
        self.arrays = arrays
        self.slots = slots
        self._entries: dict[Hashable, _Rows] = {}

    def get(self, key: Hashable, compute: Callable[[IntArray | None], Values]) -> Values:
        """The values of ``key``'s signature over every node, brought up to date: a copy the caller may keep and
        change."""
        return self._current(key, compute).value.copy()

    def read(self, key: Hashable, compute: Callable[[IntArray | None], Values]) -> Values:
        """:meth:`get` without the copy, for a caller that reads the values at once: read-only, and holding only
        until the cache's next ``get`` or ``read`` (the cache updates its values in place)."""
        return self._current(key, compute).frozen

    def _current(self, key: Hashable, compute: Callable[[IntArray | None], Values]) -> _Rows:
        """The kept entry of ``key`` (made by ``compute(None)``, in the dtype it gives), its changed rows redone."""
        log = self.arrays.changes
        entries = self._entries
        hit = entries.pop(key, None)
        if hit is None:
            hit = _Rows(np.array(compute(None)), len(log))
            if len(entries) >= self.slots:
                del entries[next(iter(entries))]
        elif hit.seen < len(log) or hit.stale is not None:
            rows = (self.arrays.changed_since(hit.seen) if hit.stale is None
                    else _distinct_rows(log[hit.seen:], hit.stale))
            if len(rows):
                hit.value[rows] = compute(rows)
            hit.seen = len(log)
            hit.stale = None
        entries[key] = hit   # most recently used last
        return hit

    def carry(self, arrays: NodeArrays, changed: IntArray) -> None:
        """Follow another session's ``arrays`` (the same rows and columns): every entry recomputes, when its
        signature comes again, the rows ``changed`` (whose inputs differ from those it was last told of) and every
        row the old arrays logged (changed in the session that had them, whether the entry saw it or not)."""
        stale = np.zeros(len(arrays), dtype=np.bool_)
        stale[changed] = True
        stale[self.arrays.changes] = True
        for hit in self._entries.values():
            hit.stale = stale if hit.stale is None else hit.stale | stale
            hit.seen = 0
        self.arrays = arrays


def _changed_rows(old: Sequence[npt.NDArray[Any]], new: Sequence[npt.NDArray[Any]]) -> IntArray | None:
    """The rows where any of ``new`` differs from ``old`` (arrays paired in order, ``[nodes]`` or ``[nodes, k]``);
    None when they are not laid out alike (another count of arrays, nodes or columns, another dtype)."""
    if len(old) != len(new) or any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(old, new, strict=True)):
        return None
    differ: npt.NDArray[np.bool_] | None = None
    for a, b in zip(old, new, strict=True):
        ne = a != b
        rows = ne if ne.ndim == 1 else ne.any(axis=1)
        differ = rows if differ is None else differ | rows
    return np.zeros(0, dtype=np.int64) if differ is None else np.flatnonzero(differ)


def carried_caches(memo: SessionMemo, key: str, arrays: NodeArrays, ident: object,
                   inputs: Sequence[npt.NDArray[Any]], count: int = 1, *, renewing: bool) -> list[RowCache]:
    """``count`` row caches over ``arrays``: those the previous renewing session opened under ``key``, when it
    is the session the memo's claim had before (``SessionMemo.carried``) and opened them with an equal ``ident``
    and inputs laid out alike, else new ones.

    ``ident`` stands for everything the caches' computations read besides the nodes' rows (configuration, the
    resource columns ...); ``inputs`` are the per-node arrays they read (``[nodes]`` or ``[nodes, k]``), all of
    them: a carried cache recomputes the rows where these differ from what the previous session opened with, plus
    every row that session's arrays logged, so each entry holds what a fresh computation would give.  Only a
    renewing session (the memo's claim holder, one at a time) carries caches; others get new ones."""
    return carried_row_caches(memo, key, arrays, ident, inputs, count, renewing=renewing)[0]


def carried_row_caches(memo: SessionMemo, key: str, arrays: NodeArrays, ident: object,
                       inputs: Sequence[npt.NDArray[Any]], count: int = 1, *,
                       renewing: bool) -> tuple[list[RowCache], IntArray | None]:
    """:func:`carried_caches`, and the rows whose ``inputs`` differ from those the previous claiming session
    opened them with (:func:`carried_changes`; None: not known, the caches are new)."""
    changed = carried_changes(memo, key, ident, inputs, renewing=renewing)
    prev: list[RowCache] | None = memo.carried(("rowcache", key)) if renewing else None
    if prev is not None and changed is not None and len(prev) == count:
        caches = prev
        for cache in caches:
            cache.carry(arrays, changed)
    else:
        caches = [RowCache(arrays) for _ in range(count)]
    if renewing:
        memo.carry(("rowcache", key), caches)
    return caches, changed


def carried_changes(memo: SessionMemo, key: str, ident: object, inputs: Sequence[npt.NDArray[Any]], *,
                    renewing: bool) -> IntArray | None:
    """The rows where any of the per-node ``inputs`` (``[nodes]`` or ``[nodes, k]``) differ from those the previous
    claiming session gave under ``key`` with an equal ``ident``; None when it gave none (or this session does not
    renew), gave them with another ident or laid out otherwise.  A renewing session's inputs are kept (copied) for
    the next one: what a computation over a node's inputs read as the session opened."""
    prev: tuple[object, list[npt.NDArray[Any]]] | None = memo.carried(("changes", key)) if renewing else None
    changed = _changed_rows(prev[1], inputs) if prev is not None and prev[0] == ident else None
    if renewing:
        memo.carry(("changes", key), (ident, [a.copy(order="K") for a in inputs]))
    return changed
