"""tainttoleration through whole sessions: kube's reason in the fit message, tolerations, the reverse-normalised
PreferNoSchedule score over the scored nodes only, and the plugin weight."""

from __future__ import annotations

from typing import Any

from tests.scheduler.factories import node, pod, run

from .helpers import conf, filters, message, scores


def _taint(key: str, effect: str, value: str = "x") -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def _tolerate(*tolerations: dict[str, Any]) -> dict[str, Any]:
    return {"tolerations": list(tolerations)}


def test_untolerated_noschedule_and_noexecute_fail_unresolvable() -> None:
    objs = [node("a", cpu="16", taints=[_taint("dedicated", "NoSchedule")]),
            node("b", cpu="16", taints=[_taint("evict", "NoExecute")]),
            node("c", cpu="4", taints=[_taint("soft", "PreferNoSchedule")]),
            pod("p", cpu="8")]
    ssn, sink = run(objs, conf("tainttoleration"), explain=True)
    assert sink.binds == {}
    assert message(ssn, "default/p") == ("0/3 nodes are available: 1 Insufficient cpu, "
                                         "2 node(s) had untolerated taint(s).")
    assert filters(ssn, "default/p")["a"] == {"tainttoleration": "node(s) had untolerated taint(s)"}


def test_tolerations_open_nodes() -> None:
    taints = [_taint("dedicated", "NoSchedule", "gpu")]
    objs = [node("a", taints=taints), node("b", taints=taints), node("c", taints=taints),
            pod("exists", extra_spec=_tolerate({"key": "dedicated", "operator": "Exists"})),
            pod("equal", extra_spec=_tolerate({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"})),
            pod("wrong-value", extra_spec=_tolerate({"key": "dedicated", "value": "cpu"})),
            pod("wrong-effect", extra_spec=_tolerate({"key": "dedicated", "operator": "Exists",
                                                      "effect": "NoExecute"})),
            pod("wildcard", extra_spec=_tolerate({"operator": "Exists"}))]
    _, sink = run(objs, conf("tainttoleration"))
    assert set(sink.binds) == {"default/exists", "default/equal", "default/wildcard"}


def test_prefer_no_schedule_score_reverse_normalised_and_weighted() -> None:
    objs = [node("a", taints=[_taint("t1", "PreferNoSchedule"), _taint("t2", "PreferNoSchedule")]),
            node("b", taints=[_taint("t1", "PreferNoSchedule")]),
            node("c"),
            pod("p")]
    ssn, sink = run(objs, conf(("tainttoleration", {}, 3)), explain=True)
    assert scores(ssn, "default/p", "tainttoleration") == {"a": 0, "b": 150, "c": 300}
    assert sink.binds["default/p"] == "c"
    # a PreferNoSchedule toleration removes the taint from the count; NoSchedule-only tolerations do not
    objs[-1] = pod("p", extra_spec=_tolerate({"key": "t1", "operator": "Exists", "effect": "PreferNoSchedule"},
                                            {"key": "t2", "operator": "Exists", "effect": "NoSchedule"}))
    ssn, _ = run(objs, conf("tainttoleration"), explain=True)
    assert scores(ssn, "default/p", "tainttoleration") == {"a": 0, "b": 100, "c": 100}


def test_normalisation_ranges_over_the_scored_nodes_only() -> None:
    # a has the most PreferNoSchedule taints but cannot fit the pod: the max is taken over b and c
    objs = [node("a", cpu="1", taints=[_taint("t1", "PreferNoSchedule"), _taint("t2", "PreferNoSchedule")]),
            node("b", taints=[_taint("t1", "PreferNoSchedule")]),
            node("c"),
            pod("p", cpu="2")]
    ssn, _ = run(objs, conf("tainttoleration"), explain=True)
    assert scores(ssn, "default/p", "tainttoleration") == {"b": 0, "c": 100}
    assert ssn.score_mask is None  # only set while score_nodes runs


def test_filter_and_counts_are_kept_per_toleration_set_not_per_pod() -> None:
    """Memory stays bounded by the distinct toleration sets: pods that tolerate alike share one entry."""
    from scheduler.plugins.tainttoleration import TaintCheck
    from tests.scheduler.factories import session

    tol = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    objs: list[dict[str, Any]] = [node("a"), node("t", taints=[{"key": "dedicated", "value": "gpu",
                                                                 "effect": "NoSchedule"}])]
    objs += [pod(f"plain{i}") for i in range(5)] + [pod(f"tol{i}", extra_spec={"tolerations": tol})
                                                     for i in range(5)]
    ssn, _ = session(objs, conf("tainttoleration"))
    check = TaintCheck(ssn)
    for task in ssn.tasks.values():
        want = [True, task.name.startswith("tol")]
        assert check.passes(task).tolist() == want
    assert len(ssn.memo.value("taints.by-tolerations")[1]) == 2
