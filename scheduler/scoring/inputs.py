"""Assemble the per-strategy ``(allocatable, requested, active)`` matrices from session node arrays
(docs/design/kube-scoring.md §2.1, §3): Least/Most/RTCR use non-zero defaults for cpu/memory on both the node and the pod;
BalancedAllocation and everything else use real requests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from common.objects import PodView
from common.resources import CPU, MEMORY, is_scalar_resource

from .resource_fit import active_resources, counts_for

__all__ = ["ColumnInputs", "scoring_inputs", "scoring_rows", "PodRows", "RowInputs", "request_columns", "row_lists"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


# the columns of the non-zero requested amounts ([n, 2]: cpu, memory)
_NONZERO_COLUMN = {CPU: 0, MEMORY: 1}


def request_columns(names: Sequence[str], columns: Sequence[str],
                    non_zero: bool) -> tuple[list[int | None], list[int | None]]:
    """Per configured name: its column of the node arrays (None: the arrays lack it), and its column of the non-zero
    requested amounts when those count instead of the used ones (None: they do not)."""
    col = {c: j for j, c in enumerate(columns)}
    return [col.get(r) for r in names], [_NONZERO_COLUMN.get(r) if non_zero else None for r in names]


def scoring_inputs(
    names: Sequence[str],
    pod: PodView,
    columns: Sequence[str],
    allocatable: IntArray,
    requested: IntArray,
    nonzero_requested: IntArray,
    *,
    non_zero: bool,
) -> tuple[IntArray, IntArray, IntArray, BoolArray]:
    """``(allocatable[n,k], node_requested[n,k], pod_request[k], active[k])`` for the configured ``names``.

    ``requested``/``allocatable`` are ``[n, len(columns)]``; ``nonzero_requested`` is ``[n, 2]`` (cpu, memory).
    A name the node arrays lack gives allocatable 0 (and is then skipped by the scorers).
    """
    n = allocatable.shape[0]
    pod_req = pod.nonzero_requests if non_zero else pod.requests
    alloc = np.zeros((n, len(names)), dtype=np.int64)
    node_req = np.zeros((n, len(names)), dtype=np.int64)
    where, nonzero_at = request_columns(names, columns, non_zero)
    for k, (j, z) in enumerate(zip(where, nonzero_at, strict=True)):
        if j is not None:
            alloc[:, k] = allocatable[:, j]
            node_req[:, k] = requested[:, j]
        if z is not None:
            node_req[:, k] = nonzero_requested[:, z]
    pod_vec = np.array([pod_req.get(r, 0) for r in names], dtype=np.int64)
    return alloc, node_req, pod_vec, active_resources(names, pod.requests)


class RowInputs(NamedTuple):
    """:func:`scoring_inputs` of a few nodes as Python integers: per node its allocatable and requested amounts of
    the configured names, then the pod's request and which names count (as ``active``)."""

    allocatable: list[list[int]]
    requested: list[list[int]]
    pod_request: list[int]
    active: list[bool]


# up to this many rows, row_lists reads each row on its own (a view and tolist); past it one gather of them all
# costs less
GATHER_FROM = 4


def row_lists(matrix: npt.NDArray[np.int64] | npt.NDArray[np.float64] | npt.NDArray[np.bool_],
              rows: Sequence[int]) -> list[list[Any]]:
    """The rows ``rows`` of ``matrix`` as Python lists, in order."""
    if len(rows) < GATHER_FROM:
        return [matrix[i].tolist() for i in rows]
    out: list[list[Any]] = matrix[list(rows)].tolist()
    return out


class PodRows:
    """What :func:`scoring_rows` works out of the pod and the columns alone, once: a run of identical pods reads the
    same names of one node at every step (:meth:`with_pod`)."""

    __slots__ = ("where", "nonzero_at", "reads_used", "reads_nonzero", "pod_request", "active", "_plan")

    def __init__(self, names: Sequence[str], pod: PodView, columns: Sequence[str], *, non_zero: bool) -> None:
        self.where, self.nonzero_at = request_columns(names, columns, non_zero)
        self.reads_used = any(z is None and j is not None for j, z in zip(self.where, self.nonzero_at, strict=True))
        self.reads_nonzero = any(z is not None for z in self.nonzero_at)
        pod_req = pod.nonzero_requests if non_zero else pod.requests
        self.pod_request = [pod_req.get(r, 0) for r in names]
        self.active = [counts_for(r, pod.requests) for r in names]
        # the names that count and have a column (a name without one has allocatable 0): (name index, column,
        # non-zero column or None, the pod's request)
        self._plan = [(k, j, z, p) for k, (j, z, p, on) in enumerate(
            zip(self.where, self.nonzero_at, self.pod_request, self.active, strict=True)) if on and j is not None]

    def amounts(self, alloc: list[int], used: list[int], nonzero: list[int]) -> tuple[list[int], list[int]]:
        """One node's allocatable and requested amounts of the names, from its rows of the arrays."""
        return ([0 if j is None else alloc[j] for j in self.where],
                [nonzero[z] if z is not None else 0 if j is None else used[j]
                 for j, z in zip(self.where, self.nonzero_at, strict=True)])

    def with_pod(self, allocatable: IntArray, requested: IntArray, nonzero_requested: IntArray,
                 i: int) -> list[tuple[int, int, int]]:
        """Node ``i``'s names that count (active, allocatable above 0), in order: the allocatable amount, the
        requested amount with the pod's request added, and the name's index."""
        alloc = allocatable[i].tolist()
        used = requested[i].tolist() if self.reads_used else []
        nonzero = nonzero_requested[i].tolist() if self.reads_nonzero else []
        return [(alloc[j], (used[j] if z is None else nonzero[z]) + p, k) for k, j, z, p in self._plan if alloc[j] > 0]


