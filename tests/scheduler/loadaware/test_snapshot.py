"""Session open from cluster objects: cache admission, raw-allocatable, bound pods counted as estimates."""

from __future__ import annotations

import json

from common.objects import NodeView, PodView
from scheduler.loadaware.args import parse_loadaware_args
from scheduler.loadaware.snapshot import (
    RAW_ALLOCATABLE_ANNOTATION,
    RESERVATION_ANNOTATION,
    enters_cache,
    estimate_node_allocatable,
    open_state,
)
from scheduler.predicates.taints import node_taints
from tests.scheduler.loadaware.helpers import GI, metric


def _node(name: str, annotations: dict[str, str] | None = None) -> NodeView:
    return NodeView.parse({"metadata": {"name": name, "annotations": annotations or {}},
                           "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
                           "status": {"allocatable": {"cpu": "96", "memory": "512Gi", "pods": "110"}}})


def _bound(name: str, node: str, phase: str = "Running", annotations: dict[str, str] | None = None) -> PodView:
    return PodView.parse({"metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
                          "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {
                              "requests": {"cpu": "16", "memory": "32Gi"}, "limits": {"cpu": "16", "memory": "32Gi"}}}]},
                          "status": {"phase": phase}})


def test_cache_admission() -> None:
    assert enters_cache(_bound("a", "n1"))
    assert not enters_cache(_bound("a", ""))
    assert not enters_cache(_bound("a", "n1", phase="Succeeded"))
    assert not enters_cache(_bound("a", "n1", annotations={RESERVATION_ANNOTATION: "{}"}))


def test_raw_allocatable_overrides() -> None:
    n = _node("n", {RAW_ALLOCATABLE_ANNOTATION: json.dumps({"cpu": "48"})})
    assert estimate_node_allocatable(n)["cpu"] == 48000 and estimate_node_allocatable(n)["memory"] == 512 * GI
    assert estimate_node_allocatable(_node("m", {RAW_ALLOCATABLE_ANNOTATION: "nope"}))["cpu"] == 96000
    assert node_taints(n) == (("k", "v", "NoSchedule"),)


def test_bound_unreported_pod_counts_against_its_node() -> None:
    args = parse_loadaware_args(None)
    nodes = [_node("n1"), _node("n2")]
    st = open_state(args, nodes, [_bound("old", "n1"), _bound("done", "n2", phase="Failed")],
                    {"n1": metric("n1", cpu_milli=32000, memory=10 * GI),
                     "n2": metric("n2", cpu_milli=32000, memory=10 * GI)}, 1010.0)
    e = st.load_score[0] - st.load_score[1]
    assert e.tolist() == [13600, 24051816858]  # the unreported bound pod's estimate
