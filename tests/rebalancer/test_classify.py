"""Node classification and the anomaly condition, pinned to LowNodeLoad's documented behaviour."""

from __future__ import annotations

from common.objects import NodeMetricView, NodeView
from rebalancer.anomaly import AnomalyDetector
from rebalancer.args import AnomalyCondition, parse_rebalance_args
from rebalancer.classify import NodeClass, classify, node_loads, thresholds
from tests.rebalancer.helpers import GI, T0, Cluster, args


def _classes(c: Cluster, now: float = T0 + 10, **kw: object) -> dict[str, NodeClass]:
    a = parse_rebalance_args(args(**kw))
    snap = c.snapshot()
    loads = node_loads(snap.nodes, snap.node_metrics, now, a.node_metric_expiration_seconds)
    thr = thresholds(a, loads)
    return {ld.name: classify(ld, thr) for ld in loads}


def _cluster(cpu_percent: dict[str, int], memory_gib: int = 8) -> Cluster:
    c = Cluster(cpu=10, memory=32)
    for name, pct in cpu_percent.items():
        c.node(name)
        c.pod(f"{name}-p", name, pct * 100, memory_gib * GI)
    return c


def test_low_is_at_or_below_every_low_threshold_high_is_above_any_high() -> None:
    # low cpu 35 / memory 60, high cpu 65 / memory 90 (percent of allocatable)
    c = _cluster({"at-low": 35, "below": 20, "mid": 50, "at-high": 65, "above": 66})
    assert _classes(c) == {"at-low": NodeClass.LOW, "below": NodeClass.LOW, "mid": NodeClass.APPROPRIATE,
                           "at-high": NodeClass.APPROPRIATE, "above": NodeClass.HIGH}


def test_one_resource_above_high_makes_a_node_high_and_one_above_low_keeps_it_from_low() -> None:
    c = _cluster({"mem-hot": 10}, memory_gib=30)  # 94% memory
    c.node("mem-warm")
    c.pod("warm", "mem-warm", 1000, 24 * GI)  # cpu 10%, memory 75%
    assert _classes(c) == {"mem-hot": NodeClass.HIGH, "mem-warm": NodeClass.APPROPRIATE}


def test_unschedulable_node_is_never_low() -> None:
    c = _cluster({"cordoned": 5})
    c.nodes["cordoned"]["spec"]["unschedulable"] = True
    assert _classes(c) == {"cordoned": NodeClass.APPROPRIATE}


def test_expired_or_missing_nodemetric_is_stale() -> None:
    c = _cluster({"old": 90, "fresh": 90})
    c.updated["old"] = T0 - 180  # now - updateTime >= 180 s: expired, as the scheduler expires it
    assert _classes(c) == {"old": NodeClass.STALE, "fresh": NodeClass.HIGH}
    snap = c.snapshot()
    loads = node_loads(snap.nodes, {}, T0, 180)
    assert all(not ld.fresh for ld in loads)


def test_deviation_thresholds_sit_around_the_cluster_mean() -> None:
    c = _cluster({"a": 20, "b": 40, "c": 60}, memory_gib=16)  # mean cpu 40%: low below 30%, high above 50%
    got = _classes(c, useDeviationThresholds=True, highThresholds={"cpu": 10}, lowThresholds={"cpu": 10})
    assert got == {"a": NodeClass.LOW, "b": NodeClass.APPROPRIATE, "c": NodeClass.HIGH}


def test_destination_and_source_thresholds_follow_the_mean_too_and_default_to_the_high_ones() -> None:
    c = _cluster({"a": 20, "b": 40, "c": 60}, memory_gib=16)  # mean cpu 40%
    snap = c.snapshot()
    kw = {"highThresholds": {"cpu": 10}, "lowThresholds": {"cpu": 10}}
    a = parse_rebalance_args(args(useDeviationThresholds=True, destinationThresholds={"cpu": 4},
                                  sourceThresholds={"cpu": 6}, **kw))
    thr = thresholds(a, node_loads(snap.nodes, snap.node_metrics, T0 + 10, a.node_metric_expiration_seconds))
    assert (thr.destination_limit("cpu"), thr.source_limit("cpu"), thr.high["cpu"]) == (44.0, 46.0, 50.0)
    plain = thresholds(parse_rebalance_args(args(**kw)), [])
    assert plain.destination_limit("cpu") == plain.source_limit("cpu") == 10.0


def test_prod_thresholds_judge_prod_usage() -> None:
    c = Cluster(cpu=10, memory=32)
    c.node("n")
    c.pod("prod", "n", 5000)           # prod (no priority, has requests): 50% prod cpu
    c.pod("batch", "n", 500, priority=5500)
    kw = {"prodHighThresholds": {"cpu": 40}, "prodLowThresholds": {"cpu": 20}}
    assert _classes(c, **kw) == {"n": NodeClass.HIGH}
    assert _classes(c) == {"n": NodeClass.APPROPRIATE}


def test_anomaly_needs_consecutive_hot_observations() -> None:
    d = AnomalyDetector(AnomalyCondition())  # 5 abnormal, 3 normal, 60 s timeout
    t = T0
    seen = []
    for hot in (True, True, True, True, False, True, True, True, True, True):
        t += 30
        seen.append(d.observe("n", hot, t))
    assert seen == [False] * 9 + [True]
    for expect in (True, True, False):  # three cool observations in a row make it normal again
        t += 30
        assert d.observe("n", False, t) is expect


def test_anomaly_count_restarts_after_a_gap_and_after_reset() -> None:
    d = AnomalyDetector(AnomalyCondition(consecutive_abnormalities=2, timeout=60))
    assert d.observe("n", True, T0) is False
    assert d.observe("n", True, T0 + 61) is False  # too far apart to chain
    assert d.observe("n", True, T0 + 90) is True
    d.reset("n")
    assert d.observe("n", True, T0 + 120) is False


def test_node_views_parse() -> None:
    # the helpers build what the scheduler parses: a sanity check of the fixture itself
    c = _cluster({"x": 50})
    snap = c.snapshot()
    assert isinstance(snap.nodes[0], NodeView)
    assert isinstance(snap.node_metrics["x"], NodeMetricView)
    assert snap.node_metrics["x"].node_usage["cpu"] == 5000
