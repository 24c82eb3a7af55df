"""NodeMetric status building: Koordinator's field names and serialisation, windows, pods, policy parsing."""

from __future__ import annotations

from typing import Any

import pytest

from agent.nodemetric import (
    NODE_MEMORY_WITH_PAGE_CACHE,
    MetricCollectPolicy,
    PodMeta,
    PodUsage,
    UsageSample,
    UsageStore,
    build_nodemetric_status,
    nodemetric_object,
    pod_series,
    reported_quantities,
    resource_map,
)
from common.cluster.memory import MemoryCluster
from common.config import ConfigError
from common.objects import NodeMetricView, PodsMetric
from common.resources import Resources

T0 = 1_700_000_000.0
GiB = 2**30


def _pod(name: str, ns: str, uid: str, *, priority: int | None = None, requests: bool = True) -> dict[str, object]:
    res = {"requests": {"cpu": "1", "memory": "1Gi"}} if requests else {}
    spec: dict[str, object] = {"containers": [{"name": "c", "resources": res}]}
    if priority is not None:
        spec["priority"] = priority
    return {"metadata": {"name": name, "namespace": ns, "uid": uid}, "spec": spec}


def _fill(store: UsageStore, seconds: int, *, cpu: float = 2.0, pods: dict[str, PodUsage] | None = None) -> float:
    t = T0
    for i in range(seconds + 1):
        t = T0 + i
        store.record(
            t,
            UsageSample(
                node_cpu_cores=cpu + (i % 2) * 0.5,
                node_memory_bytes=4 * GiB,
                node_memory_with_page_cache_bytes=6 * GiB,
                pods=pods or {},
            ),
        )
    return t


def test_status_has_koordinator_field_names_and_serialisation() -> None:
    policy = MetricCollectPolicy()
    store = UsageStore(policy, interval_seconds=1.0)
    pods = {"u1": PodUsage(0.4999, 100 * 2**20 + 0.7), "u2": PodUsage(1.25, GiB), "u3": PodUsage(None, None)}
    now = _fill(store, 1800, pods=pods)
    metas = [
        PodMeta.from_pod(_pod("web", "b", "u1")),
        PodMeta.from_pod(_pod("batch", "a", "u2", priority=5500)),
        PodMeta.from_pod(_pod("idle", "a", "u3")),  # no samples: left out
        PodMeta.from_pod(_pod("other", "a", "u9", requests=False)),  # no cgroup: left out
    ]
    status = build_nodemetric_status(store, now, policy, metas)
    assert status["updateTime"] == "2023-11-14T22:43:20Z"
    nm = status["nodeMetric"]
    # 2.0 and 2.5 alternating over the 300 s window (301 samples, 151 of them 2.0).
    assert nm["nodeUsage"] == {"resources": {"cpu": "2249m", "memory": "4Gi"}}
    assert [a["duration"] for a in nm["aggregatedNodeUsages"]] == ["5m0s", "10m0s", "30m0s"]
    five = nm["aggregatedNodeUsages"][0]["usage"]
    assert set(five) == {"avg", "p50", "p90", "p95", "p99"}
    assert five["p50"] == {"resources": {"cpu": "2", "memory": "4Gi"}}
    assert five["p99"] == {"resources": {"cpu": "2500m", "memory": "4Gi"}}
    assert nm["systemUsage"]["resources"]["cpu"] == "499m"  # 2.249.. - 1.7499
    assert status["podsMetric"] == [
        {"namespace": "a", "name": "batch", "podUsage": {"resources": {"cpu": "1250m", "memory": "1Gi"}},
         "priority": "koord-batch", "qos": "LS"},
        {"namespace": "b", "name": "web", "podUsage": {"resources": {"cpu": "499m", "memory": "100Mi"}},
         "priority": "koord-prod", "qos": "LS"},
    ]
    # What the scheduler side reads back.
    obj = nodemetric_object("n1", policy, status)
    view = NodeMetricView.parse(obj)
    assert view.node_usage == Resources.of(cpu=2249, memory=4 * GiB)
    assert view.aggregated[1800.0]["p95"] == Resources.of(cpu=2500, memory=4 * GiB)
    assert [p.key for p in view.pods] == ["a/batch", "b/web"]
    assert view.durations == (300.0, 600.0, 1800.0)
    assert obj["apiVersion"] == "slo.loadwise.io/v1alpha1" and obj["metadata"] == {"name": "n1"}


