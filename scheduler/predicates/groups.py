"""Group nodes by an identical hashable signature (label set, taint set) once per session, so a per-pod predicate is
evaluated once per distinct signature and broadcast to all nodes with NumPy."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["NodeGroups"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class NodeGroups(Generic[K]):
    def __init__(self, signatures: Sequence[K]) -> None:
        index: dict[K, int] = {}
        ids = np.empty(len(signatures), dtype=np.int64)
        for i, sig in enumerate(signatures):
            ids[i] = index.setdefault(sig, len(index))
        self.keys: list[K] = list(index)
        self.ids: npt.NDArray[np.int64] = ids

    @classmethod
    def of_ids(cls, keys: list[K], ids: npt.NDArray[np.int64]) -> NodeGroups[K]:
        """Groups already made: ``keys[ids[i]]`` is node ``i``'s signature."""
        out: NodeGroups[K] = cls(())
        out.keys, out.ids = keys, ids
        return out

    def evaluate(self, fn: Callable[[K], V], dtype: type) -> npt.NDArray[np.generic]:
        """``fn`` once per distinct signature, broadcast to nodes (index order)."""
        per_group: npt.NDArray[np.generic] = np.array([fn(k) for k in self.keys], dtype=dtype)
        return per_group[self.ids] if len(self.keys) else np.zeros(0, dtype=dtype)
