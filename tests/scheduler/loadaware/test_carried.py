"""A load-aware state opened from what the session before it left (scheduler.loadaware.carried) equals one made
from scratch, after every step of random event sequences: pods bound, replaced, finished and deleted, NodeMetrics
reported anew or gone (one node's, or every node's at once), nodes whose annotations change, the clock moving on
(the carried entries' estimates are kept per pod shape, the fresh ones computed per pod);
and what a session reserves in its state does not leak into the next one."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from common.clock import to_rfc3339
from common.objects import NodeMetricView, NodeView, PodView
from common.reservation import RESERVATIONS_ANNOTATION
from scheduler.framework.changes import ChangeLog
from scheduler.framework.memo import SessionMemo
from scheduler.loadaware.args import parse_loadaware_args
from scheduler.loadaware.cache import AssignedPod
from scheduler.loadaware.carried import PodLog, open_carried
from scheduler.loadaware.estimator import SCALING_FACTORS_ANNOTATION
from scheduler.loadaware.evaluate import LoadAwareState
from scheduler.loadaware.memo import LoadAwareMemo
from scheduler.loadaware.profile import USAGE_THRESHOLDS_ANNOTATION
from scheduler.loadaware.snapshot import open_state

from .helpers import GI, metric

NODES = 4
ARGS = [{}, {"estimatedSecondsAfterPodScheduled": 90},
        {"estimatedSecondsAfterInitialized": 30, "allowCustomizeEstimation": True},
        {"aggregated": {"usageThresholds": {"cpu": 60}, "usageAggregationType": "p95"}}]
FIELDS = ("load_filter", "load_prod", "load_score", "has_status", "has_metric", "expired", "allocatable",
          "thr_plain", "thr_prod", "prod_enabled", "agg_used", "waterline_cap")


def _node(i: int, version: int) -> NodeView:
    thresholds = json.dumps({"usageThresholds": {"cpu": 50 + version % 3 * 10}})
    annotations = {USAGE_THRESHOLDS_ANNOTATION: thresholds} if version % 2 else {}
    if version % 3 == 2:
        annotations["node.koordinator.sh/raw-allocatable"] = json.dumps({"cpu": "6"})
    if version % 4 == 3:
        annotations[RESERVATIONS_ANNOTATION] = "[]"
    return NodeView.parse({"apiVersion": "v1", "kind": "Node",
                           "metadata": {"name": f"n{i}", "annotations": annotations},
                           "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}}})


def _pod(j: int, node: int, version: int, scheduled: bool, phase: str) -> PodView:
    conditions = []
    if scheduled:
        conditions.append({"type": "PodScheduled", "status": "True",
                           "lastTransitionTime": to_rfc3339(900.0 + 17 * version)})
    annotations = {"scheduling.koordinator.sh/load-estimated-seconds-after-pod-scheduled": "40"} if j % 5 == 2 else {}
    if j % 3 == 1:   # read when the arguments allow it: pods of one shape but these differ in their estimates
        annotations[SCALING_FACTORS_ANNOTATION] = json.dumps({"cpu": 40 + version % 2 * 50})
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {
        "requests": {"cpu": f"{1 + version % 3}", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}}]}
    if node >= 0:
        spec["nodeName"] = f"n{node}"
    if j % 4 == 3:
        spec["priorityClassName"] = "koord-prod"
        spec["priority"] = 9000
    return PodView.parse({"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": f"p{j}", "namespace": "d", "uid": f"u{j}",
                                       "annotations": annotations},
                          "spec": spec, "status": {"phase": phase, "conditions": conditions}})


def _metric(i: int, version: int) -> NodeMetricView:
    reported = [{"namespace": "d", "name": f"p{j}", "priority": "koord-prod" if j % 4 == 3 else "",
                 "podUsage": {"resources": {"cpu": f"{100 * (j % 7)}m", "memory": str(j * GI // 8)}}}
                for j in range(version % 5, 12, 3)]
    return metric(f"n{i}", cpu_milli=500 * (i + version % 4), memory=(i + 1) * GI,
                  update=None if version % 7 == 6 else 960.0 + 25 * version, pods=reported, status=version % 6 != 5)


# one event: (kind, which object, a number for its new version)
EVENT = st.tuples(st.sampled_from(["pod", "pod", "pod", "gone", "metric", "nometric", "node", "time", "newlog",
                                   "report"]),
                  st.integers(0, 11), st.integers(0, 40))


class _World:
    """The objects a scheduler's cache would hold, replaced by new objects as events arrive."""

    def __init__(self) -> None:
        self.nodes = [_node(i, 0) for i in range(NODES)]
        self.metrics = {f"n{i}": _metric(i, 0) for i in range(NODES)}
        self.pods: dict[int, PodView] = {j: _pod(j, j % NODES, 0, j % 2 == 0, "Running") for j in range(6)}
        self.now = 1000.0
        # as a scheduler cache notes them (every kind, by key); a short log, so that it sometimes no longer reaches
        # back
        self.changes = ChangeLog(limit=6)

    def apply(self, kind: str, which: int, version: int) -> None:
        if kind == "pod":
            phase = ("Running", "Pending", "Succeeded", "Running", "Failed", "Running")[version % 6]
            self.pods[which] = _pod(which, version % (NODES + 1) - 1, version, version % 3 == 0, phase)
            self.changes.note("Pod", f"d/p{which}")
        elif kind == "gone":
            if self.pods.pop(which, None) is not None:
                self.changes.note("Pod", f"d/p{which}", removed=True)
        elif kind == "newlog":   # another cache (a restart): its log says nothing of the kept state
            self.changes = ChangeLog(limit=6)
        elif kind == "metric":
            self.metrics[f"n{which % NODES}"] = _metric(which % NODES, version)
            self.changes.note("NodeMetric", f"n{which % NODES}")
        elif kind == "nometric":
            if self.metrics.pop(f"n{which % NODES}", None) is not None:
                self.changes.note("NodeMetric", f"n{which % NODES}", removed=True)
        elif kind == "report":   # every node reports at once (as each minute in the simulator); some have none
            for i in range(NODES):
                if (i + which) % 5 == 4:
                    if self.metrics.pop(f"n{i}", None) is not None:
                        self.changes.note("NodeMetric", f"n{i}", removed=True)
                else:
                    self.metrics[f"n{i}"] = _metric(i, version + i)
                    self.changes.note("NodeMetric", f"n{i}")
        elif kind == "node":
            self.nodes[which % NODES] = _node(which % NODES, version)
            self.changes.note("Node", f"n{which % NODES}")
        else:
            self.now += (0, 1, 1, 30, 61, 100, 250)[version % 7]

    def log(self) -> PodLog:
        return PodLog(self.changes, self.changes.generation, {p.key: p for p in self.pods.values()})

    def pods_on(self, i: int) -> list[PodView]:
        """The pods a session counts on node ``i``: bound there and not finished."""
        return [p for p in self.pods.values() if p.node_name == f"n{i}" and not p.terminal]


