"""Hierarchical DRF between queues (docs/design/scheduler.md §4.4, ``enableHierarchy: true``).

Queues declare a path (annotation ``volcano.sh/hierarchy``, e.g. ``root/eng/dev``) and per-level
weights (``volcano.sh/hierarchy-weights``, e.g. ``1/50/50``).  Jobs hang as leaves under their
queue's path.  A leaf is *saturated* once it holds all it asked for on some resource, or asks for
a resource the cluster has no more of; an inner node is saturated when all its children are.  An
inner node's allocation is its children's allocations, with every non-saturated child rescaled to
the smallest dominant share among them, so one greedy child does not inflate its parent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from common.resources import Resources
from scheduler.batch.quota import dominant_share, sum_resources

__all__ = [
    "HIERARCHY_ANNOTATION",
    "WEIGHTS_ANNOTATION",
    "QueuePath",
    "parse_queue_path",
    "HdrfTree",
]

HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"


@dataclass(frozen=True, slots=True)
class QueuePath:
    """Path components from the root and their weights (each >= 1)."""

    names: tuple[str, ...]
    weights: tuple[float, ...]


def parse_queue_path(queue: str, annotations: Mapping[str, str]) -> QueuePath:
    """A queue's path; without the annotation a queue sits directly under ``root`` with weight 1."""
    raw = annotations.get(HIERARCHY_ANNOTATION, "")
    if not raw:
        return QueuePath(("root", queue), (1.0, 1.0))
    names = tuple(p for p in raw.strip("/").split("/"))
    if any(not p for p in names):
        raise ValueError(f"Queue {queue}: annotation {HIERARCHY_ANNOTATION} {raw!r} has an empty component")
    raw_weights = annotations.get(WEIGHTS_ANNOTATION, "")
    parts = raw_weights.strip("/").split("/") if raw_weights else ["1"] * len(names)
    if len(parts) != len(names):
        raise ValueError(
            f"Queue {queue}: annotation {WEIGHTS_ANNOTATION} {raw_weights!r} needs {len(names)} weights "
            f"to match {HIERARCHY_ANNOTATION} {raw!r}"
        )
    weights: list[float] = []
    for part in parts:
        try:
            weights.append(max(float(part), 1.0))
        except ValueError:
            raise ValueError(f"Queue {queue}: annotation {WEIGHTS_ANNOTATION}: {part!r} is not a number") from None
    return QueuePath(names, tuple(weights))


@dataclass(slots=True)
class _Node:
    weight: float = 1.0
    children: dict[str, _Node] = field(default_factory=dict)
    allocated: Resources = Resources()
    request: Resources = Resources()
    share: float = 0.0
    saturated: bool = False
    leaf: bool = False


class HdrfTree:
    """The allocation tree of one session.  Mutate with ``set_job``, then call ``refresh``."""

    def __init__(self, total: Mapping[str, int]) -> None:
        self._total = Resources(total)
        self._root = _Node()

    def set_job(self, path: QueuePath, job_id: str, allocated: Resources, request: Resources) -> None:
        """Record a job's current allocation and total request under its queue's path."""
        node = self._root
        for name, weight in zip(path.names[1:], path.weights[1:], strict=True):
            node = node.children.setdefault(name, _Node())
            node.weight = weight
        leaf = node.children.setdefault(job_id, _Node(leaf=True))
        leaf.allocated, leaf.request = allocated, request

    def refresh(self) -> None:
        """Recompute shares and saturation bottom-up."""
        consumed = self._collect_leaves(self._root)
        demanding = {name for name, amount in self._total.items() if consumed.get(name, 0) < amount}
        self._update(self._root, demanding)

    def _collect_leaves(self, node: _Node) -> Resources:
        if node.leaf:
            return node.allocated
        return sum_resources(self._collect_leaves(c) for c in node.children.values())

    def _update(self, node: _Node, demanding: set[str]) -> None:
        if node.leaf:
            node.share = dominant_share(node.allocated, self._total)[0]
            node.saturated = any(
                (amount > 0 and node.request.get(name, 0) > 0 and amount >= node.request[name])
                for name, amount in node.allocated.items()
            ) or any(amount > 0 and name not in demanding for name, amount in node.request.items())
            return
        for child in node.children.values():
            self._update(child, demanding)
        active = [c for c in node.children.values() if c.share > 0]
        hungry = [c.share for c in active if not c.saturated]
        floor = min(hungry, default=1.0)
        parts: list[Resources] = []
        for child in active:
            if child.saturated:
                parts.append(child.allocated)
            else:
                ratio = floor / child.share
                parts.append(Resources({k: int(v * ratio) for k, v in child.allocated.items()}))
        node.allocated = sum_resources(parts)
        node.share = dominant_share(node.allocated, self._total)[0]
        node.saturated = all(c.saturated for c in node.children.values()) if node.children else False

    def node_share(self, names: tuple[str, ...]) -> tuple[float, bool]:
        """(share, saturated) of the node at a path (``("root", ...)``)."""
        node = self._walk(names)
        return node.share, node.saturated

    def _walk(self, names: tuple[str, ...]) -> _Node:
        node = self._root
        for name in names[1:]:
            node = node.children[name]
        return node

    def compare_queues(self, left: QueuePath, right: QueuePath) -> float:
        """Negative when ``left`` goes first: non-saturated first, then smaller share/weight per level."""
        lnode, rnode = self._root, self._root
        depth = min(len(left.names), len(right.names))
        for level in range(depth):
            if lnode.saturated != rnode.saturated:
                return 1.0 if lnode.saturated else -1.0
            lvalue, rvalue = lnode.share / lnode.weight, rnode.share / rnode.weight
            if lvalue != rvalue:
                return lvalue - rvalue
            if level + 1 < depth:
                lnode = lnode.children.get(left.names[level + 1], _Node())
                rnode = rnode.children.get(right.names[level + 1], _Node())
        return 0.0

    def reclaim_allows(
        self,
        reclaimer: tuple[QueuePath, str, Resources],
        victim: tuple[QueuePath, str, Resources],
    ) -> bool:
        """After moving the request from victim to reclaimer, does the reclaimer's queue still go first?

        Each argument is (queue path, job id, task request); both jobs must have been recorded with
        ``set_job``.  The tree is restored before returning.
        """
        rpath, rjob, rreq = reclaimer
        vpath, vjob, vreq = victim
        rleaf = self._walk(rpath.names).children[rjob]
        vleaf = self._walk(vpath.names).children[vjob]
        saved = (rleaf.allocated, vleaf.allocated)
        rleaf.allocated = rleaf.allocated + rreq
        vleaf.allocated = (vleaf.allocated - vreq).clamp_nonnegative()
        try:
            self.refresh()
            return self.compare_queues(rpath, vpath) < 0
        finally:
            rleaf.allocated, vleaf.allocated = saved
            self.refresh()
