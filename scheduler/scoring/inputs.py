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

from .resource_fit import active_resources

__all__ = ["scoring_inputs", "scoring_rows", "PodRows", "RowInputs", "row_lists"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


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
    col = {c: j for j, c in enumerate(columns)}
    pod_req = pod.nonzero_requests if non_zero else pod.requests
    alloc = np.zeros((n, len(names)), dtype=np.int64)
    node_req = np.zeros((n, len(names)), dtype=np.int64)
    for k, r in enumerate(names):
        if r in col:
            alloc[:, k] = allocatable[:, col[r]]
            node_req[:, k] = requested[:, col[r]]
        if non_zero and r in (CPU, MEMORY):
            node_req[:, k] = nonzero_requested[:, 0 if r == CPU else 1]
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
    same names of one node at every step (:meth:`node`)."""

    __slots__ = ("where", "nonzero_at", "reads_used", "reads_nonzero", "pod_request", "active")

    def __init__(self, names: Sequence[str], pod: PodView, columns: Sequence[str], *, non_zero: bool) -> None:
        col = {c: j for j, c in enumerate(columns)}
        # per name: its column of the node arrays (None: the arrays lack it), and its column of the non-zero
        # requested amounts when those count instead
        self.where = [col.get(r) for r in names]
        self.nonzero_at = [(0 if r == CPU else 1) if non_zero and r in (CPU, MEMORY) else None for r in names]
        self.reads_used = any(z is None and j is not None for j, z in zip(self.where, self.nonzero_at, strict=True))
        self.reads_nonzero = any(z is not None for z in self.nonzero_at)
        pod_req = pod.nonzero_requests if non_zero else pod.requests
        self.pod_request = [pod_req.get(r, 0) for r in names]
        self.active = [not (is_scalar_resource(r) and pod.requests.get(r, 0) == 0) for r in names]

    def amounts(self, alloc: list[int], used: list[int], nonzero: list[int]) -> tuple[list[int], list[int]]:
        """One node's allocatable and requested amounts of the names, from its rows of the arrays."""
        return ([0 if j is None else alloc[j] for j in self.where],
                [nonzero[z] if z is not None else 0 if j is None else used[j]
                 for j, z in zip(self.where, self.nonzero_at, strict=True)])

    def node(self, allocatable: IntArray, requested: IntArray, nonzero_requested: IntArray,
             i: int) -> tuple[list[int], list[int]]:
        """Node ``i``'s allocatable and requested amounts of the names, as Python integers."""
        return self.amounts(allocatable[i].tolist(), requested[i].tolist() if self.reads_used else [],
                            nonzero_requested[i].tolist() if self.reads_nonzero else [])


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
