"""Views, selectors, durations, resource vectors and config loading."""

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from common.config import ConfigError, load_document, load_objects
from common.duration import format_duration, parse_duration
from common.objects import (
    NodeMetricView,
    NodeView,
    PodGroupView,
    PodMetricView,
    PodView,
    PriorityClassView,
    QueueView,
)
from common.qos import PriorityClass, QoSClass
from common.resources import Resources
from common.selectors import LabelSelector, SelectorError, match_field_selector, parse_selector_string


def test_resources_arithmetic_and_fit() -> None:
    a = Resources.parse({"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "1", "hugepages-2Mi": "4Mi"})
    assert a["cpu"] == 1500 and a["memory"] == 2**30 and a["nvidia.com/gpu"] == 1
    b = Resources(cpu=500, memory=2**29)
    assert (a - b)["cpu"] == 1000
    assert (a + b)["memory"] == 3 * 2**29
    assert b.fits_in(a) and not a.fits_in(b)
    assert a.insufficient(b) == ["cpu", "hugepages-2Mi", "memory", "nvidia.com/gpu"]
    assert a.to_kube() == {"cpu": "1500m", "hugepages-2Mi": "4Mi", "memory": "1Gi", "nvidia.com/gpu": "1"}
    assert Resources(cpu=0) == Resources()
    assert (a - a).is_zero()
    with pytest.raises(ValueError, match="memory"):
        Resources.parse({"memory": "lots"}, field="status.allocatable")


def test_label_selector() -> None:
    sel = LabelSelector.parse(
        {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}
    )
    assert sel.matches({"app": "web"})
    assert sel.matches({"app": "web", "tier": "fe"})
    assert not sel.matches({"app": "web", "tier": "db"})
    assert LabelSelector.parse(None).matches({})
    with pytest.raises(SelectorError, match=r"matchExpressions\[0\].operator"):
        LabelSelector.parse({"matchExpressions": [{"key": "a", "operator": "Maybe"}]})
    with pytest.raises(SelectorError, match="values"):
        LabelSelector.parse({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})


def test_selector_strings() -> None:
    s = parse_selector_string("app=web,tier!=db,env in (a, b),!legacy,gpu")
    assert s.matches({"app": "web", "env": "a", "gpu": "1"})
    assert not s.matches({"app": "web", "env": "c", "gpu": "1"})
    assert not s.matches({"app": "web", "env": "a", "gpu": "1", "legacy": "x"})
    pod = {"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}}
    assert match_field_selector(pod, "spec.nodeName=n1")
    assert not match_field_selector(pod, "spec.nodeName!=n1")


def test_durations() -> None:
    assert parse_duration("5m0s") == 300
    assert parse_duration("1h30m") == 5400
    assert parse_duration("300ms") == pytest.approx(0.3)
    assert parse_duration(60) == 60
    assert format_duration(300) == "5m0s"
    assert format_duration(3600) == "1h0m0s"
    with pytest.raises(ValueError, match="window"):
        parse_duration("5 minutes", field="window")


def test_node_and_pod_views() -> None:
    node = NodeView.parse(
        {
            "metadata": {"name": "n1", "labels": {"a": "b"}},
            "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "False"}]},
        }
    )
    assert node.allocatable == Resources(cpu=4000, memory=8 * 2**30, pods=110)
    assert node.taints[0].key == "k" and not node.ready
    pod = PodView.parse(
        {
            "metadata": {"name": "p", "namespace": "ns", "annotations": {"scheduling.loadwise.io/group-name": "g"},
                         "ownerReferences": [{"kind": "DaemonSet", "name": "ds", "controller": True}]},
            "spec": {"priority": 5500, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        }
    )
    assert pod.key == "ns/p" and pod.group_name == "g" and pod.is_daemonset
    assert pod.qos == QoSClass.BURSTABLE and pod.priority_class == PriorityClass.BATCH
    assert pod.nonzero_requests == Resources(cpu=1000, memory=200 * 2**20)
    with pytest.raises(ValueError, match="Pod ns/bad"):
        PodView.parse({"metadata": {"name": "bad", "namespace": "ns"},
                       "spec": {"containers": [{"resources": {"requests": {"cpu": "x"}}}]}})


def test_nodemetric_view() -> None:
    nm = NodeMetricView.parse(
        {
            "metadata": {"name": "n1"},
            "spec": {"metricCollectPolicy": {"aggregateDurationSeconds": 300, "reportIntervalSeconds": 60,
                                             "nodeAggregatePolicy": {"durations": ["5m0s", "10m0s"]}}},
            "status": {
                "updateTime": "2024-01-01T00:00:00Z",
                "nodeMetric": {
                    "nodeUsage": {"resources": {"cpu": "1500m", "memory": "2Gi"}},
                    "aggregatedNodeUsages": [
                        {"duration": "5m0s", "usage": {"p95": {"resources": {"cpu": "2"}}, "p99": {}}},
                    ],
                },
                "podsMetric": [{"namespace": "ns", "name": "p", "podUsage": {"resources": {"cpu": "100m"}},
                                "priority": "koord-prod", "qos": "LS"}],
            },
        }
    )
    assert nm.node_usage["cpu"] == 1500
    assert nm.aggregated[300.0] == {"p95": Resources(cpu=2000)}
    assert nm.durations == (300.0, 600.0)
    assert nm.pods[0].key == "ns/p" and nm.pods[0].usage["cpu"] == 100
    assert nm.update_time == 1704067200.0


def test_podgroup_and_queue_views() -> None:
    pg = PodGroupView.parse({"metadata": {"name": "g", "namespace": "ns"},
                             "spec": {"minMember": 3, "minTaskMember": {"ps": 1}, "queue": "q1",
                                      "minResources": {"cpu": "2"}}})
    assert pg.key == "ns/g" and pg.min_member == 3 and pg.min_task_member == {"ps": 1}
    assert pg.phase == "Pending" and pg.min_resources["cpu"] == 2000
    q = QueueView.parse({"metadata": {"name": "q1"}, "spec": {"weight": 2, "guarantee": {"resource": {"cpu": "1"}}}})
    assert q.weight == 2 and q.reclaimable and q.guarantee["cpu"] == 1000 and q.state == "Open"
    with pytest.raises(ValueError, match="spec.weight"):
        QueueView.parse({"metadata": {"name": "bad"}, "spec": {"weight": -1}})


def test_load_objects_forms(tmp_path: Path) -> None:
    stream = tmp_path / "s.yaml"
    stream.write_text("kind: Node\nmetadata: {name: n1}\n---\nkind: List\nitems:\n- kind: Pod\n  metadata: {name: p}\n")
    assert [o["kind"] for o in load_objects(stream)] == ["Node", "Pod"]
    js = tmp_path / "s.json"
    js.write_text('{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}}]}')
    assert load_objects(js)[0]["metadata"]["name"] == "n"
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Node\nmetadata: {}\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: document\[0\]: missing metadata.name"):
        load_objects(bad)
    with pytest.raises(ConfigError, match="file not found"):
        load_document(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [1, 2\n")
    with pytest.raises(ConfigError, match="broken.yaml: invalid YAML/JSON at line"):
        load_document(broken)


def test_pod_metric_views_built_slot_by_slot_equal_the_dataclass() -> None:
    usage = Resources({"cpu": 250, "memory": 1 << 20})
    pod = {"namespace": "ns", "name": "p", "priority": "koord-prod", "qos": "LS",
           "podUsage": {"resources": {"cpu": "250m", "memory": "1Mi"}}}
    (fast,) = NodeMetricView.parse({"metadata": {"name": "n"}, "status": {"podsMetric": [pod]}}).pods
    assert fast == PodMetricView("ns", "p", usage, "koord-prod", "LS") and fast.key == "ns/p"
    assert [f.name for f in fields(PodMetricView)] == ["namespace", "name", "usage", "priority", "qos"]
    with pytest.raises(AttributeError):
        fast.name = "q"  # type: ignore[misc]


def test_object_files_syntax_errors_are_one_line_naming_where(tmp_path: Path) -> None:
    bad_json = tmp_path / "objects.json"
    bad_json.write_text('[{"kind": "Pod"}\n')
    with pytest.raises(ConfigError, match=r"objects.json: invalid JSON at line 2, column 1: Expecting ',' delimiter$"):
        load_objects(bad_json)
    bad_yaml = tmp_path / "objects.yaml"
    bad_yaml.write_text("kind: Pod\nmetadata: {name: [\n")
    with pytest.raises(ConfigError) as err:
        load_objects(bad_yaml)
    assert str(err.value).startswith(f"{bad_yaml}: invalid YAML/JSON at line 3, column 1: ") and "\n" not in str(err.value)


def test_quantities_past_the_packable_range_are_capped() -> None:
    from common.resources import MAX_QUANTITY

    big = Resources.parse({"cpu": "1Ei", "memory": "1e30", "example.com/x": -(10**30), "pods": "110"})
    assert dict(big) == {"cpu": MAX_QUANTITY, "memory": MAX_QUANTITY, "example.com/x": -MAX_QUANTITY, "pods": 110}
    assert Resources.parse({"memory": str(MAX_QUANTITY)})["memory"] == MAX_QUANTITY  # the bound itself is kept
    assert Resources.parse({"memory": "8Pi"})["memory"] == 8 * 2**50 == MAX_QUANTITY


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": "x"}}, "Queue q: spec.weight: expected an integer, got 'x'"),
        ({"kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": 1.5}}, "Queue q: spec.weight: expected an integer, got 1.5"),
        ({"kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": -1}}, "Queue q: spec.weight must be >= 0"),
        ({"kind": "Queue", "metadata": {"name": "q"}, "spec": {"priority": [1]}}, "Queue q: spec.priority: expected an integer"),
        ({"kind": "PodGroup", "metadata": {"name": "g", "namespace": "ns"}, "spec": {"minMember": "two"}},
         "PodGroup ns/g: spec.minMember: expected an integer, got 'two'"),
        ({"kind": "PodGroup", "metadata": {"name": "g", "namespace": "ns"}, "spec": {"minTaskMember": {"w": -1}}},
         "PodGroup ns/g: spec.minTaskMember.w must be >= 0"),
        ({"kind": "PriorityClass", "metadata": {"name": "pc"}, "value": "high"}, "PriorityClass pc: value: expected an integer"),
        ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": {"priority": "high", "containers": [{"name": "c"}]}},
         "Pod ns/p: spec.priority: expected an integer, got 'high'"),
    ],
)
def test_integer_fields_name_themselves_when_wrong(obj: dict[str, object], message: str) -> None:
    parse = {"Queue": QueueView.parse, "PodGroup": PodGroupView.parse, "Pod": PodView.parse,
             "PriorityClass": PriorityClassView.parse}[str(obj["kind"])]
    with pytest.raises(ValueError) as err:
        parse(obj)
    assert message in str(err.value)


def test_integer_fields_read_what_the_api_server_would() -> None:
    q = QueueView.parse({"kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": 2.0, "priority": "3"}})
    assert (q.weight, q.priority) == (2, 3)
    g = PodGroupView.parse({"kind": "PodGroup", "metadata": {"name": "g"}, "spec": {}})
    assert g.min_member == 1


