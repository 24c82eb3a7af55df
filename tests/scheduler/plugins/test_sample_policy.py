"""The seed's sample-scheduler policy, shipped as scheduler/conf/examples/sample-scheduler.yaml, end to end: it
loads with every plugin known, keeps pods on nodes labelled cpu=true, filters nodes above 85 % real usage, prefers
lower real usage and bigger nodes, spreads a workload away from nodes already running it, and holds pods whose
dependencies are not Ready."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from scheduler.conf import load_conf
from tests.scheduler.factories import node, pod, run

from .helpers import filters, message, metric, scores

SAMPLE = Path(__file__).resolve().parents[3] / "scheduler" / "conf" / "examples" / "sample-scheduler.yaml"
TEXT = SAMPLE.read_text()
CPU_TRUE = {"cpu": "true"}
API = {"app": "api"}


def _nodes() -> list[dict[str, Any]]:
    return [node("a", cpu="8", memory="16Gi", labels=CPU_TRUE), node("b", cpu="8", memory="16Gi", labels=CPU_TRUE),
            node("c", cpu="32", memory="64Gi")]


def test_loads_with_every_plugin_known() -> None:
    conf = load_conf(SAMPLE)
    assert conf.warnings == ()
    assert [p.name for t in conf.tiers for p in t.plugins] == [
        "priority", "gang", "dependency", "predicates", "nodeaffinity", "noderesources", "loadaware",
        "podtopologyspread"]


def test_only_nodes_labelled_cpu_true_and_lower_real_usage_wins() -> None:
    objs = [*_nodes(), metric("a", 4800, 4.8), metric("b", 800, 4.8), metric("c", 0, 0), pod("p", labels=API)]
    ssn, sink = run(objs, TEXT, explain=True)
    assert sink.binds == {"default/p": "b"}
    assert filters(ssn, "default/p")["c"] == {"nodeaffinity": "node(s) didn't match Pod's node affinity/selector"}
    load = scores(ssn, "default/p", "loadaware")
    assert load["b"] > load["a"]
    objs = [*_nodes()[:2], pod("huge", cpu="12", labels=API), _nodes()[2]]
    ssn, sink = run(objs, TEXT, explain=True)
    assert sink.binds == {}
    assert message(ssn, "default/huge") == ("0/3 nodes are available: 1 node(s) didn't match Pod's node "
                                            "affinity/selector, 2 Insufficient cpu.")


def test_nodes_above_85_percent_real_usage_are_filtered() -> None:
    objs = [*_nodes(), metric("a", 7200, 2), metric("b", 1000, 13.8), metric("c", 0, 0), pod("p", labels=API)]
    ssn, sink = run(objs, TEXT, explain=True)
    assert sink.binds == {}
    assert message(ssn, "default/p") == (
        "0/3 nodes are available: 1 node(s) cpu usage exceed threshold, 1 node(s) didn't match Pod's node "
        "affinity/selector, 1 node(s) memory usage exceed threshold.")
    # just under the line (with the pod's own estimate, 85 % of 1 cpu) still passes
    objs = [*_nodes(), metric("a", 5900, 2), metric("b", 8000, 2), pod("p", labels=API)]
    _, sink = run(objs, TEXT)
    assert sink.binds == {"default/p": "a"}


def test_expired_metrics_are_filtered_and_nodes_without_metrics_are_not() -> None:
    objs = [*_nodes(), metric("a", 100, 1, age=181), pod("p", labels=API)]
    ssn, sink = run(objs, TEXT, explain=True)
    assert sink.binds == {"default/p": "b"}
    assert filters(ssn, "default/p")["a"] == {"loadaware": "node(s) nodeMetric expired"}


def test_bigger_nodes_score_higher() -> None:
    objs = [node("small", cpu="4", memory="8Gi", labels=CPU_TRUE), node("big", cpu="32", memory="64Gi",
                                                                        labels=CPU_TRUE),
            metric("small", 0, 0), metric("big", 0, 0), pod("p", labels=API)]
    _, sink = run(objs, TEXT)
    assert sink.binds == {"default/p": "big"}


def test_spreads_the_same_workload_even_against_slightly_lower_usage() -> None:
    objs = [*_nodes(), metric("a", 800, 2), metric("b", 3200, 2),
            pod("api-0", cpu="100m", memory="128Mi", node_name="a", labels=API), pod("api-1", labels=API)]
    ssn, sink = run(objs, TEXT, explain=True)
    assert scores(ssn, "default/api-1", "podtopologyspread") == {"a": 0, "b": 100}
    assert sink.binds["default/api-1"] == "b"
    # without the spreading scorer the lower usage (and free requests) of a would win
    without = TEXT[:TEXT.index("  - name: podtopologyspread")]
    _, sink = run(objs, without)
    assert sink.binds["default/api-1"] == "a"
    # a batch of one workload alternates between the two labelled nodes
    objs = [*_nodes(), metric("a", 800, 2), metric("b", 800, 2),
            *(pod(f"web-{i}", cpu="500m", memory="512Mi", labels={"app": "web"}, created=1_700_000_000.0 + i)
              for i in range(6))]
    _, sink = run(objs, TEXT)
    assert Counter(sink.binds.values()) == {"a": 3, "b": 3}


def test_dependency_gate() -> None:
    rely = {"rely.on.namespaces/name": "kube-system", "rely.on.pod/labs": "k8s-app=metrics-server"}
    server = pod("metrics-server", namespace="kube-system", node_name="c", labels={"k8s-app": "metrics-server"},
                 scheduler="default-scheduler")
    objs = [*_nodes(), server, pod("p", labels=API, annotations=rely)]
    ssn, sink = run(objs, TEXT, explain=True)
    assert sink.binds == {}
    assert message(ssn, "default/p") == "0/3 nodes are available: rely pod not ready."
    server["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    _, sink = run(objs, TEXT)
    assert sink.binds["default/p"] in ("a", "b")
