"""Volcano ``nodeorder`` arguments (docs/design/scheduler.md §4.8): per-scorer weights, 0 disables a scorer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.lenient import int_arg

__all__ = ["NodeOrderWeights", "parse_nodeorder_arguments"]

_KEYS = {
    "leastrequested.weight": ("least_requested", 1),
    "mostrequested.weight": ("most_requested", 0),
    "balancedresource.weight": ("balanced_resource", 1),
    "nodeaffinity.weight": ("node_affinity", 2),
    "podaffinity.weight": ("pod_affinity", 2),
    "tainttoleration.weight": ("taint_toleration", 3),
    "imagelocality.weight": ("image_locality", 1),
    "podtopologyspread.weight": ("pod_topology_spread", 2),
}


@dataclass(frozen=True, slots=True)
class NodeOrderWeights:
    least_requested: int = 1
    most_requested: int = 0
    balanced_resource: int = 1
    node_affinity: int = 2
    pod_affinity: int = 2
    taint_toleration: int = 3
    image_locality: int = 1
    pod_topology_spread: int = 2


def parse_nodeorder_arguments(raw: Mapping[str, Any]) -> NodeOrderWeights:
    """Lenient like Volcano's ``Arguments.GetInt`` (:mod:`scheduler.lenient`): a value that is not an integer
    keeps the default."""
    return NodeOrderWeights(**{attr: int_arg(raw, key, default) for key, (attr, default) in _KEYS.items()})
