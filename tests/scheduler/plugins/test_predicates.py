"""predicates (Volcano's wrapper of kube filters) through whole sessions: pod count, cordoned nodes, node affinity,
taints, host ports, inter-pod affinity and topology spread, Volcano's check order and the enable switches."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from common.config import ConfigError
from scheduler.conf import DEFAULT_CONF_YAML, default_conf
from scheduler.plugins.predicates import _KeptPasses, ports_conflict
from tests.scheduler.factories import conf as parse
from tests.scheduler.factories import node, pod, run

from .helpers import conf, filters, message


def _cordoned(name: str, **kw: Any) -> dict[str, Any]:
    n = node(name, **kw)
    n["spec"]["unschedulable"] = True
    return n


def _ports(*ports: dict[str, Any]) -> dict[str, Any]:
    return {"containers": [{"name": "c", "image": "nginx", "ports": list(ports),
                            "resources": {"requests": {"cpu": "100m"}}}]}


TAINT = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]


def test_pod_number_exceeded_is_reported_for_best_effort_pods() -> None:
    objs = [node("a", pods=1), pod("running", node_name="a"), pod("be", cpu=None, memory=None)]
    ssn, sink = run(objs, conf("predicates"), explain=True)
    assert sink.binds == {}
    assert message(ssn, "default/be") == "0/1 nodes are available: 1 node(s) pod number exceeded."


def test_cordoned_nodes_unless_tolerated() -> None:
    objs = [_cordoned("a"), node("b", cpu="1"), pod("p", cpu="2")]
    ssn, sink = run(objs, conf("predicates"), explain=True)
    assert sink.binds == {}
    assert message(ssn, "default/p") == "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable."
    tolerant = pod("p", cpu="2", extra_spec={"tolerations": [{"key": "node.kubernetes.io/unschedulable",
                                                              "operator": "Exists", "effect": "NoSchedule"}]})
    _, sink = run([objs[0], objs[1], tolerant], conf("predicates"))
    assert sink.binds == {"default/p": "a"}


def test_volcano_order_pod_count_then_stable_filters_that_stop() -> None:
    objs = [_cordoned("a", taints=TAINT), node("b", pods=1, taints=TAINT), node("c", labels={"disk": "ssd"}),
            pod("running", cpu="100m", node_name="b"), pod("be", cpu=None, memory=None,
                                                           extra_spec={"nodeSelector": {"disk": "hdd"}})]
    ssn, _ = run(objs, conf("predicates"), explain=True)
    got = filters(ssn, "default/be")
    assert got["a"] == {"predicates": "node(s) were unschedulable"}
    assert got["b"] == {"predicates": "node(s) pod number exceeded; node(s) didn't match Pod's node affinity/selector"}
    assert got["c"] == {"predicates": "node(s) didn't match Pod's node affinity/selector"}


def test_host_ports_conflict_across_existing_and_same_session_pods() -> None:
    objs = [node("a"), node("b"), node("c"),
            pod("old", node_name="a", extra_spec=_ports({"containerPort": 80, "hostPort": 8080})),
            pod("new-0", extra_spec=_ports({"containerPort": 80, "hostPort": 8080})),
            pod("new-1", extra_spec=_ports({"containerPort": 80, "hostPort": 8080})),
            pod("new-2", extra_spec=_ports({"containerPort": 80, "hostPort": 8080}))]
    ssn, sink = run(objs, conf("predicates"), explain=True)
    assert sorted(sink.binds.values()) == ["b", "c"]
    pending = next(k for k in ("default/new-0", "default/new-1", "default/new-2") if k not in sink.binds)
    assert message(ssn, pending) == ("0/3 nodes are available: 3 node(s) didn't have free ports for the "
                                     "requested pod ports.")


@pytest.mark.parametrize(("wanted", "used", "clash"), [
    (("0.0.0.0", "TCP", 80), ("10.0.0.1", "TCP", 80), True),
    (("10.0.0.2", "TCP", 80), ("10.0.0.1", "TCP", 80), False),
    (("10.0.0.2", "TCP", 80), ("0.0.0.0", "TCP", 80), True),
    (("10.0.0.1", "UDP", 80), ("10.0.0.1", "TCP", 80), False),
    (("10.0.0.1", "TCP", 81), ("10.0.0.1", "TCP", 80), False),
])
def test_ports_conflict_rules(wanted: tuple[str, str, int], used: tuple[str, str, int], clash: bool) -> None:
    assert ports_conflict([wanted], [used]) is clash


def test_affinity_and_spread_filters_run_inside_predicates() -> None:
    anti = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
    objs = [node("a"), node("b"), *(pod(f"w{i}", labels={"app": "web"}, extra_spec=anti) for i in range(3))]
    ssn, sink = run(objs, conf("predicates"), explain=True)
    assert sorted(sink.binds.values()) == ["a", "b"]
    pending = next(k for k in ("default/w0", "default/w1", "default/w2") if k not in sink.binds)
    assert message(ssn, pending) == "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
    spread = {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                             "labelSelector": {"matchLabels": {"app": "web"}}}]}
    ssn, sink = run([node("a"), pod("s", labels={"app": "web"}, extra_spec=spread)], conf("predicates"), explain=True)
    assert message(ssn, "default/s") == ("0/1 nodes are available: 1 node(s) didn't match pod topology spread "
                                         "constraints (missing required label).")


@pytest.mark.parametrize(("flag", "objs", "pod_key"), [
    ("predicate.TaintTolerationEnable", [node("a", taints=TAINT), pod("p")], "default/p"),
    ("predicate.NodeAffinityEnable", [node("a"), pod("p", extra_spec={"nodeSelector": {"disk": "ssd"}})],
     "default/p"),
    ("predicate.NodePortsEnable", [node("a"), pod("old", node_name="a", extra_spec=_ports({"hostPort": 9})),
                                   pod("p", extra_spec=_ports({"hostPort": 9}))], "default/p"),
    ("predicate.PodTopologySpreadEnable", [node("a"), pod("p", labels={"app": "w"}, extra_spec={
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "labelSelector": {}}]})], "default/p"),
    ("predicate.PodAffinityEnable", [node("a"), pod("p", extra_spec={"affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"app": "db"}},
                                                             "topologyKey": "kubernetes.io/hostname"}]}}})],
     "default/p"),
])
def test_enable_switches(flag: str, objs: list[dict[str, Any]], pod_key: str) -> None:
    _, sink = run(objs, conf("predicates"))
    assert pod_key not in sink.binds
    _, sink = run(objs, conf(("predicates", {flag: False})))
    assert sink.binds[pod_key] == "a"
    _, sink = run(objs, conf(("predicates", {flag: "false"})))  # Volcano reads bools leniently
    assert pod_key in sink.binds


def test_switch_of_the_wrong_type_is_rejected_and_volume_switches_accepted() -> None:
    with pytest.raises(ConfigError, match=r"predicate\.NodePortsEnable"):
        parse(conf(("predicates", {"predicate.NodePortsEnable": 3})))
    parse(conf(("predicates", {"predicate.VolumeBindingEnable": False, "predicate.CacheEnable": True})))


def test_default_conf_runs_predicates_and_nodeorder() -> None:
    c = default_conf()
    assert not c.warnings
    objs = [node("a", taints=TAINT), node("b"), pod("p")]
    _, sink = run(objs, DEFAULT_CONF_YAML)
    assert sink.binds == {"default/p": "b"}


def test_kept_answers_counted_once_writable_ones_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only answer (kept, shared by the pods alike) is counted once for the session; a writable one,
    which its maker may change, is counted each time it is asked about."""
    kept = _KeptPasses()
    shared = np.ones(5, dtype=np.bool_)
    shared.flags.writeable = False
    own = np.ones(5, dtype=np.bool_)
    assert kept.everywhere(shared) and kept.everywhere(own)
    own[2] = False
    assert not kept.everywhere(own)
    calls: list[int] = []
    real = np.count_nonzero
    monkeypatch.setattr(np, "count_nonzero", lambda a: calls.append(1) or real(a))
    assert kept.everywhere(shared) and not calls   # not counted again
    other = np.array([True, False, True, True, True])
    other.flags.writeable = False
    assert not kept.everywhere(other) and calls == [1]
