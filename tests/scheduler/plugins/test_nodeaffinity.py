"""nodeaffinity through whole sessions: nodeSelector AND required terms AND addedAffinity, preferred terms summed
and normalised, and kube's validation of addedAffinity naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from common.config import ConfigError
from tests.scheduler.factories import conf as parse
from tests.scheduler.factories import node, pod, run

from .helpers import conf, filters, message, scores

REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def _required(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {REQ: {"nodeSelectorTerms": [{"matchExpressions": t} for t in terms]}}


def _preferred(*items: tuple[int, list[dict[str, Any]]]) -> dict[str, Any]:
    return {PREF: [{"weight": w, "preference": {"matchExpressions": t}} for w, t in items]}


NODES = [node("a", labels={"zone": "a", "gen": "3"}), node("b", labels={"zone": "b", "disk": "ssd", "gen": "5"}),
         node("c", labels={"zone": "a", "disk": "ssd", "gen": "7"})]


def test_selector_and_required_terms_are_anded_terms_ored() -> None:
    spec = {"nodeSelector": {"zone": "a"},
            "affinity": {"nodeAffinity": _required([_expr("disk", "In", "ssd")], [_expr("gen", "Lt", "4")])}}
    objs = [*NODES, pod("p", extra_spec=spec), pod("q", extra_spec={"nodeSelector": {"zone": "z"}})]
    ssn, sink = run(objs, conf("nodeaffinity"), explain=True)
    assert sink.binds["default/p"] in ("a", "c")
    assert "default/q" not in sink.binds
    assert message(ssn, "default/q") == "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    assert filters(ssn, "default/q")["b"] == {"nodeaffinity": "node(s) didn't match Pod's node affinity/selector"}
    gt = {"affinity": {"nodeAffinity": _required([_expr("gen", "Gt", "5"), _expr("disk", "Exists")])}}
    _, sink = run([*NODES, pod("g", extra_spec=gt)], conf("nodeaffinity"))
    assert sink.binds == {"default/g": "c"}


def test_match_fields_pin_a_node_by_name() -> None:
    spec = {"affinity": {"nodeAffinity": {REQ: {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}]}}}}
    _, sink = run([*NODES, pod("p", extra_spec=spec)], conf("nodeaffinity"))
    assert sink.binds == {"default/p": "b"}


def test_added_affinity_restricts_every_pod_on_top_of_its_own() -> None:
    added = _required([_expr("disk", "In", "ssd")])
    objs = [*NODES, pod("free"), pod("zone-a", extra_spec={"nodeSelector": {"zone": "a"}}),
            pod("zone-b-gen3", extra_spec={"nodeSelector": {"gen": "3"}})]
    ssn, sink = run(objs, conf(("nodeaffinity", {"addedAffinity": added})), explain=True)
    assert sink.binds["default/free"] in ("b", "c")
    assert sink.binds["default/zone-a"] == "c"
    assert "default/zone-b-gen3" not in sink.binds
    assert message(ssn, "default/zone-b-gen3") == ("0/3 nodes are available: 3 node(s) didn't match Pod's node "
                                                   "affinity/selector.")


def test_preferred_terms_sum_and_normalise_with_added_preferences() -> None:
    spec = {"affinity": {"nodeAffinity": _preferred((10, [_expr("zone", "In", "a")]),
                                                    (30, [_expr("disk", "In", "ssd")]))}}
    ssn, sink = run([*NODES, pod("p", extra_spec=spec)], conf(("nodeaffinity", {}, 2)), explain=True)
    # raw a=10, b=30, c=40 -> 100*s//40 = 25, 75, 100; x weight 2
    assert scores(ssn, "default/p", "nodeaffinity") == {"a": 50, "b": 150, "c": 200}
    assert sink.binds["default/p"] == "c"
    added = _preferred((50, [_expr("gen", "In", "3")]))
    ssn, sink = run([*NODES, pod("p", extra_spec=spec)], conf(("nodeaffinity", {"addedAffinity": added})),
                    explain=True)
    # raw a=60, b=30, c=40 -> 100, 50, 66
    assert scores(ssn, "default/p", "nodeaffinity") == {"a": 100, "b": 50, "c": 66}
    assert sink.binds["default/p"] == "a"
    ssn, _ = run([*NODES, pod("plain")], conf("nodeaffinity"), explain=True)
    assert scores(ssn, "default/plain", "nodeaffinity") == {"a": 0, "b": 0, "c": 0}


@pytest.mark.parametrize(("added", "field"), [
    ({"requiredDuringScheduling": {}}, "addedAffinity.requiredDuringScheduling"),
    (_required([_expr("zone", "Near", "a")]), "matchExpressions[0].operator"),
    (_required([_expr("gen", "Gt", "five")]), "matchExpressions[0].values[0]"),
    (_required([_expr("zone", "In")]), "matchExpressions[0].values"),
    (_required([_expr("zone", "Exists", "a")]), "matchExpressions[0].values"),
    ({REQ: {"nodeSelectorTerms": []}}, "nodeSelectorTerms"),
    ({REQ: {"nodeSelectorTerms": [{"matchFields": [_expr("metadata.uid", "In", "x")]}]}}, "matchFields[0].key"),
    (_preferred((0, [_expr("zone", "In", "a")])), f"{PREF}[0].weight"),
    (_preferred((101, [_expr("zone", "In", "a")])), f"{PREF}[0].weight"),
    ("cpu=true", "addedAffinity"),
])
def test_added_affinity_validation_names_the_field(added: Any, field: str) -> None:
    with pytest.raises(ConfigError, match=r"tiers\[0\]\.plugins\[0\]\.arguments") as err:
        parse(conf(("nodeaffinity", {"addedAffinity": added})))
    assert field in str(err.value)
