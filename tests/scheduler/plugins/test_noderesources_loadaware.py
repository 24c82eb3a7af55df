"""The noderesources and loadaware plugins through whole sessions: kube's bin-packing docs example (60 and 69) and
burst safety — many identical pods placed in one session onto idle nodes whose metrics cannot show them yet spread
by the assigned-pod estimates instead of piling onto one node."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.scheduler.factories import T0, node, pod, run

from .helpers import conf, metric, scores

FOO = "intel.com/foo"


def _with_foo(obj: dict[str, Any], amount: str, *, allocatable: bool = False) -> dict[str, Any]:
    if allocatable:
        obj["status"]["allocatable"][FOO] = amount
        obj["status"]["capacity"][FOO] = amount
    else:
        obj["spec"]["containers"][0]["resources"]["requests"][FOO] = amount
    return obj


def test_requested_to_capacity_ratio_docs_example() -> None:
    args = {"scoringStrategy": {"type": "RequestedToCapacityRatio",
                                "resources": [{"name": FOO, "weight": 5}, {"name": "memory", "weight": 1},
                                              {"name": "cpu", "weight": 3}],
                                "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0},
                                                                       {"utilization": 100, "score": 10}]}}}
    objs = [_with_foo(node("n1", cpu="8", memory="1Gi"), "4", allocatable=True),
            _with_foo(node("n2", cpu="8", memory="1Gi"), "8", allocatable=True),
            _with_foo(pod("used-1", cpu="1", memory="256Mi", node_name="n1"), "1"),
            _with_foo(pod("used-2", cpu="6", memory="512Mi", node_name="n2"), "2"),
            _with_foo(pod("p", cpu="2", memory="256Mi"), "2")]
    ssn, sink = run(objs, conf(("noderesources", args)), explain=True)
    # n1: foo 75, memory 50, cpu 37 -> 536 / 9 = 59.6 -> 60; n2: foo 50, memory 75, cpu 100 -> 625 / 9 -> 69
    assert scores(ssn, "default/p", "noderesources") == {"n1": 60, "n2": 69}
    assert sink.binds["default/p"] == "n2"


def test_burst_of_identical_pods_spreads_by_assigned_pod_estimates() -> None:
    names = [f"n{i}" for i in range(10)]
    objs: list[dict[str, Any]] = [node(n, cpu="8", memory="16Gi") for n in names]
    objs += [metric(n, 400, 1) for n in names]  # fresh, but taken before this session's pods exist
    objs += [pod(f"burst-{i}", cpu="500m", memory="512Mi", created=T0 + i) for i in range(50)]
    _, sink = run(objs, conf("loadaware"))
    per_node = Counter(sink.binds.values())
    assert len(sink.binds) == 50
    assert sorted(per_node.values()) == [5] * 10
