"""What the load-aware plugin keeps between sessions gives what it would compute afresh: the Python-int node rows
equal node_load + existing_load, the assigned-pod cache filled node by node equals adding the entries one by one, a
memo made for other arguments is not reused, and the freshness gauges' cached children follow removed nodes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from common.clock import to_rfc3339
from common.objects import NodeView, PodView
from scheduler.framework.memo import SessionMemo
from scheduler.loadaware.args import parse_loadaware_args
from scheduler.loadaware.cache import (
    AssignedPod,
    AssignedPodCache,
    NodeEntries,
    Stamp,
    _load_rows2,
    _load_rows_any,
    existing_load,
    load_rows,
    metric_load,
    node_load,
)
from scheduler.loadaware.freshness import NodeMetricFreshness
from scheduler.loadaware.memo import LoadAwareMemo
from scheduler.loadaware.snapshot import open_state

from .helpers import GI, metric

AGGREGATED = [{"duration": "5m", "usage": {"avg": {"resources": {"cpu": "1500m", "memory": str(3 * GI)}},
                                           "p95": {"resources": {"cpu": "2500m", "memory": str(4 * GI)}}}},
              {"duration": "10m", "usage": {"avg": {"resources": {"cpu": "1200m", "memory": str(2 * GI)}}}}]


def _pods(draw: list[tuple[int, bool, int, int, bool]]) -> tuple[list[AssignedPod], list[dict[str, Any]]]:
    pods, reported = [], []
    for i, (cpu, prod, age, usage, has_usage) in enumerate(draw):
        key = f"default/p{i}"
        pods.append(AssignedPod(key, "n", (cpu, cpu * 1000) if cpu else (0, 0), prod, 1000.0 - age,
                                None if i % 3 else 1000.0 - age + 120))
        if has_usage:
            reported.append({"namespace": "default", "name": f"p{i}", "priority": "koord-prod" if i % 2 else "",
                             "podUsage": {"resources": {"cpu": f"{usage}m", "memory": str(usage * 900)}}})
    return pods, reported


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3000), st.booleans(), st.integers(0, 300), st.integers(0, 3000),
                          st.booleans()), max_size=6),
       st.booleans(), st.booleans(), st.booleans(), st.booleans(),
       st.sampled_from([("", 0.0), ("avg", 300.0), ("p95", 0.0), ("avg", 600.0), ("p99", 0.0)]),
       st.sampled_from([("", 0.0), ("avg", 0.0), ("p95", 300.0), ("p50", 0.0)]))
def test_load_rows_equal_node_load_then_existing_load(draw: list[tuple[int, bool, int, int, bool]], status: bool,
                                                       aggregated: bool, include_sys: bool, updated: bool,
                                                       plain: tuple[str, float], score: tuple[str, float]) -> None:
    args = parse_loadaware_args({"prodUsageIncludeSys": include_sys})
    pods, reported = _pods(draw)
    m = metric("n", cpu_milli=2000, memory=5 * GI, update=1000.0 if updated else None, pods=reported, status=status,
               aggregated=AGGREGATED if aggregated else None)
    load = node_load(m, pods, args)
    k = len(args.resource_names)
    has, rows = load_rows(metric_load(m, args), pods, k, plain, score)
    expect: list[int] = []
    for got in (existing_load(load, prod=False, agg_type=plain[0], agg_duration=plain[1]),
                existing_load(load, prod=True),
                existing_load(load, prod=False, agg_type=score[0], agg_duration=score[1])):
        expect.extend([0] * k if got is None else got.tolist())
    assert has == (load.node_usage is not None)
    assert rows == expect
    # the two-resource fast path equals the path for any number of resources
    assert _load_rows2(metric_load(m, args), pods, plain, score) == _load_rows_any(metric_load(m, args), pods, k,
                                                                                     plain, score)


def _entry(key: str, node: str) -> AssignedPod:
    return AssignedPod(key, node, (1, 2), False, 0.0, None)


def _contents(cache: AssignedPodCache, nodes: list[str]) -> list[Any]:
    return [(n, [(e.key, e.node) for e in cache.pods_on(n)]) for n in nodes] + [len(cache)]


@given(st.lists(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["a", "b", "c"])), max_size=4), max_size=3))
def test_node_by_node_fill_equals_adding_entries_in_turn(groups: list[list[tuple[int, str]]]) -> None:
    nodes = ["a", "b", "c"]
    built = [NodeEntries.of(nodes[i], [_entry(f"p{k}", node) for k, node in g]) for i, g in enumerate(groups)]
    fast, slow = AssignedPodCache(), AssignedPodCache()
    fast.add_nodes(built)
    for g in built:
        slow.add_all(g.entries)
    assert _contents(fast, nodes) == _contents(slow, nodes)


_op = st.one_of(st.tuples(st.just("add"), st.integers(0, 7), st.sampled_from(["a", "b", "c"])),
                st.tuples(st.just("remove"), st.integers(0, 7)), st.tuples(st.just("get"), st.integers(0, 7)),
                st.tuples(st.just("read"), st.sampled_from(["a", "b", "c"])))


def _full(cache: AssignedPodCache, nodes: list[str]) -> list[Any]:
    """Every entry with its dates, node by node in order, and the size."""
    return [(n, list(cache.pods_on(n))) for n in nodes] + [len(cache)]


@given(st.lists(st.lists(st.tuples(st.integers(0, 7), st.sampled_from([None, 0, 30])), max_size=3), min_size=3,
                max_size=3, unique_by=lambda g: tuple(k for k, _ in g)),
       st.sampled_from([None, 100.0, 160.0]), st.lists(_op, max_size=8))
def test_groups_dated_when_read_equal_groups_dated_at_once(groups: list[list[tuple[int, int | None]]],
                                                           now: float | None, ops: list[tuple[Any, ...]]) -> None:
    """Groups of entries stamped at time 100 and added for session time ``now`` are dated anew only when their node
    is read or changed: after any reads, adds and removes the cache holds what one filled with the entries already
    dated at ``now`` holds."""
    nodes = ["a", "b", "c"]
    seen: set[int] = set()
    built = []
    for node, g in zip(nodes, groups, strict=True):
        g = [(k, after) for k, after in g if k not in seen]   # a pod is on one node
        seen.update(k for k, _ in g)
        stamps = [Stamp(after) if after is not None else None for _, after in g]
        entries = [AssignedPod(f"p{k}", node, (k, 1), False, 100.0, None if after is None else 100.0 + after)
                   for k, after in g]
        built.append(NodeEntries.of(node, entries, stamps, 100.0 if entries else None))
    lazy, eager = AssignedPodCache(), AssignedPodCache()
    lazy.add_nodes(built, now)
    for g in built:
        eager.add_all(g.at(now))
    caches = [lazy, eager]
    if all(len(g.by_key) == len(g.entries) for g in built):
        # the same groups held without copying until read (what a carried session opens with: one entry per key)
        caches.append(AssignedPodCache.of_groups({g.node: g for g in built},
                                                 {k: g.node for g in built for k in g.by_key},
                                                 now if now is not None else 100.0))
    for op in ops:
        if op[0] == "add":
            for cache in caches:
                cache.add(AssignedPod(f"p{op[1]}", op[2], (9, 9), True, 50.0, None))
        elif op[0] == "remove":
            assert len({repr(c.remove(f"p{op[1]}")) for c in caches}) == 1
        elif op[0] == "get":
            assert len({repr(c.get(f"p{op[1]}")) for c in caches}) == 1
        else:
            assert all(list(c.pods_on(op[1])) == list(lazy.pods_on(op[1])) for c in caches)
    assert all(_full(c, nodes) == _full(lazy, nodes) for c in caches)


def test_memo_is_not_reused_for_other_arguments() -> None:
    memo = SessionMemo()
    a = LoadAwareMemo.of(memo, parse_loadaware_args({}))
    assert LoadAwareMemo.of(memo, parse_loadaware_args({})) is a
    b = LoadAwareMemo.of(memo, parse_loadaware_args({"usageThresholds": {"cpu": 50}}))
    assert b is not a


def test_freshness_gauges_follow_nodes_that_leave_and_come_back() -> None:
    reg = CollectorRegistry()
    f = NodeMetricFreshness(reg)

    def val(name: str, node: str) -> float | None:
        return reg.get_sample_value(f"loadwise_scheduler_nodemetric_{name}", {"node": node})

    f.update(["a"], {"a": metric("a", update=1000.0)}, 1010.0, 180)
    f.update([], {}, 1020.0, 180)
    assert val("age_seconds", "a") is None and val("expired", "a") is None
    f.update(["a"], {"a": metric("a", update=1000.0)}, 1030.0, 180)
    assert val("age_seconds", "a") == 30.0 and val("expired", "a") == 0.0
    f.update(["a"], {}, 1040.0, 180)          # its NodeMetric is gone: no age, expired
    assert val("age_seconds", "a") is None and val("expired", "a") == 1.0
    f.update(["a"], {"a": metric("a", update=1035.0)}, 1040.0, 180)
    assert val("age_seconds", "a") == 5.0 and val("expired", "a") == 0.0


def _reference_read(m: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    """What metric_load read from a NodeMetric before its one-pass loop: the reported pods (a later entry of the same
    pod replacing an earlier one), their usage in the args' order, and which of them are prod."""
    reported = {f"{p.namespace}/{p.name}": p for p in m.pods if p.usage}
    return ({key: tuple(p.usage.get(n, 0) for n in names) for key, p in reported.items()},
            frozenset(key for key, p in reported.items() if p.priority == "koord-prod"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["koord-prod", "koord-batch", ""]),
                          st.dictionaries(st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]), st.integers(0, 4000),
                                          max_size=3)), max_size=6),
       st.booleans())
