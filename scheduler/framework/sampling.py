"""How many feasible nodes a task's search looks for before it stops (docs/design/scheduler.md §2.9).

On a large cluster Volcano does not check every node for every task: the search walks the nodes from where the
previous search stopped and ends once ``nodes_to_find`` feasible ones were found; only those are scored.  The
limit is every node up to ``minimum_nodes`` (``--minimum-feasible-nodes``, 100) or when ``percentage``
(``--percentage-nodes-to-find``) is 100 or more; otherwise ``percentage`` of the nodes, or, when it is 0 or
less, an adaptive share of ``50 - N/125`` percent, never under ``minimum_percentage``
(``--minimum-percentage-nodes-to-find``, 5); never fewer than ``minimum_nodes`` nodes.  At 5,000 nodes the
adaptive share is 500 nodes per task; up to 100 nodes nothing changes.

Loadwise's default is every node (``percentage`` 100), not Volcano's adaptive share, and the walk is in order
rather than on parallel workers, so placements are repeatable; docs/design/differences.md §1.5 says why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = ["NodeSampling", "DEFAULT_MINIMUM_NODES", "DEFAULT_MINIMUM_PERCENTAGE"]

DEFAULT_MINIMUM_NODES = 100
DEFAULT_MINIMUM_PERCENTAGE = 5
_BASELINE_PERCENTAGE = 50

BoolArray = npt.NDArray[np.bool_]


@dataclass(slots=True)
class NodeSampling:
    """The search limit and where the next search starts (kept across sessions, as Volcano's global index)."""

    percentage: int = 100
    minimum_nodes: int = DEFAULT_MINIMUM_NODES
    minimum_percentage: int = DEFAULT_MINIMUM_PERCENTAGE
    offset: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        for name, value, flag in (("percentage", self.percentage, "--percentage-nodes-to-find"),
                                  ("minimum_nodes", self.minimum_nodes, "--minimum-feasible-nodes"),
                                  ("minimum_percentage", self.minimum_percentage,
                                   "--minimum-percentage-nodes-to-find")):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{flag}: must be an integer, got {value!r}")
            if name != "percentage" and value < 0:
                raise ValueError(f"{flag}: must not be negative, got {value}")
        if self.minimum_percentage > 100:
            raise ValueError(f"--minimum-percentage-nodes-to-find: must be at most 100, got {self.minimum_percentage}")

    def nodes_to_find(self, n: int) -> int:
        """How many feasible nodes a search over ``n`` nodes looks for."""
        if n <= self.minimum_nodes or self.percentage >= 100:
            return n
        percentage = self.percentage
        if percentage <= 0:
            percentage = max(_BASELINE_PERCENTAGE - n // 125, self.minimum_percentage)
        return max(n * percentage // 100, self.minimum_nodes, 1)

    def search(self, candidates: BoolArray, check: Callable[[int], bool] | None = None) -> tuple[BoolArray, BoolArray]:
        """Walk the nodes from :attr:`offset`, skipping those not in ``candidates`` and those ``check`` rejects,
        until :meth:`nodes_to_find` were found; returns the nodes found and the nodes walked over, and moves the
        offset past the last node walked.  ``check`` is called in walking order, on candidates only."""
        n = int(candidates.size)
        found = np.zeros(n, dtype=np.bool_)
        walked = np.zeros(n, dtype=np.bool_)
        if n == 0:
            return found, walked
        want = self.nodes_to_find(n)
        start = self.offset % n
        order = np.flatnonzero(candidates)
        order = np.concatenate([order[order >= start], order[order < start]])
        processed = n
        if check is None:
            chosen = order[:want]
            found[chosen] = True
            if chosen.size == want:
                processed = (int(chosen[-1]) - start) % n + 1
        else:
            count = 0
            for i in order.tolist():
                if check(i):
                    found[i] = True
                    count += 1
                    if count == want:
                        processed = (i - start) % n + 1
                        break
        walked[(start + np.arange(processed)) % n] = True
        self.offset = (start + processed) % n
        return found, walked