def scoring_rows(
    names: Sequence[str],
    pod: PodView,
    columns: Sequence[str],
    allocatable: IntArray,
    requested: IntArray,
    nonzero_requested: IntArray,
    rows: Sequence[int],
    *,
    non_zero: bool,
) -> RowInputs:
    """:func:`scoring_inputs` restricted to ``rows``, as Python integers: the few nodes a placement changed cost
    less this way than through a dozen NumPy calls, and the scorers' row-by-row forms take Python integers
    (:func:`row_lists`)."""
    pod_rows = PodRows(names, pod, columns, non_zero=non_zero)
    used_rows = row_lists(requested, rows) if pod_rows.reads_used else [[]] * len(rows)
    nonzero_rows = row_lists(nonzero_requested, rows) if pod_rows.reads_nonzero else [[]] * len(rows)
    alloc_rows, req_rows = [], []
    for alloc, used, nonzero in zip(row_lists(allocatable, rows), used_rows, nonzero_rows, strict=True):
        a, r = pod_rows.amounts(alloc, used, nonzero)
        alloc_rows.append(a)
        req_rows.append(r)
    return RowInputs(alloc_rows, req_rows, pod_rows.pod_request, pod_rows.active)


class ColumnInputs:
    """:func:`scoring_inputs` as one vector per configured resource, for node arrays where every configured name has
    a column with a positive allocatable on every node (``usable``; no node then leaves a resource out).  A scorer
    reads each resource's allocatable and requested amounts of some nodes (or of every node, as views) with one
    gather per matrix, and computes over those vectors with the same arithmetic as over ``[nodes, resources]``
    matrices, in fewer NumPy calls: the few dozen nodes changed since a signature's last pod cost what the calls do,
    not what the nodes do.  Made once per session (the allocatable amounts do not change in one)."""

    __slots__ = ("names", "non_zero", "usable", "_alloc_at", "_req_at", "_reads_used", "_reads_nonzero",
                 "_scalars")

    def __init__(self, names: Sequence[str], columns: Sequence[str], allocatable: IntArray, *,
                 non_zero: bool) -> None:
        self.names = tuple(names)
        self.non_zero = non_zero
        at, nonzero_at = request_columns(names, columns, non_zero)
        self.usable = all(j is not None for j in at) and bool((allocatable[:, [j for j in at if j is not None]]
                                                               > 0).all())
        self._alloc_at = [0 if j is None else j for j in at]
        # per name: (reads the non-zero requests, index in that matrix or in the used one)
        self._req_at = [(True, z) if z is not None else (False, a)
                        for z, a in zip(nonzero_at, self._alloc_at, strict=True)]
        self._reads_used = any(not nz for nz, _ in self._req_at)
        self._reads_nonzero = any(nz for nz, _ in self._req_at)
        self._scalars = [r for r in names if is_scalar_resource(r)]

    def active(self, pod: PodView) -> bool:
        """Whether every configured resource counts for ``pod`` (it requests every scalar one among them)."""
        return all(counts_for(r, pod.requests) for r in self._scalars)

    def pod_request(self, pod: PodView) -> list[int]:
        req = pod.nonzero_requests if self.non_zero else pod.requests
        return [req.get(r, 0) for r in self.names]

    def read(self, allocatable: IntArray, requested: IntArray, nonzero_requested: IntArray,
             rows: IntArray | None) -> tuple[list[IntArray], list[IntArray]]:
        """Per configured resource, the allocatable and the node's requested amounts of ``rows`` (every node when
        None); read-only views of the matrices for every node."""
        alloc = allocatable.T if rows is None else allocatable.T[:, rows]
        used = (requested.T if rows is None else requested.T[:, rows]) if self._reads_used else alloc
        nonzero = ((nonzero_requested.T if rows is None else nonzero_requested.T[:, rows]) if self._reads_nonzero
                   else alloc)
        return ([alloc[j] for j in self._alloc_at],
                [nonzero[j] if nz else used[j] for nz, j in self._req_at])
