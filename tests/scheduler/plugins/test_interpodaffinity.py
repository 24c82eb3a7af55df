"""interpodaffinity through whole sessions: required affinity (incl. the first pod of a self-affine group),
anti-affinity in kube's reason order, existing pods' anti-affinity, preferred scoring with existing pods' terms and
hardPodAffinityWeight, argument validation, and the filter against the reference scheduler.predicates.podaffinity."""

from __future__ import annotations

import random
from typing import Any

import pytest

from common.config import ConfigError
from scheduler.plugins.interpodaffinity import InterPodAffinityCheck
from scheduler.predicates.podaffinity import pod_affinity_filter
from tests.scheduler.factories import conf as parse
from tests.scheduler.factories import node, pod, run, session

from .helpers import conf, filters, message, scores

REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
HOST = "kubernetes.io/hostname"


def _term(app: str, key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


def _affinity(kind: str, *, required: list[dict[str, Any]] | None = None,
              preferred: list[tuple[int, dict[str, Any]]] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {}
    if required:
        block[REQ] = required
    if preferred:
        block[PREF] = [{"weight": w, "podAffinityTerm": t} for w, t in preferred]
    return {"affinity": {kind: block}}


ZONED = [node("a", labels={"zone": "x"}), node("b", labels={"zone": "x"}), node("c", labels={"zone": "y"}),
         node("d")]


def test_required_affinity_follows_matching_pods_into_their_domain() -> None:
    objs = [*ZONED, pod("cache", cpu="100m", node_name="a", labels={"app": "cache"}),
            pod("web", labels={"app": "web"}, extra_spec=_affinity("podAffinity", required=[_term("cache", "zone")])),
            pod("lost", labels={"app": "web"}, extra_spec=_affinity("podAffinity", required=[_term("nope", "zone")]))]
    ssn, sink = run(objs, conf("interpodaffinity"), explain=True)
    assert sink.binds["default/web"] in ("a", "b")
    assert "default/lost" not in sink.binds
    assert message(ssn, "default/lost") == "0/4 nodes are available: 4 node(s) didn't match pod affinity rules."


def test_first_pod_of_a_self_affine_group_may_start_anywhere_with_the_key() -> None:
    spec = _affinity("podAffinity", required=[_term("web", "zone")])
    objs = [*ZONED, *(pod(f"web-{i}", labels={"app": "web"}, extra_spec=spec) for i in range(3))]
    ssn, sink = run(objs, conf("interpodaffinity"))
    assert len(sink.binds) == 3 and "d" not in sink.binds.values()
    zones = {ssn.node_by_name[n].view.labels["zone"] for n in sink.binds.values()}
    assert len(zones) == 1


def test_anti_affinity_one_per_node_and_kube_reason_order() -> None:
    spec = _affinity("podAntiAffinity", required=[_term("web", HOST)])
    objs = [node("a"), node("b"), node("c"), *(pod(f"web-{i}", labels={"app": "web"}, extra_spec=spec)
                                               for i in range(4))]
    ssn, sink = run(objs, conf("interpodaffinity"), explain=True)
    assert sorted(sink.binds.values()) == ["a", "b", "c"]
    pending = next(k for k in ("default/web-0", "default/web-1", "default/web-2", "default/web-3")
                   if k not in sink.binds)
    # the pod's own anti-affinity is checked before the existing pods' (which also forbid these nodes)
    assert message(ssn, pending) == "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."


def test_existing_pods_anti_affinity_keeps_the_pod_away() -> None:
    objs = [node("a"), node("b"),
            pod("loner", cpu="100m", node_name="a", extra_spec=_affinity("podAntiAffinity",
                                                                         required=[_term("web", HOST)])),
            pod("web", labels={"app": "web"})]
    ssn, sink = run(objs, conf("interpodaffinity"), explain=True)
    assert sink.binds == {"default/web": "b"}
    assert filters(ssn, "default/web")["a"] == {
        "interpodaffinity": "node(s) didn't satisfy existing pods anti-affinity rules"}


def test_preferred_terms_of_the_pod_are_summed_per_domain_and_min_max_normalised() -> None:
    spec = _affinity("podAffinity", preferred=[(10, _term("cache", "zone"))])
    spec["affinity"]["podAntiAffinity"] = {PREF: [{"weight": 5, "podAffinityTerm": _term("web", HOST)}]}
    objs = [node("a", labels={"zone": "x"}), node("b", labels={"zone": "x"}), node("c", labels={"zone": "y"}),
            pod("cache", cpu="100m", node_name="a", labels={"app": "cache"}),
            pod("web-0", cpu="100m", node_name="a", labels={"app": "web"}),
            pod("web-1", labels={"app": "web"}, extra_spec=spec)]
    ssn, sink = run(objs, conf(("interpodaffinity", {}, 2)), explain=True)
    # raw a = 10 - 5, b = 10, c = 0 -> 50, 100, 0
    assert scores(ssn, "default/web-1", "interpodaffinity") == {"a": 100, "b": 200, "c": 0}
    assert sink.binds["default/web-1"] == "b"


def test_existing_pods_terms_score_the_incoming_pod() -> None:
    base = [node("a", labels={"zone": "x"}), node("b", labels={"zone": "x"}), node("c", labels={"zone": "y"}),
            pod("friend", cpu="100m", node_name="c",
                extra_spec=_affinity("podAffinity", required=[_term("web", "zone")])),
            pod("web", labels={"app": "web"})]
    ssn, _ = run(base, conf("interpodaffinity"), explain=True)
    assert scores(ssn, "default/web", "interpodaffinity") == {"a": 0, "b": 0, "c": 100}
    ssn, _ = run(base, conf(("interpodaffinity", {"hardPodAffinityWeight": 0})), explain=True)
    assert scores(ssn, "default/web", "interpodaffinity") == {"a": 0, "b": 0, "c": 0}
    shy = [*base[:3], pod("shy", cpu="100m", node_name="a",
                          extra_spec=_affinity("podAntiAffinity", preferred=[(7, _term("web", HOST))])), base[4]]
    ssn, sink = run(shy, conf("interpodaffinity"), explain=True)
    assert scores(ssn, "default/web", "interpodaffinity") == {"a": 0, "b": 100, "c": 100}
    assert sink.binds["default/web"] != "a"
    ssn, _ = run(shy, conf(("interpodaffinity", {"ignorePreferredTermsOfExistingPods": True})), explain=True)
    assert scores(ssn, "default/web", "interpodaffinity") == {"a": 0, "b": 0, "c": 0}


@pytest.mark.parametrize(("args", "field"), [
    ({"hardPodAffinityWeight": 101}, "hardPodAffinityWeight"),
    ({"hardPodAffinityWeight": "1"}, "hardPodAffinityWeight"),
    ({"ignorePreferredTermsOfExistingPods": "yes"}, "ignorePreferredTermsOfExistingPods"),
])
def test_argument_validation(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        parse(conf(("interpodaffinity", args)))


@pytest.mark.parametrize("seed", range(10))
def test_filter_matches_the_reference_for_single_terms(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(5)]
    objs: list[dict[str, Any]] = [node(n, cpu="64", labels={"zone": rng.choice("ab")}) for n in names]
    for i in range(rng.randint(0, 8)):
        extra = _affinity("podAntiAffinity", required=[_term(rng.choice(["web", "db"]), rng.choice(["zone", HOST]))]) \
            if rng.random() < 0.3 else None
        objs.append(pod(f"e{i}", cpu="10m", node_name=rng.choice(names), labels={"app": rng.choice(["web", "db"])},
                        extra_spec=extra))
    kind = rng.choice(["podAffinity", "podAntiAffinity"])
    objs.append(pod("new", labels={"app": "web"},
                    extra_spec=_affinity(kind, required=[_term(rng.choice(["web", "db"]), rng.choice(["zone", HOST]))])))
    ssn = session(objs, conf("interpodaffinity"))[0]
    task = ssn.tasks["uid-default-new"]
    ok, _ = pod_affinity_filter(task.pod, [nd.view.labels for nd in ssn.nodes], [nd.pods() for nd in ssn.nodes])
    assert InterPodAffinityCheck(ssn).filter(task).passed.tolist() == ok.tolist()