def test_cold_windows_are_published_empty_and_warm_up() -> None:
    policy = MetricCollectPolicy()
    store = UsageStore(policy, 1.0)
    now = _fill(store, 400)
    usages = {a["duration"]: a["usage"] for a in build_nodemetric_status(store, now, policy, [])["nodeMetric"]["aggregatedNodeUsages"]}
    assert usages["5m0s"] and usages["10m0s"] and usages["30m0s"] == {}
    view = NodeMetricView.parse(nodemetric_object("n", policy, build_nodemetric_status(store, now, policy, [])))
    assert view.aggregated[1800.0] == {}


def test_empty_history_gives_empty_maps_not_zeros() -> None:
    policy = MetricCollectPolicy()
    status = build_nodemetric_status(UsageStore(policy, 1.0), T0, policy, [PodMeta("a", "p", "u")])
    assert status["nodeMetric"]["nodeUsage"] == {"resources": {}}
    assert status["podsMetric"] == []


def test_memory_policy_chooses_the_series() -> None:
    policy = MetricCollectPolicy(node_memory_collect_policy="usageWithPageCache")
    store = UsageStore(policy, 1.0)
    now = _fill(store, 300, pods={"u": PodUsage(0.1, 1.0 * GiB, 1.5 * GiB)})
    assert store.node_memory_series() == NODE_MEMORY_WITH_PAGE_CACHE
    status = build_nodemetric_status(store, now, policy, [PodMeta("ns", "p", "u")])
    assert status["nodeMetric"]["nodeUsage"]["resources"]["memory"] == "6Gi"
    assert status["podsMetric"][0]["podUsage"]["resources"]["memory"] == "1536Mi"
    # usageWithHotPageCache needs cold-page collection: falls back to the default series.
    hot = MetricCollectPolicy(node_memory_collect_policy="usageWithHotPageCache")
    store.set_policy(hot)
    assert build_nodemetric_status(store, now, hot, [])["nodeMetric"]["nodeUsage"]["resources"]["memory"] == "4Gi"


def test_window_uses_aggregate_duration_with_koordlet_floor() -> None:
    assert MetricCollectPolicy(aggregate_duration_seconds=10).window_seconds == 60
    assert MetricCollectPolicy(report_interval_seconds=5).interval_seconds == 30
    policy = MetricCollectPolicy(aggregate_duration_seconds=60)
    store = UsageStore(policy, 1.0)
    for i in range(200):
        store.record(T0 + i, UsageSample(node_cpu_cores=1.0 if i < 139 else 3.0, pods={"u": PodUsage(0.5, 1.0)}))
    status = build_nodemetric_status(store, T0 + 199, policy, [])
    assert status["nodeMetric"]["nodeUsage"]["resources"]["cpu"] == "3"  # last 61 samples are all 3.0


def test_pod_history_forgets_pods_that_went_away() -> None:
    policy = MetricCollectPolicy(aggregate_duration_seconds=60)
    store = UsageStore(policy, 1.0)
    store.record(T0, UsageSample(node_cpu_cores=1, pods={"gone": PodUsage(1, 1)}))
    for i in range(1, 200):
        store.record(T0 + i, UsageSample(node_cpu_cores=1, pods={"stay": PodUsage(1, 1)}))
    assert pod_series("gone", "cpu") not in store.pods
    assert pod_series("stay", "cpu") in store.pods
    assert store.pods.capacity < store.node.capacity