def test_metric_read_equals_the_reported_pods(draw: list[tuple[int, str, dict[str, int]]], gpu: bool) -> None:
    reported = [{"namespace": "default", "name": f"p{i}", "priority": prio,
                 "podUsage": {"resources": {k: (f"{v}m" if k == "cpu" else str(v)) for k, v in usage.items()}}}
                for i, prio, usage in draw]
    m = metric("n", cpu_milli=2000, memory=5 * GI, pods=reported)
    args = parse_loadaware_args({"usageThresholds": {"cpu": 65, "memory": 95, "nvidia.com/gpu": 80}} if gpu else {})
    names = tuple(args.resource_names)
    assert len(names) == (3 if gpu else 2)
    got = metric_load(m, args)
    assert (dict(got.pod_usage), got.prod_reported) == _reference_read(m, names)
    assert list(got.pod_usage) == list(_reference_read(m, names)[0])
    assert got.node_usage == tuple(m.node_usage.get(n, 0) for n in names)


@pytest.mark.parametrize("churn", [False, True])
@pytest.mark.parametrize("raw_args", [{}, {"estimatedSecondsAfterPodScheduled": 90},
                                      {"estimatedSecondsAfterInitialized": 30, "allowCustomizeEstimation": True}])
def test_memoised_state_equals_a_fresh_one_as_time_passes(raw_args: dict[str, Any], churn: bool) -> None:
    """Pods without a PodScheduled time are dated with each session's time: the kept entries, dated anew, and the
    rows made from them must be what a state made afresh at that time holds.  With ``churn``, a different quarter
    of the pods is away in each session, so a node's entries are taken over from a session at another time."""
    args = parse_loadaware_args(raw_args)
    nodes = [NodeView.parse({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                             "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}}}) for i in range(3)]
    pods: list[PodView] = []
    for j in range(9):
        conds = []
        if j % 3 == 0:
            conds.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": to_rfc3339(900.0 + j)})
        if j % 4 == 1:
            conds.append({"type": "Initialized", "status": "True", "lastTransitionTime": to_rfc3339(950.0)})
        ann = {"scheduling.koordinator.sh/load-estimated-seconds-after-pod-scheduled": "40"} if j % 5 == 2 else {}
        pods.append(PodView.parse({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"p{j}", "namespace": "d", "uid": f"u{j}", "annotations": ann},
            "spec": {"nodeName": f"n{j % 3}", "containers": [{"name": "c", "resources": {
                "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}}]},
            "status": {"phase": "Running", "conditions": conds}}))
    # reported usage for some pods, at times the session's clock passes
    reported = [{"namespace": "d", "name": f"p{j}", "podUsage": {"resources": {"cpu": "500m", "memory": "512Mi"}}}
                for j in range(0, 9, 2)]
    # updated at 1000, 1100 and 1200: the sessions' clock passes each, less the reporting interval, and the
    # estimation deadlines counted from it
    metrics = {f"n{i}": metric(f"n{i}", cpu_milli=1000 * (i + 1), memory=GI, update=1000.0 + 100 * i,
                               pods=reported) for i in range(3)}
    memo = SessionMemo()
    times = (1000.0, 1001.0, 1001.0, 1030.0, 1045.0, 1070.0, 1100.0, 1130.0, 1150.0, 1170.0, 1200.0, 1250.0)
    for step, now in enumerate(times):
        memo.rotate()
        here = [p for j, p in enumerate(pods) if not churn or (j + step) % 4]
        by_node = [[p for p in here if p.node_name == n.name] for n in nodes]
        kept = open_state(args, nodes, here, metrics, now, None, LoadAwareMemo.of(memo, args), by_node)
        fresh = open_state(args, nodes, here, metrics, now)
        for field in ("load_filter", "load_prod", "load_score", "has_status"):
            assert getattr(kept, field).tolist() == getattr(fresh, field).tolist(), (now, field)
        for n in nodes:
            assert sorted(kept.cache.pods_on(n.name), key=str) == sorted(fresh.cache.pods_on(n.name), key=str), now
