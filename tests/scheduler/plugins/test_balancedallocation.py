"""balancedallocation through whole sessions: kube's current (change-in-balance) formula, the BestEffort skip,
the preference for nodes the pod balances, and kube's argument validation."""

from __future__ import annotations

from typing import Any

import pytest

from common.config import ConfigError
from tests.scheduler.factories import conf as parse
from tests.scheduler.factories import node, pod, run

from .helpers import conf, scores


def test_kube_worked_example_through_a_session() -> None:
    objs = [node("a", cpu="4", memory="10000"), node("b", cpu="4", memory="10000"), pod("p", cpu="3", memory="5000")]
    ssn, _ = run(objs, conf(("balancedallocation", {}, 2)), explain=True)
    # B_with = int((1 - |0.75 - 0.5| / 2) * 100) = 87, B_without = 100 -> 50 + (50 + 87 - 100) // 2 = 68
    assert scores(ssn, "default/p", "balancedallocation") == {"a": 136, "b": 136}


def test_prefers_the_node_the_pod_balances() -> None:
    objs = [node("cpu-heavy", cpu="4", memory="8Gi"), node("mem-heavy", cpu="4", memory="8Gi"),
            pod("c", cpu="3", memory="1Gi", node_name="cpu-heavy"), pod("m", cpu="500m", memory="6Gi",
                                                                        node_name="mem-heavy"),
            pod("p", cpu="100m", memory="1500Mi")]
    ssn, sink = run(objs, conf("balancedallocation"), explain=True)
    got = scores(ssn, "default/p", "balancedallocation")
    assert got["cpu-heavy"] > 75 > got["mem-heavy"]
    assert sink.binds["default/p"] == "cpu-heavy"


def test_best_effort_pods_are_skipped() -> None:
    objs = [node("a"), node("b"), pod("c", cpu="3", memory="1Gi", node_name="a"), pod("be", cpu=None, memory=None)]
    ssn, _ = run(objs, conf("balancedallocation"), explain=True)
    assert scores(ssn, "default/be", "balancedallocation") == {"a": 0, "b": 0}


def test_scalar_resources_count_only_when_requested() -> None:
    gpu = node("g", cpu="4", memory="8Gi")
    gpu["status"]["allocatable"]["nvidia.com/gpu"] = "4"
    args = {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1},
                          {"name": "nvidia.com/gpu", "weight": 1}]}
    ssn, _ = run([gpu, node("h"), pod("p", cpu="2", memory="4Gi")], conf(("balancedallocation", args)), explain=True)
    # cpu 0.5, memory 0.5: perfectly balanced, the gpu the pod does not ask for is left out -> 50 + (50 + 0) // 2
    assert scores(ssn, "default/p", "balancedallocation")["g"] == 75


@pytest.mark.parametrize(("resources", "field"), [
    ([{"name": "cpu", "weight": 2}], "weight"),
    ([{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}], "duplicate"),
    ([{"weight": 1}], "name"),
])
def test_argument_validation(resources: list[dict[str, Any]], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        parse(conf(("balancedallocation", {"resources": resources})))