def test_policy_parsing_defaults_and_errors_name_the_field() -> None:
    p = MetricCollectPolicy.from_spec(
        {"metricCollectPolicy": {"aggregateDurationSeconds": 120, "nodeAggregatePolicy": {"durations": ["1m", "1h0m0s"]}}}
    )
    assert p == MetricCollectPolicy(120, 60, (60.0, 3600.0), "usageWithoutPageCache")
    assert p.node_retention_seconds == 3600.0
    assert MetricCollectPolicy.from_spec(None) == MetricCollectPolicy()
    assert MetricCollectPolicy.from_spec(MetricCollectPolicy().to_spec()) == MetricCollectPolicy()
    assert MetricCollectPolicy().to_spec()["metricCollectPolicy"]["nodeAggregatePolicy"]["durations"] == ["5m0s", "10m0s", "30m0s"]
    cases = [
        ({"metricCollectPolicy": {"reportIntervalSeconds": "60"}}, "spec.metricCollectPolicy.reportIntervalSeconds"),
        ({"metricCollectPolicy": {"aggregateDurationSeconds": 0}}, "spec.metricCollectPolicy.aggregateDurationSeconds"),
        ({"metricCollectPolicy": {"nodeAggregatePolicy": {"durations": ["5x"]}}},
         "spec.metricCollectPolicy.nodeAggregatePolicy.durations[0]"),
        ({"metricCollectPolicy": {"nodeMemoryCollectPolicy": "all"}}, "spec.metricCollectPolicy.nodeMemoryCollectPolicy"),
        ({"metricCollectPolicy": []}, "spec.metricCollectPolicy"),
    ]
    for spec, where in cases:
        with pytest.raises(ConfigError) as err:
            MetricCollectPolicy.from_spec(spec, source="NodeMetric n1")
        assert err.value.field == where
        assert str(err.value).startswith(f"NodeMetric n1: {where}: ")


def test_resource_map_truncates() -> None:
    assert resource_map(1.9999, 1023.9) == {"resources": {"cpu": "1999m", "memory": "1023"}}
    assert resource_map(0.0, 0.0) == {"resources": {"cpu": "0", "memory": "0"}}
    assert resource_map(None, 2048.0) == {"resources": {"memory": "2Ki"}}


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        ({"aggregateDurationSeconds": 43201}, "spec.metricCollectPolicy.aggregateDurationSeconds"),
        ({"nodeAggregatePolicy": {"durations": ["5m", "12h1s"]}}, "spec.metricCollectPolicy.nodeAggregatePolicy.durations[1]"),
    ],
)
def test_windows_longer_than_the_kept_history_are_refused(policy: dict[str, Any], field: str) -> None:
    # the history is allocated up front: a mistyped window must not take the agent down
    with pytest.raises(ConfigError) as err:
        MetricCollectPolicy.from_spec({"metricCollectPolicy": policy}, source="nm")
    assert err.value.field == field and "12h" in str(err.value)
    longest = MetricCollectPolicy.from_spec(
        {"metricCollectPolicy": {"aggregateDurationSeconds": 43200, "nodeAggregatePolicy": {"durations": ["12h"]}}})
    assert longest.node_retention_seconds == 43200


