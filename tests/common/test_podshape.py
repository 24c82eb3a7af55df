"""Pod fields of the wrong shape are refused when the pod is parsed, naming the field (common/podshape.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from common.objects import PodView
from tests.edit import replaced

TERM = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}],
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
POD_TERM = {"labelSelector": {"matchLabels": {"app": "x"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]},
            "namespaceSelector": {}, "namespaces": ["default"], "topologyKey": "zone", "matchLabelKeys": ["rev"]}
FULL: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "x"}, "annotations": {"a": "b"}},
    "spec": {
        "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}],
                        "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}}],
        "initContainers": [{"name": "i", "resources": {}}],
        "overhead": {"cpu": "10m"},
        "nodeSelector": {"zone": "a"},
        "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute", "tolerationSeconds": 30}],
        "topologySpreadConstraints": [{"maxSkew": 1, "minDomains": 2, "topologyKey": "zone",
                                       "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "x"}},
                                       "matchLabelKeys": ["rev"]}],
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [TERM]},
                             "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": copy.deepcopy(TERM)}]},
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [POD_TERM]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm": copy.deepcopy(POD_TERM)}]},
        },
    },
}


def test_a_pod_using_every_checked_field_parses() -> None:
    view = PodView.parse(FULL)
    assert view.tolerations[0]["key"] == "k" and view.node_selector == {"zone": "a"}


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (["spec"], "x", "spec: expected an object, got 'x'"),
        (["spec", "containers"], "c", "spec.containers: expected a list, got 'c'"),
        (["spec", "containers", 0, "resources", "requests"], ["cpu"], "spec.containers[0].resources.requests: expected an object"),
        (["spec", "containers", 0, "resources", "limits"], "2", "spec.containers[0].resources.limits: expected an object"),
        (["spec", "containers", 0, "resources"], "cpu", "spec.containers[0].resources: expected an object"),
        (["spec", "containers", 0, "ports"], 80, "spec.containers[0].ports: expected a list"),
        (["spec", "containers", 0, "ports", 0, "hostPort"], "x", "spec.containers[0].ports[0].hostPort: expected an integer"),
        (["spec", "initContainers", 0], "i", "spec.initContainers[0]: expected an object"),
        (["spec", "overhead"], ["cpu"], "spec.overhead: expected an object"),
        (["spec", "nodeSelector"], ["zone"], "spec.nodeSelector: expected an object"),
        (["spec", "nodeSelector", "zone"], 1, "spec.nodeSelector.zone: expected a string, got 1"),
        (["spec", "tolerations"], "all", "spec.tolerations: expected a list, got 'all'"),
        (["spec", "tolerations", 0], "all", "spec.tolerations[0]: expected an object, got 'all'"),
        (["spec", "tolerations", 0, "tolerationSeconds"], "30", "spec.tolerations[0].tolerationSeconds: expected an integer"),
        (["spec", "topologySpreadConstraints", 0, "maxSkew"], "1", "spec.topologySpreadConstraints[0].maxSkew: expected an integer"),
        (["spec", "topologySpreadConstraints", 0, "labelSelector"], ["x"],
         "spec.topologySpreadConstraints[0].labelSelector: expected an object"),
        (["spec", "affinity"], "zone", "spec.affinity: expected an object"),
        (["spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"], "zone",
         "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: expected a list"),
        (["spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", 0,
          "matchExpressions", 0, "values"], "a",
         "nodeSelectorTerms[0].matchExpressions[0].values: expected a list of strings"),
        (["spec", "affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution", 0, "weight"], "x",
         "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: expected an integer"),
        (["spec", "affinity", "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution", 0, "labelSelector"], ["x"],
         "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector: expected an object"),
        (["spec", "affinity", "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution", 0, "podAffinityTerm",
          "topologyKey"], 3, "podAffinityTerm.topologyKey: expected a string, got 3"),
        (["metadata", "labels"], ["app"], "metadata.labels: expected an object"),
    ],
)
def test_a_field_of_the_wrong_shape_is_refused_by_path(path: list[Any], value: Any, message: str) -> None:
    with pytest.raises(ValueError) as err:
        PodView.parse(replaced(FULL, path, value))
    assert str(err.value).startswith("Pod ns/p: ") and message in str(err.value)
