"""The /debug/state document: round trip, multi-tick merging, and errors that name the field."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from agent.qos.state import ContainerState, NodeState, PodState, load_ticks, refresh_usage
from common.config import ConfigError
from common.resources import Resources

DOC: dict[str, Any] = {
    "now": "2024-01-01T00:00:00Z",
    "node": {"name": "n1", "labels": {"pool": "x"}, "allocatable": {"cpu": "8", "memory": "16Gi"},
             "metrics": {"cpu_total_usage": 6500, "cpu_total_utilization": 81.25, "cpu_core_numbers": 8,
                         "memory_total": 17179869184, 'disk_read_kibps{diskName="sda"}': 12.5}},
    "pods": [
        {"namespace": "a", "name": "p1", "uid": "u1", "qosClass": "Burstable", "priority": 5500,
         "startTime": "2023-12-31T00:00:00Z", "usage": {"cpu": "1500m", "memory": "1Gi"},
         "terminationGracePeriodSeconds": 10,
         "containers": [{"name": "c", "usage": {"cpu": "1500m"}, "cpuQuota": 200000, "cpuPeriod": 100000,
                         "requests": {"cpu": "1"}, "limits": {"cpu": "2"}}]},
        {"namespace": "kube-system", "name": "etcd", "priority": 2000001000, "qosClass": "Guaranteed"},
    ],
}


def test_round_trip_and_derived_fields() -> None:
    s = NodeState.from_json(DOC)
    assert s.cpu_usage_milli == 6500 and s.cpu_capacity_milli == 8000 and s.memory_usage_bytes is None
    assert s.extra_metrics["cpu_total_utilization"] == 81.25
    p = s.pods[0]
    assert (p.cpu_usage_milli, p.memory_usage_bytes, p.priority_class) == (1500, 1 << 30, "koord-batch")
    assert p.requests["cpu"] == 1000 and p.limits["cpu"] == 2000  # summed from the containers
    assert p.containers[0].cpu_quota_us == 200000
    assert s.pods[1].critical and not p.critical
    assert NodeState.from_json(s.to_json()) == s


def test_ticks_merge_metrics_and_replace_pods() -> None:
    doc = copy.deepcopy(DOC)
    doc["ticks"] = [
        {"at": "2024-01-01T00:01:00Z"},
        {"node": {"metrics": {"cpu_total_usage": 100, "memory_total_usage": 5}}},
        {"at": 1704067500, "pods": []},
    ]
    ticks = load_ticks(doc)
    assert [t.time for t in ticks] == [1704067260.0, 1704067270.0, 1704067500.0]
    assert [t.cpu_usage_milli for t in ticks] == [6500, 100, 100]
    assert [t.memory_usage_bytes for t in ticks] == [None, 5, 5]
    assert [len(t.pods) for t in ticks] == [2, 2, 0]
    assert ticks[2].extra_metrics['disk_read_kibps{diskName="sda"}'] == 12.5


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda d: d.pop("now"), "now"),
    (lambda d: d["node"].pop("name"), "node.name"),
    (lambda d: d["node"]["metrics"].update(cpu_total_usage="high"), "node.metrics.cpu_total_usage"),
    (lambda d: d["pods"][0].update(qosClass="Gold"), "pods[0].qosClass"),
    (lambda d: d["pods"][0].update(priority="low"), "pods[0].priority"),
    (lambda d: d["pods"][0]["usage"].update(cpu="fast"), "pods[0].usage.cpu"),
    (lambda d: d["pods"][0]["containers"][0].update(cpuQuota=-5), "pods[0].containers[0].cpuQuota"),
    (lambda d: d["pods"][0]["containers"][0].update(cpuPeriod=0), "pods[0].containers[0].cpuPeriod"),
    (lambda d: d["pods"][0].update(startTime="yesterday"), "pods[0].startTime"),
    (lambda d: d["pods"].append(copy.deepcopy(d["pods"][0])), "pods[2].name"),
    (lambda d: d.update(ticks=[{"node": {"metrics": {"cpu_total_usage": -1}}}]),
     "ticks[0].node.metrics.cpu_total_usage"),
    (lambda d: d.update(ticks=[{"pods": [{"namespace": "x"}]}]), "ticks[0].pods[0].name"),
])
def test_errors_name_the_field(mutate: Any, field: str) -> None:
    doc = copy.deepcopy(DOC)
    mutate(doc)
    with pytest.raises(ConfigError) as err:
        load_ticks(doc, source="state.json")
    assert err.value.field == field
    assert str(err.value).startswith(f"state.json: {field}: ")


def _one_container_pod() -> tuple[PodState, ContainerState]:
    res = Resources.of(cpu=1500, memory=2**30)
    container = ContainerState("main", cpu_usage_milli=700, cpu_quota_us=150_000, cpu_period_us=100_000,
                               requests=res, limits=res)
    pod = PodState("ns", "p", "uid-1", "Burstable", 5, "koord-batch", 12.5, 700, 2**29, res, res, (container,),
                   labels={"app": "a"}, annotations={"x": "y"}, termination_grace_period_seconds=30)
    return pod, container


def test_refresh_usage_is_replace_of_the_usage_and_quota_in_place() -> None:
    """The simulator's copy-free refresh leaves the pod equal to ``dataclasses.replace`` of the pod and its
    container, in the same objects."""
    pod, container = _one_container_pod()
    copied = replace(pod, cpu_usage_milli=900, memory_usage_bytes=2**28,
                     containers=(replace(container, cpu_usage_milli=900, cpu_quota_us=120_000),))
    refresh_usage(pod, 900, 2**28, 120_000)
    assert pod == copied and pod.containers[0] is container and pod.key == "ns/p"
    assert (container.cpu_usage_milli, container.cpu_quota_us) == (900, 120_000)


def test_a_pods_key_follows_its_name_through_copies() -> None:
    pod = PodState("ns", "p", "uid-1", "BestEffort", 0, "koord-free", None, 0, 0, Resources(), Resources(),
                   (ContainerState("main", 0, -1, 100_000),))
    assert pod.key == "ns/p" and replace(pod, cpu_usage_milli=5).key == "ns/p"
    assert replace(pod, name="q").key == "ns/q" and replace(pod, namespace="other").key == "other/p"
    assert pod == replace(pod)  # the key is derived, never compared on its own
