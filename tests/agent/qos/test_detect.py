"""docs/design/waterline.md §3: consecutive counters, strict '>', missing metrics freeze, series selectors."""

from __future__ import annotations

from agent.qos.detect import Detector, Status, series
from tests.agent.qos.factories import node, pod, policy, rule


def _run(values: list[int | None], **kw: int) -> list[Status]:
    p = policy(rule(**kw))
    d = Detector()
    out = []
    for v in values:
        out.append(d.evaluate(p, p.rules[0], node(cpu=v)).status)
    return out


T, R, N, E = Status.TRIGGERED, Status.RESTORED, Status.NONE, Status.ERROR


def test_detect_trigger_needs_consecutive_samples() -> None:
    # B14: a dip resets the over-counter; 2 samples apart never trigger
    assert _run([7000, 5000, 7000, 5000, 7000], avoidanceThreshold=2) == [N, N, N, N, N]
    assert _run([7000, 7000, 7000], avoidanceThreshold=2) == [N, T, T]


def test_equality_is_not_a_violation() -> None:
    assert _run([6000, 6000, 6001]) == [N, N, T]


def test_restore_needs_consecutive_under_samples_and_fires_once() -> None:
    seq = [7000, 7000, 5000, 7000, 5000, 5000, 5000, 5000]
    assert _run(seq, avoidanceThreshold=2, restoreThreshold=2) == [N, T, N, N, N, R, N, N]


def test_after_dip_rule_stays_active_but_must_reach_threshold_again() -> None:
    p = policy(rule(avoidanceThreshold=2, restoreThreshold=3))
    d = Detector()
    got = [(d.evaluate(p, p.rules[0], node(cpu=v)).status, d.counters("p.cpu").active)
           for v in (7000, 7000, 5000, 7000, 7000)]
    assert got == [(N, False), (T, True), (N, True), (N, True), (T, True)]


def test_missing_metric_freezes_counters() -> None:
    # over, missing, over -> the missing tick neither resets nor counts
    assert _run([7000, None, 7000], avoidanceThreshold=2) == [N, E, T]
    # active, under, missing, under -> restore with threshold 2 still fires
    assert _run([7000, 5000, None, 5000], restoreThreshold=2) == [T, N, E, R]


def test_preview_rules_count_the_same() -> None:
    assert _run([7000, 7000, 5000], strategy="Preview", avoidanceThreshold=2) == [N, T, R]


def test_selector_over_labelled_series() -> None:
    p = policy(rule(metric="disk_read_kibps", value="100",
                    metricRule={"name": "disk_read_kibps", "value": "100",
                                "selector": {"matchLabels": {"diskName": "sdb"}}}))
    d = Detector()
    s = node(**{'disk_read_kibps{diskName="sda"}': 500.0, 'disk_read_kibps{diskName="sdb"}': 50.0})
    assert d.evaluate(p, p.rules[0], s).status is N
    s = node(**{'disk_read_kibps{diskName="sda"}': 5.0, 'disk_read_kibps{diskName="sdb"}': 150.0})
    r = d.evaluate(p, p.rules[0], s)
    assert r.status is T and r.labels["diskName"] == "sdb" and r.value == 150.0
    r = d.evaluate(p, p.rules[0], node(**{'disk_read_kibps{diskName="sda"}': 5.0}))
    assert r.status is E and "selector matches no series" in r.error


def test_container_series_derived_from_pods() -> None:
    s = node(pod("a", cpu=2500), pod("b", cpu=0))
    got = series(s, "container_cpu_total_usage")
    assert ({"PodName": "a", "PodNamespace": "default", "PodUid": "uid-default-a", "ContainerName": "c",
             "ContainerId": ""}, 2.5) in [(dict(k), v) for k, v in got]
    assert all(dict(k)["PodName"] == "a" for k, _ in got)  # no samples for a container that did not move
    p = policy(rule(metric="container_cpu_total_usage", value="2",
                    metricRule={"name": "container_cpu_total_usage", "value": "2",
                                "selector": {"matchLabels": {"PodName": "a"}}}))
    assert Detector().evaluate(p, p.rules[0], s).status is T


def test_any_series_above_triggers() -> None:
    p = policy(rule(metric="network_receive_kibps", value="10"))
    s = node(**{'network_receive_kibps{NetInterface="eth0"}': 1.0, 'network_receive_kibps{NetInterface="eth1"}': 11.0})
    assert Detector().evaluate(p, p.rules[0], s).status is T
