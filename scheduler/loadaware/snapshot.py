"""Build a session's load-aware state from parsed cluster objects (docs/design/loadaware.md §4, §5): which pods
enter the assigned-pod cache, node allocatable estimation (``node.koordinator.sh/raw-allocatable``), and
the NumPy allocatable matrix in the args' resource order."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from common.objects import NodeMetricView, NodeView, PodView
from common.resources import Resources

from .args import LoadAwareArgs
from .cache import RESERVATION_ANNOTATION, AssignedPodCache, NodeEntries, assigned_pod, enters_cache
from .evaluate import LoadAwareState
from .memo import LoadAwareMemo

__all__ = ["RAW_ALLOCATABLE_ANNOTATION", "RESERVATION_ANNOTATION", "estimate_node_allocatable", "enters_cache",
           "open_state"]

RAW_ALLOCATABLE_ANNOTATION = "node.koordinator.sh/raw-allocatable"


def estimate_node_allocatable(node: NodeView) -> Resources:
    """Allocatable, with the raw-allocatable annotation's values overriding when it parses and differs."""
    raw = node.annotations.get(RAW_ALLOCATABLE_ANNOTATION)
    if not raw:
        return node.allocatable
    try:
        parsed = Resources.parse(json.loads(raw), field=f"Node {node.name}: {RAW_ALLOCATABLE_ANNOTATION}")
    except ValueError:
        return node.allocatable
    if not parsed or all(node.allocatable.get(k, 0) == v for k, v in parsed.items()):
        return node.allocatable
    merged = dict(node.allocatable)
    merged.update(parsed)
    return Resources(merged)


def allocatable_row(node: NodeView, names: Sequence[str]) -> list[int]:
    alloc = estimate_node_allocatable(node)
    return [alloc.get(r, 0) for r in names]


def allocatable_matrix(nodes: Sequence[NodeView], names: Sequence[str]) -> npt.NDArray[np.int64]:
    out = np.zeros((len(nodes), len(names)), dtype=np.int64)
    for i, node in enumerate(nodes):
        out[i] = allocatable_row(node, names)
    return out


def open_state(args: LoadAwareArgs, nodes: Sequence[NodeView], pods: Iterable[PodView],
               metrics: Mapping[str, NodeMetricView], now: float,
               waterline_percent: npt.NDArray[np.int64] | None = None,
               memo: LoadAwareMemo | None = None,
               pods_by_node: Sequence[Sequence[PodView]] | None = None) -> LoadAwareState:
    """The session's load-aware state; ``memo`` (made for ``args``) reuses what earlier sessions derived from the
    same objects.  ``pods_by_node``: ``pods`` split by node, in ``nodes`` order, each pod on the node it names —
    the memo then also keeps each node's entries while its pods stay the same objects."""
    if memo is not None and memo.args != args:
        raise ValueError("the load-aware memo was made for other arguments")
    cache = AssignedPodCache()
    groups: list[NodeEntries] | None = None
    if memo is None:
        for pod in pods:
            if enters_cache(pod):
                cache.add(assigned_pod(pod, pod.node_name, now, args))
    elif pods_by_node is not None:
        groups = [memo.node_entries(node.name, on, now) for node, on in zip(nodes, pods_by_node, strict=True)]
        cache.add_nodes(groups, now)
    else:
        cache.add_all(memo.entries(pods, now))
    names = args.resource_names
    alloc = allocatable_matrix(nodes, names) if memo is None else memo.allocatable(
        nodes, lambda node: allocatable_row(node, names))
    return LoadAwareState(args, [n.name for n in nodes], alloc, [n.annotations for n in nodes], metrics, cache, now,
                          waterline_percent, memo, groups)
