"""Taints, node affinity and the dependency gate: kube matching rules, normalisation and grouping."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from common.objects import PodView
from scheduler.predicates.affinity import affinity_filter, affinity_score, label_groups, match_expression
from scheduler.predicates.dependency import LABELS_ANNOTATION, NAMESPACE_ANNOTATION, check_dependency
from scheduler.predicates.groups import NodeGroups
from scheduler.predicates.taints import Taint, taint_filter, taint_score, tolerates

NS: Taint = ("dedicated", "gpu", "NoSchedule")
PREF: Taint = ("spot", "true", "PreferNoSchedule")


@pytest.mark.parametrize(
    ("tol", "taint", "want"),
    [
        ({"key": "dedicated", "value": "gpu"}, NS, True),  # Equal is the default operator
        ({"key": "dedicated", "value": "cpu"}, NS, False),
        ({"key": "dedicated", "operator": "Exists"}, NS, True),
        ({"operator": "Exists"}, NS, True),  # empty key + Exists tolerates everything
        ({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}, NS, False),
        ({"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}, NS, True),
    ],
)
def test_toleration_matching(tol: dict[str, str], taint: Taint, want: bool) -> None:
    assert tolerates(tol, taint) is want


def test_taint_filter_and_reverse_normalised_score() -> None:
    groups = NodeGroups([(), (NS,), (PREF,), (PREF, ("b", "", "PreferNoSchedule")), ()])
    assert taint_filter(groups, []).tolist() == [True, False, True, True, True]
    assert taint_score(groups, []).tolist() == [100, 100, 50, 0, 100]
    # a NoSchedule-effect toleration does not count for scoring
    tol = [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]
    assert taint_score(groups, tol).tolist() == [100, 100, 50, 0, 100]
    tol = [{"key": "spot", "operator": "Exists"}]
    assert taint_score(groups, tol).tolist() == [100, 100, 100, 0, 100]
    assert len(groups.keys) == 4  # identical taint sets evaluated once


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        ({"key": "zone", "operator": "In", "values": ["a", "b"]}, True),
        ({"key": "zone", "operator": "NotIn", "values": ["a"]}, False),
        ({"key": "gpu", "operator": "NotIn", "values": ["x"]}, True),  # absent key satisfies NotIn
        ({"key": "zone", "operator": "Exists"}, True),
        ({"key": "gpu", "operator": "DoesNotExist"}, True),
        ({"key": "cores", "operator": "Gt", "values": ["8"]}, True),
        ({"key": "cores", "operator": "Lt", "values": ["16"]}, False),
        ({"key": "zone", "operator": "Gt", "values": ["1"]}, False),  # non-integer label
    ],
)
def test_match_expression(expr: dict[str, Any], want: bool) -> None:
    assert match_expression(expr, {"zone": "a", "cores": "16"}) is want


def test_affinity_filter_and_score() -> None:
    labels = [{"cpu": "true", "zone": "a"}, {"cpu": "true", "zone": "b"}, {"zone": "a"}]
    names = ["n0", "n1", "n2"]
    groups = label_groups(labels, names)
    assert affinity_filter({"cpu": "true"}, {}, groups).tolist() == [True, True, False]
    required = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
        {"matchExpressions": [{"key": "cpu", "operator": "DoesNotExist"}]}]}}}
    assert affinity_filter({}, required, groups).tolist() == [False, True, True]
    empty_terms = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}}
    assert affinity_filter({}, empty_terms, groups).tolist() == [False, False, False]
    by_name = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}}
    assert affinity_filter({}, by_name, label_groups(labels, names, by_name=True)).tolist() == [False, False, True]
    preferred = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 3, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
        {"weight": 1, "preference": {"matchExpressions": [{"key": "cpu", "operator": "Exists"}]}}]}}
    assert affinity_score(preferred, groups).tolist() == [100, 25, 75]
    assert affinity_score(preferred, groups, np.array([False, True, True])).tolist() == [0, 33, 100]
    assert affinity_score({}, groups).tolist() == [0, 0, 0]


def _pod(name: str, ns: str, labels: dict[str, str], ready: bool) -> PodView:
    return PodView.parse({"metadata": {"name": name, "namespace": ns, "labels": labels},
                          "spec": {"containers": [{"name": "c"}]},
                          "status": {"phase": "Running",
                                     "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}})


def test_dependency_gate() -> None:
    ann = {NAMESPACE_ANNOTATION: "kube-system", LABELS_ANNOTATION: "k8s-app=metrics-server"}
    ready = _pod("ms", "kube-system", {"k8s-app": "metrics-server"}, True)
    unready = _pod("ms2", "kube-system", {"k8s-app": "metrics-server"}, False)
    assert check_dependency({}, [], []).ok
    assert check_dependency(ann, ["default"], [ready]).reason == "not found namespace: kube-system"
    assert check_dependency(ann, ["kube-system"], []).reason == "rely pod not ready"
    assert check_dependency(ann, ["kube-system"], [ready, unready]).reason == "rely pod not ready"
    assert check_dependency(ann, ["kube-system"], [ready]).ok