def test_a_typed_status_parses_to_the_view_of_its_text() -> None:
    """``typed=True`` hands the pods' views over with the entries: the very view parsing the text gives, whatever
    the numbers (truncated, whole cores, byte multiples, zero, missing) and however the object is copied."""
    policy = MetricCollectPolicy()
    store = UsageStore(policy, interval_seconds=1.0)
    pods = {"u1": PodUsage(0.4999, 100 * 2**20 + 0.7), "u2": PodUsage(2.0, GiB), "u3": PodUsage(0.0, 0.0),
            "u4": PodUsage(None, 3 * 1024.0), "u5": PodUsage(None, None)}
    now = _fill(store, 600, pods=pods)
    metas = [PodMeta.from_pod(_pod(f"p{uid}", "ns", uid)) for uid in pods]
    typed = build_nodemetric_status(store, now, policy, metas, typed=True)
    plain = build_nodemetric_status(store, now, policy, metas)
    assert type(typed["podsMetric"]) is PodsMetric and type(plain["podsMetric"]) is list
    assert typed == plain  # the same API data to every reader
    obj = nodemetric_object("n1", policy)
    typed_view = NodeMetricView.parse({**obj, "status": typed})
    assert typed_view.pods is typed["podsMetric"].pods  # taken as handed over, not parsed
    assert typed_view == NodeMetricView.parse({**obj, "status": plain})
    assert [p.usage for p in typed_view.pods] == [Resources.of(cpu=499, memory=100 * 2**20), Resources.of(cpu=2000, memory=GiB),
                                                  Resources(), Resources.of(memory=3 * 1024)]
    assert typed_view.node_usage is typed["podsMetric"].node_usage[1]  # the node's usage too
    # A copy out of a cluster parses the same.
    cluster = MemoryCluster()
    cluster.create("NodeMetric", obj)
    cluster.write_status("NodeMetric", "n1", typed)
    assert NodeMetricView.parse(cluster.get("NodeMetric", "n1")) == typed_view


@pytest.mark.parametrize("cpu", [None, 0.0, 0.0004, 0.4999, 1.0, 2.0009, 63.99999, 1e14])
@pytest.mark.parametrize("memory", [None, 0.0, 0.9, 1023.9, 1024.0, 100 * 2**20 + 0.7, float(GiB), 2.0**60])
def test_the_handed_over_usage_is_what_its_text_parses_to(cpu: float | None, memory: float | None) -> None:
    """The usage a typed report hands over with ``nodeUsage`` and each pod: the quantities parsing the text gives
    (truncated, whole cores, byte multiples, zeros dropped, beyond a quantity's bounds capped)."""
    texts, usage = reported_quantities(cpu, memory)
    assert {"resources": texts} == resource_map(cpu, memory)
    assert Resources._trusted(usage) == Resources.parse(texts)
    assert all(usage.values())


def test_the_node_usage_is_taken_as_handed_over_only_from_the_map_built_with_it() -> None:
    """Through the in-memory API server: a status merged into the stored one keeps the writer's maps, so the cache's
    parse takes the typed usage; a status whose map was replaced (or a copy) is parsed from its text, and a
    different text gives a different usage."""
    policy = MetricCollectPolicy()
    store = UsageStore(policy, interval_seconds=1.0)
    now = _fill(store, 600, pods={"u1": PodUsage(0.5, GiB)})
    metas = [PodMeta.from_pod(_pod("p1", "ns", "u1"))]
    cluster = MemoryCluster()
    cluster.create("NodeMetric", nodemetric_object("n1", policy))
    seen: list[NodeMetricView] = []
    cluster.informer("NodeMetric", lambda e: seen.append(NodeMetricView.parse(e.object)), shared=True).start()
    for t in (now - 1.0, now):  # the second write merges into a status of the same keys: the maps stay the writer's
        status = build_nodemetric_status(store, t, policy, metas, typed=True)
        cluster.write_status("NodeMetric", "n1", status)
    assert seen[-1].node_usage is status["podsMetric"].node_usage[1]
    assert seen[-1] == NodeMetricView.parse(cluster.get("NodeMetric", "n1"))
    other = build_nodemetric_status(store, now, policy, metas, typed=True)
    other["nodeMetric"]["nodeUsage"] = {"resources": {"cpu": "7", "memory": "1Ki"}}
    view = NodeMetricView.parse({**nodemetric_object("n1", policy), "status": other})
    assert view.node_usage == Resources.of(cpu=7000, memory=1024)
