"""usage (Volcano's load-aware plugin) through whole sessions fed by NodeMetrics: the worked score, strict
thresholds with Volcano's reasons, stale metrics, the 10-minute average, the shadow estimates of pods metrics
cannot show yet (existing and placed in this session) and the risk factor."""

from __future__ import annotations

from typing import Any

from common.clock import to_rfc3339
from tests.scheduler.factories import T0, node, pod, run

from .helpers import NOW, conf, message, metric, scores


def big(name: str, cpu: str = "10") -> dict[str, Any]:
    return node(name, cpu=cpu, memory="10Gi")


def test_worked_example_and_lower_usage_wins() -> None:
    objs = [big("a"), big("b"), metric("a", 3000, 5), metric("b", 0, 0), pod("p")]
    ssn, sink = run(objs, conf("usage"), explain=True)
    # ((1 - 0.3) + (1 - 0.5)) / 2 x 100 x usage.weight 5 = 300
    assert scores(ssn, "default/p", "usage") == {"a": 300, "b": 500}
    assert sink.binds["default/p"] == "b"


def test_thresholds_are_strict_with_volcanos_reasons() -> None:
    objs = [big("hot"), big("edge"), big("mem"), big("small", cpu="1"),
            metric("hot", 8100, 1), metric("edge", 8000, 8), metric("mem", 1000, 8.5), pod("p", cpu="2")]
    ssn, sink = run(objs, conf("usage"), explain=True)
    assert sink.binds == {"default/p": "edge"}  # exactly 80 % passes
    ssn, _ = run([objs[0], objs[2], objs[3], objs[4], objs[6], pod("p", cpu="2")], conf("usage"), explain=True)
    assert message(ssn, "default/p") == ("0/3 nodes are available: 1 Insufficient cpu, 1 the CPU load of the node "
                                         "exceeds the upper limit., 1 the memory load of the node exceeds the upper "
                                         "limit..")  # Volcano's reasons end in a period of their own
    ssn, sink = run(objs[:-1] + [pod("p", cpu="2")], conf(("usage", {"thresholds": {"cpu": 90, "mem": 90}})))
    assert len(sink.binds) == 1


def test_stale_or_missing_metrics_pass_and_score_zero() -> None:
    objs = [big("stale"), big("none"), big("fresh"), metric("stale", 9900, 9.9, age=301), metric("fresh", 9000, 1),
            pod("p")]
    ssn, sink = run(objs, conf("usage"), explain=True)
    assert scores(ssn, "default/p", "usage") == {"stale": 0, "none": 0}
    assert sink.binds["default/p"] in ("stale", "none")


def test_ten_minute_average_is_preferred_over_the_latest_sample() -> None:
    objs = [big("a"), big("b"), metric("a", 9500, 1, avg10m=(3000, 5)), metric("b", 1000, 1, avg10m=(6000, 5)),
            pod("p")]
    ssn, sink = run(objs, conf("usage"), explain=True)
    assert scores(ssn, "default/p", "usage") == {"a": 300, "b": 225}
    assert sink.binds["default/p"] == "a"


def test_pods_placed_in_the_session_shadow_the_node() -> None:
    objs = [big("a"), big("b"), metric("a", 0, 0), metric("b", 0, 0),
            pod("p0", cpu="2", memory="2Gi", created=T0), pod("p1", cpu="2", memory="2Gi", created=T0 + 1)]
    ssn, sink = run(objs, conf("usage"), explain=True)
    first = sink.binds["default/p0"]
    # 2 cpu x request_ratio 0.7 = 1.4 of 10 cpu; 2Gi x 0.7 of 10Gi: (0.86 + 0.86) / 2 x 500 = 430
    got = scores(ssn, "default/p1", "usage")
    assert got[first] == 430 and sorted(got.values()) == [430, 500]
    assert sink.binds["default/p1"] != first


def test_existing_pods_metrics_cannot_show_yet_are_estimated() -> None:
    fresh = pod("fresh", cpu="2", memory="2Gi", node_name="a")
    fresh["status"]["startTime"] = to_rfc3339(NOW - 10)
    old = pod("old", cpu="2", memory="2Gi", node_name="b")
    old["status"]["startTime"] = to_rfc3339(NOW - 120)
    objs = [big("a"), big("b"), big("c"), metric("a", 0, 0), metric("b", 0, 0), metric("c", 0, 0), fresh, old,
            pod("bound", cpu="2", memory="2Gi", node_name="c", phase="Pending"), pod("p", cpu="100m")]
    ssn, _ = run(objs, conf("usage"), explain=True)
    assert scores(ssn, "default/p", "usage") == {"a": 430, "b": 500, "c": 430}


def test_risk_factor_on_loaded_nodes() -> None:
    objs = [big("a"), big("b"), metric("a", 7000, 7), metric("b", 5000, 5),
            pod("ba", cpu="1500m", memory="1Gi", node_name="a", phase="Pending"),
            pod("bb", cpu="1500m", memory="1Gi", node_name="b", phase="Pending"), pod("p", cpu="100m")]
    ssn, _ = run(objs, conf("usage"), explain=True)
    # a is at 70 % >= risk_threshold 0.6, so its shadow is request x 0.7 x 1.2: U = 0.826 / 0.784 -> 97.5;
    # b (50 %) gets no risk factor: U = 0.605 / 0.57 -> 206.25
    assert scores(ssn, "default/p", "usage") == {"a": 97.5, "b": 206.25}
