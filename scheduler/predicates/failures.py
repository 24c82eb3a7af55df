"""A vector filter's failing nodes as the steps that failed them, with a node's reason made only when asked for.

A filter over thousands of nodes fails most of them for one of a few reasons, and only the reasons of the nodes a
fit error or ``explain`` reports are ever read: recording each step's mask costs one array per step instead of a
Python entry per failing node.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from scheduler.framework.status import Code, FilterResult

__all__ = ["Failures"]

BoolArray = npt.NDArray[np.bool_]


class Failures:
    """Which nodes still pass, and the steps that failed the others in order: a node's reason is that of the first
    step that failed it, as when each step writes the reasons of the nodes still passing."""

    def __init__(self, n: int) -> None:
        self.ok = np.ones(n, dtype=np.bool_)
        self.steps: list[tuple[BoolArray, Code, str]] = []

    def fail(self, bad: BoolArray, code: Code, reason: str) -> None:
        if bad.any():
            self.steps.append((bad, code, reason))
            self.ok &= ~bad

    def reasons(self, i: int) -> list[tuple[Code, str]]:
        return next(([(code, reason)] for bad, code, reason in self.steps if bad[i]), [])

    def result(self) -> FilterResult:
        return FilterResult(self.ok, lazy=self.reasons)
