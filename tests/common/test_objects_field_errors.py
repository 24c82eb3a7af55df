"""Every malformed-object error names the field: each field of a full Pod, Node, NodeMetric, PodGroup, Queue and
PriorityClass replaced in turn by a value of the wrong shape either parses or raises a ValueError naming a field;
none falls back to the generic "malformed object" and nothing else escapes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from common.objects import NodeMetricView, NodeView, PodGroupView, PodView, PriorityClassView, QueueView
from tests.edit import replaced, walk
from tests.scheduler.factories import node, pod, podgroup, queue
from tests.scheduler.test_explain_cli import _nodemetric


def _pod() -> dict[str, Any]:
    p = pod("p", cpu="1", node_name="a", limits={"cpu": "2"},
            extra_spec={"tolerations": [{"key": "k", "operator": "Exists"}], "affinity": {"nodeAffinity": {}}})
    p["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "controller": True}]
    p["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return p


def _nodemetric_full() -> dict[str, Any]:
    nm = _nodemetric("a", "1", "1Gi", 1e9)
    nm["status"]["podsMetric"] = [{"namespace": "d", "name": "p", "podUsage": {"resources": {"cpu": "1"}}}]
    nm["status"]["nodeMetric"]["aggregatedNodeUsages"] = [
        {"duration": "5m", "usage": {"p95": {"resources": {"cpu": "1"}}}}]
    nm["spec"]["metricCollectPolicy"]["nodeAggregatePolicy"] = {"durations": ["5m"]}
    return nm


def _queue() -> dict[str, Any]:
    q = queue("q", capability={"cpu": "1"})
    q["spec"]["guarantee"] = {"resource": {"cpu": "1"}}
    return q


OBJECTS: list[tuple[Callable[[Any], Any], dict[str, Any]]] = [
    (NodeView.parse, node("a", taints=[{"key": "k", "effect": "NoSchedule"}])),
    (PodView.parse, _pod()),
    (NodeMetricView.parse, _nodemetric_full()),
    (PodGroupView.parse, podgroup("g", 1, min_resources={"cpu": "1"})),
    (QueueView.parse, _queue()),
    (PriorityClassView.parse, {"kind": "PriorityClass", "metadata": {"name": "pc"}, "value": 5}),
]


@pytest.mark.parametrize(("parse", "obj"), OBJECTS, ids=lambda x: getattr(x, "__qualname__", ""))
def test_every_wrong_shape_is_named(parse: Callable[[Any], Any], obj: dict[str, Any]) -> None:
    for path, _ in list(walk(obj)):
        for value in ("x", [1], {"a": 1}, 7):
            try:
                parse(replaced(obj, path, value))
            except ValueError as exc:
                assert "malformed object" not in str(exc), (path, value, str(exc))
