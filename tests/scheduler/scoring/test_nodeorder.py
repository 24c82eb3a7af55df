"""Volcano nodeorder weights: defaults and lenient parsing."""

from __future__ import annotations

from scheduler.scoring.nodeorder import NodeOrderWeights, parse_nodeorder_arguments


def test_nodeorder_weights() -> None:
    assert parse_nodeorder_arguments({}) == NodeOrderWeights()
    w = parse_nodeorder_arguments({"mostrequested.weight": 2, "leastrequested.weight": 0, "tainttoleration.weight": "x"})
    assert (w.most_requested, w.least_requested, w.taint_toleration, w.node_affinity) == (2, 0, 3, 2)
