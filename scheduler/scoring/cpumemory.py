"""The resource scorers a run of a pod reads on a few dozen nodes at a time — least and most allocated (kube's, with
the non-zero request defaults) and balanced allocation (Volcano's, the balance with the pod) — as one computation
where every one of them scores cpu and memory alone and both are kept on every node (allocatable above 0).

At a few dozen nodes a vector computation costs what its NumPy calls do, not what its nodes do: the scorers' column
forms (:func:`~scheduler.scoring.resource_fit.allocated_columns`,
:func:`~scheduler.scoring.balanced.balance_two_columns`) read the allocatable amounts once each and compute each
resource apart.  Here the changed nodes' allocatable, non-zero requested and requested amounts of both resources are
read once, as ``[2, nodes]`` blocks, and each scorer computes both resources in the same calls: the same integer and
IEEE operations on each value in the same order, so the same scores (a property test holds them to each scorer's
own form).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from common.objects import PodView
from common.resources import CPU, MEMORY

from .resource_fit import LEAST_ALLOCATED, MAX_NODE_SCORE, MOST_ALLOCATED

__all__ = ["BALANCED", "KINDS", "CpuMemoryScores", "PodScores", "WeightedScorer"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
# the scorer kind of balanced allocation (least and most allocated are named by their strategy types)
BALANCED = "BalancedAllocation"
# the scorers the sum takes
KINDS = (LEAST_ALLOCATED, MOST_ALLOCATED, BALANCED)


@dataclass(frozen=True, slots=True)
class WeightedScorer:
    """One scorer of the sum: its kind and its weight in the sum (least and most allocated weigh cpu and memory
    alike, as nodeorder configures them)."""

    kind: str
    weight: int


class CpuMemoryScores:
    """The weighted sum of ``scorers`` over cpu and memory on some nodes, for one pod (:meth:`of`).

    ``allocatable`` and ``used`` are the node arrays' ``[nodes, columns]`` matrices (resource-major), ``columns``
    their column names, ``nonzero_requested`` the ``[nodes, 2]`` non-zero requested cpu and memory."""

    __slots__ = ("scorers", "_alloc", "_used", "_nonzero")

    def __init__(self, scorers: Sequence[WeightedScorer], columns: Sequence[str], allocatable: IntArray, used: IntArray,
                 nonzero_requested: IntArray) -> None:
        if not self.usable(columns, allocatable):
            raise ValueError("cpu and memory must be the first two columns, kept on every node")
        self.scorers = tuple(scorers)
        # each matrix's cpu and memory rows as one [2, nodes] view (the matrices are resource-major)
        self._alloc = allocatable.T[:2]
        self._used = used.T[:2]
        self._nonzero = nonzero_requested.T

    @staticmethod
    def usable(columns: Sequence[str], allocatable: IntArray) -> bool:
        """Whether the node arrays keep cpu and memory on every node: their first two columns (as the arrays lay
        them out), allocatable above 0."""
        return list(columns[:2]) == [CPU, MEMORY] and bool((allocatable[:, :2] > 0).all())

    def of(self, pod: PodView) -> PodScores:
        """The sum's computation for ``pod`` (its requests read once)."""
        nonzero = np.array([[pod.nonzero_requests.get(CPU, 0)], [pod.nonzero_requests.get(MEMORY, 0)]],
                           dtype=np.int64)
        requests = [pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0)]
        return PodScores(self, nonzero, np.array([[r] for r in requests], dtype=np.int64), any(requests))


class PodScores:
    """:class:`CpuMemoryScores` for one pod: :meth:`rows` of some nodes."""

    __slots__ = ("sums", "nonzero", "requests", "requests_any")

    def __init__(self, sums: CpuMemoryScores, nonzero: IntArray, requests: IntArray, requests_any: bool) -> None:
        self.sums = sums
        self.nonzero = nonzero            # [2, 1]: the pod's non-zero requests (least and most allocated)
        self.requests = requests          # [2, 1]: its requests (balanced allocation)
        self.requests_any = requests_any  # balanced allocation scores 0 for a pod requesting neither

    def rows(self, idx: npt.NDArray[np.intp]) -> IntArray:
        """The weighted sum on the nodes ``idx`` (integers: exact in any order)."""
        sums = self.sums
        alloc = sums._alloc[:, idx]
        total: IntArray | None = None
        for scorer in sums.scorers:
            if scorer.kind == BALANCED:
                if not self.requests_any:
                    continue
                part = self._balanced(alloc, sums._used[:, idx])
            else:
                part = self._allocated(scorer, alloc, sums._nonzero[:, idx])
            if scorer.weight != 1:
                part *= scorer.weight
            total = part if total is None else np.add(total, part, out=total)
        return np.zeros(len(idx), dtype=np.int64) if total is None else total

    def _allocated(self, scorer: WeightedScorer, alloc: IntArray, requested: IntArray) -> IntArray:
        """``allocated_columns``' least or most allocated: per resource the free (or allocated) share of the
        allocatable amount as an integer percent, then their integer mean."""
        if scorer.kind == LEAST_ALLOCATED:
            s = alloc - requested
            s -= self.nonzero
            np.maximum(s, 0, out=s)
        else:
            s = requested + self.nonzero
            np.minimum(s, alloc, out=s)
        s *= MAX_NODE_SCORE
        s //= alloc
        out: IntArray = s[0] + s[1]
        out //= 2
        return out

    def _balanced(self, alloc: IntArray, used: IntArray) -> IntArray:
        """``balance_two_columns``: the IEEE operations of ``_balance_two`` on both resources at once (an integer
        division made in float64 converts both sides first; the truncation to an integer is the cast's)."""
        f: FloatArray = np.true_divide(used + self.requests, alloc)
        np.minimum(f, 1.0, out=f)
        d = f[0] - f[1]
        d /= 2.0
        np.abs(d, out=d)
        np.subtract(1.0, d, out=d)
        d *= 100.0
        out: IntArray = d.astype(np.int64)
        return out

