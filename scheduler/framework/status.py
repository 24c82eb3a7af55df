"""Filter outcomes as data: per-node statuses with a code, a reason and the plugin that said it, aggregated into
kube's "0/N nodes are available: ..." message (docs/design/kube-scoring.md §7, docs/design/scheduler.md §2.8)."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = ["Code", "Status", "FilterResult", "FitErrors", "fit_message", "FAILURE_CODES", "PREEMPT_BLOCKING_CODES"]

BoolArray = npt.NDArray[np.bool_]


class Code(enum.Enum):
    SUCCESS = "Success"
    ERROR = "Error"
    UNSCHEDULABLE = "Unschedulable"
    UNRESOLVABLE = "UnschedulableAndUnresolvable"
    WAIT = "Wait"
    SKIP = "Skip"


# statuses that make a node infeasible for allocate; preempt/reclaim tolerate plain Unschedulable
FAILURE_CODES = frozenset({Code.ERROR, Code.UNSCHEDULABLE, Code.UNRESOLVABLE, Code.WAIT, Code.SKIP})
PREEMPT_BLOCKING_CODES = frozenset({Code.ERROR, Code.UNRESOLVABLE, Code.WAIT, Code.SKIP})


@dataclass(frozen=True, slots=True)
class Status:
    code: Code
    reason: str
    plugin: str = ""


@dataclass(slots=True)
class FilterResult:
    """A vectorised predicate's answer for every node: a pass mask plus reasons for the failing ones.

    ``reasons[i]`` lists ``(code, reason)`` for node ``i``; nodes that fail without an entry get ``default``.
    """

    passed: BoolArray
    reasons: dict[int, list[tuple[Code, str]]] = field(default_factory=dict)
    default: tuple[Code, str] = (Code.UNSCHEDULABLE, "node(s) didn't pass the filter")
    # computes a failing node's reasons on demand: most failures are never reported, so don't format them eagerly
    lazy: Callable[[int], list[tuple[Code, str]]] | None = None

    def found(self, i: int) -> list[tuple[Code, str]]:
        got = self.reasons.get(i)
        if not got and self.lazy is not None:
            got = self.reasons[i] = self.lazy(i)
        return got or [self.default]

    def statuses(self, i: int, plugin: str) -> list[Status]:
        if self.passed[i]:
            return []
        return [Status(code, reason, plugin) for code, reason in self.found(i)]


def fit_message(total_nodes: int, per_node: Mapping[str, Sequence[Status]], *, prefilter: str = "",
                postfilter: str = "", unevaluated: Iterable[Status] = ()) -> str:
    """kube's ``FitError.Error()``: a plain string-sorted histogram of reasons over every node."""
    msg = f"0/{total_nodes} nodes are available:"
    if prefilter:
        return f"{msg} {prefilter}." + (f" {postfilter}" if postfilter else "")
    hist: Counter[str] = Counter()
    for statuses in per_node.values():
        for s in statuses:
            hist[s.reason] += 1
    absent = total_nodes - len(per_node)
    if absent > 0:
        for s in unevaluated:
            hist[s.reason] += absent
    parts = sorted(f"{count} {reason}" for reason, count in hist.items())
    msg += " " + ", ".join(parts) + "."
    if postfilter:
        msg += " " + postfilter
    return msg


@dataclass(slots=True)
class FitErrors:
    """Why a task found no node in this session: per failing node, its statuses (or one task-level error)."""

    total_nodes: int
    nodes: dict[str, list[Status]] = field(default_factory=dict)
    error: str = ""

    def add(self, node: str, statuses: Sequence[Status]) -> None:
        if statuses:
            self.nodes.setdefault(node, []).extend(statuses)

    def unresolvable(self) -> set[str]:
        return {n for n, ss in self.nodes.items() if any(s.code is Code.UNRESOLVABLE for s in ss)}

    def message(self) -> str:
        if self.error:
            return f"0/{self.total_nodes} nodes are available: {self.error}."
        return fit_message(self.total_nodes, self.nodes)
