"""pod_resources, kept per what the containers ask, must answer as the functions it stands for, pod by pod."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from common.podspec import PodResources, pod_limits, pod_requests, pod_resources
from common.qos import qos_class

QUANTITIES = ["100m", "1", "0", "250m", "1Gi", "500Mi", "2", "-1", "x", 3]
names = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "hugepages-2Mi"])
resource_map = st.one_of(st.none(), st.dictionaries(names, st.sampled_from(QUANTITIES), max_size=3))
container = st.fixed_dictionaries({"name": st.just("c")}, optional={
    "restartPolicy": st.sampled_from(["Always", "OnFailure", None]),
    "resources": st.one_of(st.none(), st.fixed_dictionaries({}, optional={"requests": resource_map,
                                                                           "limits": resource_map}))})
spec = st.fixed_dictionaries({"containers": st.lists(container, min_size=1, max_size=3)}, optional={
    "initContainers": st.lists(container, max_size=2),
    "overhead": st.sampled_from([{"cpu": "10m"}, {}]),
    "resources": st.sampled_from([{"requests": {"cpu": "2"}}, {}])})
status = st.fixed_dictionaries({}, optional={"qosClass": st.sampled_from(["Guaranteed", "BestEffort", "Other"])})


def _direct(pod: dict[str, Any]) -> PodResources | str:
    try:
        return PodResources(pod_requests(pod), pod_requests(pod, non_zero=True), pod_limits(pod), qos_class(pod))
    except ValueError as exc:
        return f"{type(exc).__name__}: {exc}"


def _kept(pod: dict[str, Any]) -> PodResources | str:
    try:
        return pod_resources(pod)
    except ValueError as exc:
        return f"{type(exc).__name__}: {exc}"


@settings(max_examples=300, deadline=None)
@given(spec=spec, status=status)
def test_same_answer_or_error_as_the_functions(spec: dict[str, Any], status: dict[str, Any]) -> None:
    pod = {"metadata": {"name": "p"}, "spec": spec, "status": status}
    assert _kept(pod) == _direct(pod)
    # a replica: other objects asking the same get the same answer (the kept one, on the second ask)
    replica = {"metadata": {"name": "q"}, "spec": {**spec, "containers": [dict(c) for c in spec["containers"]]},
               "status": dict(status)}
    assert _kept(replica) == _direct(replica)


def test_order_of_a_map_is_part_of_what_is_asked() -> None:
    """Two pods asking the same amounts in another key order each get their own answer, equal to the direct one
    (the answers' iteration order follows the pod's own maps)."""
    a = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
    b = {"spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "1Gi", "cpu": "1"}}}]}}
    for pod in (a, b, a):
        got = pod_resources(pod)
        assert list(got.requests.items()) == list(pod_requests(pod).items())
