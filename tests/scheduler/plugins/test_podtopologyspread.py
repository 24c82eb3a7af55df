"""podtopologyspread through whole sessions (kube's reasons and skew rule, ScheduleAnyway spreading, default
constraints from the arguments or the system defaults, node affinity policy) and the per-session pod index checked
against the reference formulas of scheduler.predicates.spread."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np
import pytest

from common.clock import FakeClock
from common.config import ConfigError
from common.objects import NodeView, PodView
from common.selectors import LabelSelector
from scheduler.framework.memo import SessionMemo
from scheduler.framework.session import Session
from scheduler.framework.snapshot import Snapshot
from scheduler.framework.statement import Statement
from scheduler.plugins.podtopologyspread import (
    SYSTEM_DEFAULT_CONSTRAINTS,
    Matcher,
    PodIndex,
    SpreadCheck,
    matcher_matches,
)
from scheduler.predicates.spread import parse_constraints, spread_filter, spread_score
from tests.scheduler.factories import T0, RecordingSink, node, pod, run, session
from tests.scheduler.factories import conf as parse

from .helpers import conf, message, scores

WEB = {"app": "web"}


def _constraint(key: str, skew: int = 1, hard: bool = True, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
            "labelSelector": {"matchLabels": WEB}, **extra}


def _spread(*constraints: dict[str, Any]) -> dict[str, Any]:
    return {"topologySpreadConstraints": list(constraints)}


def test_hard_constraint_reasons_as_kube_prints_them() -> None:
    objs = [node("a1", labels={"zone": "a"}), node("a2", labels={"zone": "a"}),
            node("b1", cpu="1", labels={"zone": "b"}), node("n"),
            pod("w0", node_name="a1", labels=WEB), pod("w1", node_name="a1", labels=WEB),
            pod("new", cpu="2", labels=WEB, extra_spec=_spread(_constraint("zone")))]
    ssn, sink = run(objs, conf("podtopologyspread"), explain=True)
    assert sink.binds == {}
    assert message(ssn, "default/new") == (
        "0/4 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match pod topology spread constraints "
        "(missing required label), 2 node(s) didn't match pod topology spread constraints.")


def test_hard_constraint_places_in_the_emptier_zone_and_keeps_skew() -> None:
    objs = [node("a1", cpu="16", labels={"zone": "a"}), node("b1", cpu="16", labels={"zone": "b"}),
            pod("w0", node_name="a1", labels=WEB)]
    objs += [pod(f"new-{i}", labels=WEB, extra_spec=_spread(_constraint("zone"))) for i in range(5)]
    _, sink = run(objs, conf("podtopologyspread"))
    per_zone = Counter(sink.binds.values())
    assert per_zone == {"b1": 3, "a1": 2}  # 3 and 3 with w0: never more than 1 apart


def test_node_affinity_policy_honor_ignores_domains_the_pod_cannot_use() -> None:
    base = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"})]
    base += [pod(f"w{i}", cpu="100m", node_name="a1", labels=WEB) for i in range(3)]
    honor = pod("p", labels=WEB, extra_spec={"nodeSelector": {"zone": "a"}, **_spread(_constraint("zone"))})
    _, sink = run([*base, honor], conf("podtopologyspread", "nodeaffinity"))
    assert sink.binds == {"default/p": "a1"}  # zone b is not eligible: min is zone a's own count
    ignore = pod("p", labels=WEB, extra_spec={"nodeSelector": {"zone": "a"},
                                              **_spread(_constraint("zone", nodeAffinityPolicy="Ignore"))})
    _, sink = run([*base, ignore], conf("podtopologyspread", "nodeaffinity"))
    assert sink.binds == {}


def test_match_label_keys_narrow_the_counted_pods() -> None:
    objs = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"}),
            pod("old-0", cpu="100m", node_name="a1", labels={**WEB, "version": "1"}),
            pod("old-1", cpu="100m", node_name="a1", labels={**WEB, "version": "1"}),
            pod("new", labels={**WEB, "version": "2"},
                extra_spec=_spread(_constraint("zone", matchLabelKeys=["version"])))]
    ssn = session(objs, conf("podtopologyspread"))[0]
    check = SpreadCheck(ssn, (), False)
    assert check.filter(ssn.tasks["uid-default-new"]).passed.tolist() == [True, True]
    plain = session([*objs[:4], pod("new", labels={**WEB, "version": "2"}, extra_spec=_spread(_constraint("zone")))],
                    conf("podtopologyspread"))[0]
    assert SpreadCheck(plain, (), False).filter(plain.tasks["uid-default-new"]).passed.tolist() == [False, True]


def test_schedule_anyway_spreads_a_workload_in_one_session() -> None:
    objs = [node(n, cpu="16") for n in ("a", "b", "c")]
    objs += [pod(f"w-{i}", labels=WEB, extra_spec=_spread(_constraint("kubernetes.io/hostname", hard=False)))
             for i in range(6)]
    _, sink = run(objs, conf("podtopologyspread"))
    assert sorted(Counter(sink.binds.values()).values()) == [2, 2, 2]


def test_default_constraints_use_the_workload_labels() -> None:
    defaults = {"defaultConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                        "whenUnsatisfiable": "ScheduleAnyway"}]}
    objs = [node("a"), node("b"), pod("web-0", node_name="a", labels=WEB), pod("db-0", node_name="b",
                                                                                 labels={"app": "db"}),
            pod("web-1", labels=WEB), pod("db-1", labels={"app": "db"}), pod("bare")]
    ssn, sink = run(objs, conf(("podtopologyspread", defaults, 2)), explain=True)
    assert scores(ssn, "default/web-1", "podtopologyspread") == {"a": 0, "b": 200}
    assert sink.binds["default/web-1"] == "b"
    assert sink.binds["default/db-1"] == "a"
    assert scores(ssn, "default/bare", "podtopologyspread") == {"a": 0, "b": 0}


def test_system_default_constraints() -> None:
    # hostname maxSkew 3 (zone key absent everywhere: skipped, nodes not ignored): weight log(2 + 2)
    # a: 1 * 1.386 + 2 -> 3, b: 0 + 2 -> 2; normalised 100 * (3 + 2 - s) // 3
    objs = [node("a"), node("b"), pod("web-0", node_name="a", labels=WEB), pod("web-1", labels=WEB)]
    ssn, _ = run(objs, conf("podtopologyspread"), explain=True)
    assert scores(ssn, "default/web-1", "podtopologyspread") == {"a": 66, "b": 100}
    # the pod's own constraints ignore nodes that lack a key
    objs = [node("a", labels={"zone": "z"}), node("b"), pod("web-0", node_name="a", labels=WEB),
            pod("web-1", labels=WEB, extra_spec=_spread(_constraint("zone", hard=False)))]
    ssn, sink = run(objs, conf("podtopologyspread"), explain=True)
    assert scores(ssn, "default/web-1", "podtopologyspread") == {"a": 100, "b": 0}


@pytest.mark.parametrize(("args", "field"), [
    ({"defaultingType": "System", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "k",
                                                         "whenUnsatisfiable": "DoNotSchedule"}]},
     "defaultConstraints"),
    ({"defaultingType": "Sometimes"}, "defaultingType"),
    ({"defaultConstraints": [{"maxSkew": 0, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule"}]},
     "defaultConstraints[0].maxSkew"),
    ({"defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]}, "topologyKey"),
    ({"defaultConstraints": [{"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "Maybe"}]},
     "whenUnsatisfiable"),
    ({"defaultConstraints": [{"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule",
                              "labelSelector": {"matchLabels": WEB}}]}, "labelSelector"),
    ({"defaultConstraints": [{"maxSkew": 1, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule"},
                             {"maxSkew": 2, "topologyKey": "k", "whenUnsatisfiable": "DoNotSchedule"}]},
     "defaultConstraints[1]"),
])
def test_argument_validation_names_the_field(args: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse(conf(("podtopologyspread", args)))
    assert field in str(err.value)


def test_system_defaults_are_kubes() -> None:
    assert [(c["topologyKey"], c["maxSkew"]) for c in SYSTEM_DEFAULT_CONSTRAINTS] == [
        ("kubernetes.io/hostname", 3), ("topology.kubernetes.io/zone", 5)]


@pytest.mark.parametrize("seed", range(12))
def test_index_based_formulas_match_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(6)]
    objs: list[dict[str, Any]] = [node(n, cpu="64", labels={"zone": rng.choice("abc")}) for n in names]
    for i in range(rng.randint(0, 14)):
        objs.append(pod(f"e{i}", cpu="10m", node_name=rng.choice(names), namespace=rng.choice(["default", "other"]),
                        labels={"app": rng.choice(["web", "db"])}))
    raw = [_constraint(rng.choice(["zone", "kubernetes.io/hostname"]), rng.randint(1, 3), hard=rng.random() < 0.5)
           for _ in range(rng.randint(1, 2))]
    if len(raw) == 2 and raw[0]["topologyKey"] == raw[1]["topologyKey"]:
        raw.pop()
    objs.append(pod("new", labels=WEB, extra_spec=_spread(*raw)))
    ssn = session(objs, conf("podtopologyspread"))[0]
    task = ssn.tasks["uid-default-new"]
    check = SpreadCheck(ssn, (), False)
    labels = [nd.view.labels for nd in ssn.nodes]
    pods_by_node = [nd.pods() for nd in ssn.nodes]
    everything = np.ones(len(names), dtype=np.bool_)
    constraints = parse_constraints(raw)
    ok, reasons = spread_filter(task.pod, constraints, labels, pods_by_node, everything)
    got = check.filter(task)
    assert got.passed.tolist() == ok.tolist()
    assert [got.statuses(i, "x")[0].reason if not got.passed[i] else "" for i in range(len(names))] == reasons
    assert check.score(task).tolist() == spread_score(task.pod, constraints, labels, pods_by_node, everything).tolist()


def test_pod_index_follows_allocations_and_discards() -> None:
    objs = [node("a"), node("b"), pod("w0", node_name="a", labels=WEB), pod("w1", labels=WEB),
            pod("w2", labels=WEB), pod("x", labels={"app": "x"})]
    ssn = session(objs, conf("podtopologyspread"))[0]
    index = PodIndex.of(ssn)
    assert PodIndex.of(ssn) is index
    sel = parse_constraints([_constraint("zone")])[0].selector
    matcher = ((frozenset({"default"}), sel),)
    assert index.counts(matcher, include_terminating=False).tolist() == [1, 0]
    stmt = Statement(ssn)
    stmt.allocate(ssn.tasks["uid-default-w1"], ssn.node_by_name["b"])
    stmt.pipeline(ssn.tasks["uid-default-w2"], ssn.node_by_name["b"])
    stmt.allocate(ssn.tasks["uid-default-x"], ssn.node_by_name["b"])
    assert index.counts(matcher, include_terminating=False).tolist() == [1, 2]
    assert index.pod_count.tolist() == [1, 3]
    stmt.discard()
    assert index.counts(matcher, include_terminating=False).tolist() == [1, 0]
    assert index.pod_count.tolist() == [1, 0]
    # an evicted (releasing) pod leaves the spread counts but stays for affinity, as in kube
    ssn.evict_now(ssn.tasks["uid-default-w0"], "test")
    assert index.counts(matcher, include_terminating=False).tolist() == [0, 0]
    assert index.counts(matcher, include_terminating=True).tolist() == [1, 0]


def test_a_malformed_pod_constraint_keeps_the_pod_pending_with_the_reason() -> None:
    bad = pod("bad", labels=WEB, extra_spec=_spread({"maxSkew": 0, "topologyKey": "zone"}))
    ssn, sink = run([node("a", labels={"zone": "z"}), bad], conf("podtopologyspread"), explain=True)
    assert sink.binds == {}
    assert "spec.topologySpreadConstraints[0].maxSkew: must be >= 1" in message(ssn, "default/bad")


def test_index_counts_by_label_groups_equal_pod_by_pod_counts_as_tasks_move() -> None:
    """Counts are kept per group of pods with the same namespace and labels; after any placement or removal they
    must equal a count over every placed pod, for matchers counted before and after the moves - including groups
    first placed after a matcher was counted and matchers narrowed by an ``In`` over several values."""
    from common.selectors import LabelSelector
    from scheduler.framework.api import TaskStatus
    from scheduler.plugins.podtopologyspread import matcher_matches

    rng = random.Random(3)
    apps = [{"app": "web"}, {"app": "db"}, {"app": "web", "tier": "front"}, {}]
    objs: list[dict[str, Any]] = [node(f"n{i}", cpu="64") for i in range(6)]
    for j in range(40):
        bound = rng.random() < 0.5
        objs.append(pod(f"p{j}", cpu="100m", namespace=rng.choice(["a", "b"]), labels=rng.choice(apps),
                        node_name=f"n{rng.randrange(6)}" if bound else ""))
    for j in range(6):  # labels no placed pod has yet: their group appears only when one is placed
        objs.append(pod(f"late{j}", cpu="100m", namespace=rng.choice(["a", "b"]), labels={"app": "late"}))
    ssn, _ = session(objs, conf("podtopologyspread"))
    index = PodIndex.of(ssn)
    matchers = [((frozenset({ns}), LabelSelector.parse({"matchLabels": sel})),) for ns in ("a", "b")
                for sel in ({"app": "web"}, {"app": "db"}, {})]
    matchers.append(((None, LabelSelector.parse({"matchExpressions": [{"key": "tier", "operator": "Exists"}]})),))
    matchers[3:3] = [
        ((None, LabelSelector.parse({"matchExpressions": [{"key": "app", "operator": "In",
                                                           "values": ["late", "db"]}]})),),
        ((frozenset({"a"}), LabelSelector.parse({"matchLabels": {"app": "late"}})),),
        ((None, LabelSelector.parse({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]})),),
    ]

    def brute(matcher: Any) -> list[int]:
        out = [0] * len(ssn.nodes)
        for p in index._placed.values():
            if matcher_matches(matcher, p.pod) and not p.terminating:
                out[p.node] += 1
        return out

    for m in matchers[:6]:
        assert index.counts(m, include_terminating=False).tolist() == brute(m)
    tasks = list(ssn.tasks.values())
    for step in range(60):
        task = rng.choice(tasks)
        if task.status is TaskStatus.PENDING:
            ssn.place(task, rng.choice(ssn.nodes), TaskStatus.ALLOCATED)
        elif task.status is TaskStatus.ALLOCATED:
            ssn.unplace(task)
        elif task.status is TaskStatus.RUNNING:
            ssn.mark_releasing(task)
        for m in matchers[: 6 + step // 10]:
            assert index.counts(m, include_terminating=False).tolist() == brute(m), (step, m)


def test_group_counts_carried_from_session_to_session_equal_pod_by_pod_counts() -> None:
    """The groups' counts a session starts from are the previous session's, moved by the nodes whose pods changed:
    over sessions where pods come, go, start terminating and change labels, every matcher's counts equal a count
    over the placed pods; so they do in a session opened while another one still holds the carried counts."""
    rng = random.Random(7)
    apps = [{"app": "web"}, {"app": "db"}, {"app": "web", "tier": "front"}, {"app": "batch"}]
    nodes = [NodeView.parse(node(f"n{i}", cpu="64")) for i in range(5)]
    pods: dict[str, PodView] = {}
    matchers: list[Matcher] = [((frozenset({ns}), LabelSelector.parse({"matchLabels": sel})),) for ns in ("a", "b")
                for sel in ({"app": "web"}, {"app": "db"}, {})]
    matchers.append(((None, LabelSelector.parse({"matchExpressions": [{"key": "tier", "operator": "Exists"}]})),))
    memo = SessionMemo()
    parsed = parse(conf("podtopologyspread"))

    def open_session() -> Session:
        snap = Snapshot.build(nodes, list(pods.values()))
        return Session(snap, parsed, clock=FakeClock(T0 + 60), sink=RecordingSink(), memo=memo, renew=True)

    def check(ssn: Session) -> None:
        index = PodIndex.of(ssn)
        for m in matchers:
            for terminating in (False, True):
                want = [0] * len(ssn.nodes)
                for p in index._placed.values():
                    if matcher_matches(m, p.pod) and (terminating or not p.terminating):
                        want[p.node] += 1
                assert index.counts(m, include_terminating=terminating).tolist() == want

    def change() -> None:
        for _ in range(rng.randrange(1, 6)):
            name = f"p{rng.randrange(30)}"
            old = pods.get(name)
            if old is None or rng.random() < 0.3:
                labels = rng.choice(apps)
                pods[name] = PodView.parse(pod(name, cpu="100m", namespace=rng.choice(["a", "b"]), labels=labels,
                                               node_name=f"n{rng.randrange(5)}"))
            elif rng.random() < 0.5:
                del pods[name]
            else:  # terminating from now on
                raw = {**old.raw, "metadata": {**old.raw["metadata"], "deletionTimestamp": "2024-01-01T00:00:00Z"}}
                pods[name] = PodView.parse(raw)

    for k in range(25):
        change()
        ssn = open_session()
        PodIndex.of(ssn)
        if k % 5 == 4:  # another session moves the carried counts before this one counts anything
            change()
            check(open_session())
        check(ssn)
        ssn.close()
        memo.release(ssn)
        memo.rotate()
