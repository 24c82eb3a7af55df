"""The ScheduleAnyway spread score of one pod signature, kept current from the placements (:class:`KeptSoftScore`).

A node's raw score is a sum over the pod's soft constraints of a term that depends on the node only through a small
"level": for a key where every node is a domain of its own (the hostname), the matching pods the node counts; for
any other key, the node's domain (or none).  The nodes are grouped by their combination of levels, so a pod's raw
scores are a table over the combinations (a few small NumPy steps) read per node through each node's combination,
and the normalisation's extremes are those of the combinations some scored node has.  A placement moves one node's
count: that node's combination (hostname) or its domain's count, a table entry (zone).  So consecutive pods of a
workload cost a gather over the nodes instead of the per-node arithmetic; the arithmetic of each table entry is the
per-node form's, step for step, so the scores are the same (a property test holds them equal).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["SoftPart", "KeptSoftScore", "MAX_COMBINATIONS"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
# more combinations of levels than this (a hostname key that is not one node per domain, many-valued keys) and the
# per-node form is as cheap: the signature is scored that way
MAX_COMBINATIONS = 1024


@dataclass(frozen=True, slots=True)
class SoftPart:
    """One ScheduleAnyway constraint as the kept score reads it: the domain ids of its key per node (-1 without the
    key) and their number, whether every node is a domain of its own, whether its weight counts the nodes scored
    (else the domains holding one), the nodes whose pods count (None: every node), and the pod index's
    non-terminating counts of its matcher with their log of moved nodes (both kept current in place by the
    index)."""

    max_skew: int
    ids: IntArray
    ndom: int
    own: bool
    by_node: bool
    counting: BoolArray | None
    counts: IntArray
    moved: list[int]


class _Source:
    """One matcher's counts as the kept score took them in: how far its log was read, and the counts then."""

    __slots__ = ("counts", "moved", "at", "seen", "levels")

    def __init__(self, counts: IntArray, moved: list[int]) -> None:
        self.counts, self.moved = counts, moved
        self.at = len(moved)
        self.seen = counts.copy()
        self.levels: list[_Level] = []   # the parts counting with them


class _Level:
    """One part's level per node, and (for a shared key) the matching pods per domain."""

    __slots__ = ("part", "radix", "stride", "seen", "domain_counts")

    def __init__(self, part: SoftPart, seen: IntArray) -> None:
        self.part = part
        self.seen = seen
        self.stride = 1
        self.radix = part.ndom + 1
        self.domain_counts: list[int] = []
        if not part.own:
            counting = part.ids >= 0 if part.counting is None else part.counting & (part.ids >= 0)
            self.domain_counts = np.bincount(part.ids[counting], weights=seen[counting],
                                             minlength=part.ndom).astype(np.int64).tolist()

    def per_node(self) -> IntArray:
        """The level of every node: its count (own domains; a spare level above the highest, so that a placement
        seldom outgrows the radix), else its domain id (``ndom`` without the key)."""
        part = self.part
        if part.own:
            levels: IntArray = self.seen.copy() if part.counting is None else np.where(part.counting, self.seen, 0)
            self.radix = int(levels.max(initial=0)) + 2
            return levels
        out: IntArray = np.where(part.ids >= 0, part.ids, part.ndom)
        return out

    def values(self, weight: float) -> list[float]:
        """The part's raw score per level, as the per-node form computes it for a node of that level (Python
        floats are IEEE doubles: the same operations give the same values)."""
        skew = self.part.max_skew - 1
        if self.part.own:
            return [level * weight + skew for level in range(self.radix)]
        return [count * weight + skew for count in self.domain_counts] + [0.0]   # 0 for the nodes without the key


