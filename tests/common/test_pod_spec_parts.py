"""``PodView.parse`` keeps what it read of a pending pod's spec per spec (replicas of one workload): a pod parsed
after another with the same spec gives what a parse with nothing kept gives, whatever its own metadata and status
(labels that set the Koordinator classes, a priority the bands do not read, a spec it refuses)."""

from __future__ import annotations

import copy
import marshal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common import objects
from common.objects import PodView
from common.qos import PriorityClass, koord_qos, pod_priority_class

Pod = dict[str, Any]

_REQUESTS = st.sampled_from([{}, {"cpu": "100m"}, {"cpu": "1", "memory": "1Gi"}, {"memory": 5}])
_SPEC = st.fixed_dictionaries(
    {"containers": st.one_of(
        st.lists(st.builds(lambda r, lim: {"name": "c", "resources": {"requests": r, "limits": lim}},
                           _REQUESTS, _REQUESTS), min_size=1, max_size=2),
        st.just([]), st.just("c"))},
    optional={
        "priority": st.sampled_from([0, 5, 7000, 9999, 100000, "7", "x", 2.0]),
        "priorityClassName": st.sampled_from(["", "high"]),
        "schedulerName": st.sampled_from(["loadwise-scheduler", ""]),
        "nodeSelector": st.sampled_from([{"disk": "ssd"}, {}, {"disk": 1}]),
        "tolerations": st.sampled_from([[{"key": "k", "operator": "Exists"}], ["k"]]),
        "affinity": st.sampled_from([{"nodeAffinity": {}}, "none"]),
        "nodeName": st.sampled_from(["", "node-1"]),
    })
_LABELS = st.dictionaries(
    st.sampled_from(["app", "koordinator.sh/qosClass", "koordinator.sh/priority-class"]),
    st.sampled_from(["x", "BE", "LSR", "koord-batch", "koord-prod", "bogus"]), max_size=2)
_STATUS = st.fixed_dictionaries({}, optional={"qosClass": st.sampled_from(["Guaranteed", "BestEffort"]),
                                              "phase": st.sampled_from(["Pending", "Running"])})


def _pod(name: str, spec: dict[str, Any], labels: dict[str, str], status: dict[str, Any]) -> Pod:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels},
            "spec": copy.deepcopy(spec), "status": copy.deepcopy(status)}


def _parsed(pod: Pod) -> PodView | str:
    """The view, or the error's message."""
    try:
        return PodView.parse(pod)
    except ValueError as exc:
        return str(exc)


def _fresh(pod: Pod) -> PodView | str:
    """The parse with no spec kept: every part read from this pod."""
    objects._SPEC_PARTS.clear()
    got = _parsed(pod)
    objects._SPEC_PARTS.clear()
    return got


@settings(max_examples=300, deadline=None)
@given(_SPEC, _LABELS, _LABELS, _STATUS, _STATUS)
def test_a_replica_parses_as_with_nothing_kept(spec: dict[str, Any], first_labels: dict[str, str],
                                               labels: dict[str, str], first_status: dict[str, Any],
                                               status: dict[str, Any]) -> None:
    first, pod = _pod("a", spec, first_labels, first_status), _pod("b", spec, labels, status)
    expected = _fresh(pod)
    if isinstance(expected, PodView):   # the classes as Koordinator defines them, from this pod's labels
        assert expected.koord_qos == koord_qos(pod, expected.qos)
        assert expected.priority_class == pod_priority_class(pod, expected.koord_qos)
    _parsed(first)   # its parts are kept when it parses and is pending
    got = _parsed(pod)
    assert got == expected
    if isinstance(got, PodView):   # the spec's serialisation, when the view has one, is its spec's
        assert got.spec_bytes is None or got.spec_bytes == marshal.dumps(pod["spec"], 2)
        assert (got.spec_bytes is None) == ("nodeName" in spec)


def test_replicas_share_their_spec_parts() -> None:
    """The replica after the first takes the kept parts (the maps are the first one's), and its labels still set
    its Koordinator classes."""
    objects._SPEC_PARTS.clear()
    spec = {"containers": [{"name": "c"}], "nodeSelector": {"disk": "ssd"}}
    first = PodView.parse(_pod("a", spec, {}, {}))
    labelled = PodView.parse(_pod("b", spec, {"koordinator.sh/priority-class": "koord-prod"}, {}))
    assert labelled.node_selector is first.node_selector
    assert (first.koord_qos, first.priority_class) == ("BE", PriorityClass.BATCH)
    assert (labelled.koord_qos, labelled.priority_class) == ("BE", PriorityClass.PROD)


def test_a_bound_pod_or_a_refused_spec_is_not_kept() -> None:
    objects._SPEC_PARTS.clear()
    PodView.parse(_pod("a", {"containers": [{"name": "c"}], "nodeName": "node-1"}, {}, {}))
    with pytest.raises(ValueError, match="spec.tolerations"):
        PodView.parse(_pod("b", {"containers": [{"name": "c"}], "tolerations": ["k"]}, {}, {}))
    assert not objects._SPEC_PARTS