def _assert_same(carried: LoadAwareState, fresh: LoadAwareState, step: int) -> None:
    for field in FIELDS:
        assert np.array_equal(getattr(carried, field), getattr(fresh, field)), (step, field)
    assert carried.profiles == fresh.profiles, step
    assert carried.node_names == fresh.node_names and dict(carried.index) == dict(fresh.index)
    assert len(carried.cache) == len(fresh.cache), step
    for name in carried.node_names:
        assert sorted(carried.cache.pods_on(name), key=str) == sorted(fresh.cache.pods_on(name), key=str), (step,
                                                                                                          name)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(range(len(ARGS))), st.booleans(),
       st.lists(st.lists(EVENT, max_size=4), min_size=1, max_size=12))
def test_carried_state_equals_a_fresh_one_after_every_step(which_args: int, logged: bool,
                                                           steps: list[list[tuple[str, int, int]]]) -> None:
    """``logged``: the sessions follow the change log (as from a scheduler cache), else compare pod objects."""
    args = parse_loadaware_args(ARGS[which_args])
    world = _World()
    memo = SessionMemo()
    for step, events in enumerate(steps):
        for event in events:
            world.apply(*event)
        memo.rotate()
        pods = list(world.pods.values())
        carried = open_carried(args, LoadAwareMemo.of(memo, args), world.nodes, pods, world.pods_on, world.metrics,
                               world.now, log=world.log() if logged else None)
        assert carried is not None
        fresh = open_state(args, world.nodes, pods, world.metrics, world.now)
        _assert_same(carried, fresh, step)
        kept = LoadAwareMemo.of(memo, args).carried_nodes
        assert kept is not None and kept.reserving == tuple(
            i for i, n in enumerate(world.nodes) if n.annotations.get(RESERVATIONS_ANNOTATION)), step
        # what the session places is its own: the next session opens without it
        carried.reserve(AssignedPod("d/placed", "n1", (1000, GI), False, world.now, None))
        carried.unreserve("d/p1")