@pytest.mark.parametrize(
    ("parse", "obj", "message"),
    [
        (NodeView.parse, "node", "Node: expected an object, got 'node'"),
        (NodeView.parse, {"metadata": {"name": "n"}, "spec": "x"}, "Node n: spec: expected an object, got 'x'"),
        (NodeView.parse, {"metadata": {"name": "n"}, "spec": {"taints": "x"}}, "Node n: spec.taints: expected a list, got 'x'"),
        (NodeView.parse, {"metadata": {"name": "n"}, "spec": {"taints": ["x"]}}, "Node n: spec.taints[0]: expected an object"),
        (NodeView.parse, {"metadata": {"name": "n"}, "spec": {"unschedulable": "yes"}},
         "Node n: spec.unschedulable: expected true or false, got 'yes'"),
        (NodeView.parse, {"metadata": {"name": "n"}, "status": {"conditions": {"Ready": "True"}}},
         "Node n: status.conditions: expected a list"),
        (PodView.parse, {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"containers": []}},
         "Pod ns/p: spec.containers: required: a pod has at least one container"),
        (PodView.parse, {"metadata": {"name": "p", "namespace": "ns"}}, "Pod ns/p: spec: expected an object"),
        (PodView.parse, {"metadata": {"name": "p", "namespace": "ns"},
                         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "-1"}}}]}},
         "Pod ns/p: spec.containers[0].resources.requests.cpu: must not be negative, got '-1'"),
        (PodView.parse, {"metadata": {"name": "p", "namespace": "ns", "ownerReferences": ["rs"]},
                         "spec": {"containers": [{"name": "c"}]}},
         "Pod ns/p: metadata.ownerReferences[0]: expected an object"),
        (NodeView.parse, {"metadata": {"name": "n", "labels": {"zone": ["a"]}}}, "Node n: metadata.labels.zone: expected a string"),
        (PodView.parse, {"metadata": {"name": "p", "namespace": "ns"}, "status": "x"}, "Pod ns/p: status: expected an object"),
        (NodeMetricView.parse, {"metadata": {"name": "n"}, "status": {"podsMetric": "x"}}, "NodeMetric n: status.podsMetric: expected a list"),
        (NodeMetricView.parse, {"metadata": {"name": "n"}, "status": {"podsMetric": [{"podUsage": "x"}]}},
         "NodeMetric n: status.podsMetric[0].podUsage: expected an object"),
        (NodeMetricView.parse, {"metadata": {"name": "n"}, "status": {"nodeMetric": {"aggregatedNodeUsages": [{"usage": "x"}]}}},
         "NodeMetric n: status.nodeMetric.aggregatedNodeUsages[0].usage: expected an object"),
        (PodGroupView.parse, {"metadata": {"name": "g", "namespace": "ns"}, "spec": {"minTaskMember": "x"}},
         "PodGroup ns/g: spec.minTaskMember: expected an object"),
        (QueueView.parse, {"metadata": {"name": "q"}, "spec": {"guarantee": "x"}}, "Queue q: spec.guarantee: expected an object"),
        (PriorityClassView.parse, {"metadata": "x"}, "PriorityClass: metadata: expected an object"),
    ],
)
def test_objects_of_the_wrong_shape_are_value_errors_naming_them(parse: Any, obj: Any, message: str) -> None:
    # the scheduler's cache skips an object whose parse raises ValueError; anything else escaped into the watch
    with pytest.raises(ValueError) as err:
        parse(obj)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("text", ["+-3", "--3", "3.0", "", "+", "²", "1e3"])
def test_integer_text_is_plain_decimal_digits(text: str) -> None:
    with pytest.raises(ValueError, match="Queue q: spec.weight: expected an integer"):
        QueueView.parse({"kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": text}})