class KeptSoftScore:
    """The soft spread score of the pods of one signature (namespace, soft constraints, the nodes that count) over
    the session's nodes, made by :meth:`make` and read by :meth:`score`, which first takes in the placements
    since the previous pod."""

    __slots__ = ("sources", "levels", "combination", "histogram")

    def __init__(self, sources: list[_Source], levels: list[_Level], combination: IntArray,
                 histogram: list[int]) -> None:
        self.sources = sources
        self.levels = levels
        self.combination = combination   # per node
        self.histogram = histogram       # per combination, how many nodes have it

    @classmethod
    def make(cls, parts: Sequence[SoftPart], n: int) -> KeptSoftScore | None:
        """The kept score of ``parts`` over ``n`` nodes, or None when there are too many combinations.  Parts
        counting the same pods (the default constraints) share what is taken in of their counts."""
        sources: dict[int, _Source] = {}
        levels = []
        for part in parts:
            source = sources.get(id(part.counts))
            if source is None:
                source = sources[id(part.counts)] = _Source(part.counts, part.moved)
            levels.append(_Level(part, source.seen))
            source.levels.append(levels[-1])
        combination = np.zeros(n, dtype=np.int64)
        stride = 1
        for level in levels:
            per_node = level.per_node()
            level.stride = stride
            combination += per_node * stride
            stride *= level.radix
            if stride > MAX_COMBINATIONS:
                return None
        return cls(list(sources.values()), levels, combination, np.bincount(combination, minlength=stride).tolist())

    def _catch_up(self) -> bool:
        """Takes in the counts moved since the last pod; False when a node's count outgrew its part's radix."""
        for source in self.sources:
            log = source.moved
            if source.at == len(log):
                continue
            nodes = set(log[source.at:])
            source.at = len(log)
            for i in nodes:
                new = source.counts.item(i)
                delta = new - source.seen.item(i)
                if not delta:
                    continue
                source.seen[i] = new
                for level in source.levels:
                    if not self._move(level, i, new, delta):
                        return False
        return True

    def _move(self, level: _Level, i: int, new: int, delta: int) -> bool:
        """Node ``i``'s count moved by ``delta`` to ``new``: its combination (own domains) or its domain's count;
        False when the count outgrew the part's radix."""
        part = level.part
        if part.counting is not None and not part.counting.item(i):
            return True
        if not part.own:
            domain = part.ids.item(i)
            if domain >= 0:
                level.domain_counts[domain] += delta
            return True
        if new >= level.radix:
            return False
        old = self.combination.item(i)
        self.combination[i] = old + delta * level.stride
        self.histogram[old] -= 1
        self.histogram[old + delta * level.stride] += 1
        return True

    def _table(self, weights: Sequence[float]) -> list[int]:
        """The rounded raw score of every combination, the parts summed in order as the per-node form sums them
        (a combination's first part varies fastest)."""
        raw: list[float] = []
        for k, (level, weight) in enumerate(zip(self.levels, weights, strict=True)):
            values = level.values(weight)
            raw = values if not k else [r + v for v in values for r in raw]
        return [math.floor(r + 0.5) for r in raw]   # math.Round of non-negative values

    def _weights(self, every: int, counts: Sequence[int]) -> list[float]:
        """Each part's log(domains scored + 2): the ``every`` nodes scored, or the domains of the combinations some
        scored node has (``counts``: the scored nodes per combination; every domain has a node, so all of them
        when every node is scored)."""
        out = []
        everywhere = every == len(self.combination)
        for level in self.levels:
            part = level.part
            if part.by_node:
                size = every
            elif everywhere:
                size = part.ndom
            else:
                stride, radix = level.stride, level.radix
                size = len({c // stride % radix for c, k in enumerate(counts) if k} - {part.ndom})
            out.append(math.log(size + 2))
        return out

    def score(self, scored: BoolArray, every: int) -> IntArray | None:
        """kube's normalised score (0..100, 0 on the nodes not scored), ``every`` being how many nodes are scored;
        None when the kept state must be made anew."""
        if not self._catch_up():
            return None
        n = len(self.combination)
        if not every:
            return np.zeros(n, dtype=np.int64)
        counts = self.histogram
        if every != n:   # the scored nodes per combination (counted as float64 weights: exact integers)
            counts = [int(c) for c in np.bincount(self.combination, weights=scored, minlength=len(counts)).tolist()]
        table = self._table(self._weights(every, counts))
        among = [s for s, c in zip(table, counts, strict=True) if c]
        hi, lo = max(among), min(among)
        if hi == 0:
            return scored.astype(np.int64) * 100
        out: IntArray = np.array([100 * (hi + lo - s) // hi for s in table], dtype=np.int64).take(self.combination)
        if every != n:
            np.multiply(out, scored, out=out)
        return out