def test_a_pod_key_on_two_nodes_is_not_carried() -> None:
    """Entries that cannot be held one per pod key make the state from scratch, and nothing is kept."""
    args = parse_loadaware_args({})
    world = _World()
    twin = world.pods[0]
    memo = LoadAwareMemo.of(SessionMemo(), args)

    def pods_on(i: int) -> list[PodView]:
        return world.pods_on(i) + ([twin] if i == 3 else [])
    assert open_carried(args, memo, world.nodes, list(world.pods.values()), pods_on, world.metrics, 1000.0) is None
    assert memo.carried_nodes is None
    assert open_carried(args, memo, world.nodes, list(world.pods.values()), world.pods_on, world.metrics,
                        1000.0) is not None
    assert memo.carried_nodes is not None


def test_an_unchanged_node_is_not_derived_again() -> None:
    """Only the node whose pods changed asks for its pods (one whose NodeMetric changed keeps its entries): a
    session costs what changed, not every node."""
    args = parse_loadaware_args({})
    world = _World()
    memo = LoadAwareMemo.of(SessionMemo(), args)
    asked: list[int] = []

    def pods_on(i: int) -> list[PodView]:
        asked.append(i)
        return world.pods_on(i)
    open_carried(args, memo, world.nodes, list(world.pods.values()), pods_on, world.metrics, 1000.0)
    assert asked == list(range(NODES))
    asked.clear()
    world.apply("pod", 7, 3)   # a new pod bound to n2
    open_carried(args, memo, world.nodes, list(world.pods.values()), pods_on, world.metrics, 1001.0)
    assert asked == [2]
    asked.clear()
    world.apply("metric", 1, 4)   # n1 reports anew: its rows are made again, from the entries it kept
    carried = open_carried(args, memo, world.nodes, list(world.pods.values()), pods_on, world.metrics, 1002.0)
    assert asked == []
    assert carried is not None
    _assert_same(carried, open_state(args, world.nodes, list(world.pods.values()), world.metrics, 1002.0), 0)


def test_rows_made_before_a_metric_window_are_made_anew_once_the_clock_passes_it() -> None:
    """A pod without a PodScheduled time is dated with each session's time: its estimate counts once that time is
    past the NodeMetric's update less its reporting interval, though no object changed."""
    args = parse_loadaware_args({})
    world = _World()
    world.pods = {j: _pod(j, 0, 1, False, "Running") for j in range(6)}
    world.metrics["n0"] = _metric(0, 9)   # updated at 1185, reporting every 60 s
    memo = LoadAwareMemo.of(SessionMemo(), args)
    for now in (1000.0, 1120.0, 1130.0, 1250.0):
        carried = open_carried(args, memo, world.nodes, list(world.pods.values()), world.pods_on, world.metrics, now)
        fresh = open_state(args, world.nodes, list(world.pods.values()), world.metrics, now)
        assert carried is not None
        _assert_same(carried, fresh, int(now))
