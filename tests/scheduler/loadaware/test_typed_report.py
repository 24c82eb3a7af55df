"""The load-aware cache reads a NodeMetric the simulator's agents hand over typed exactly as it reads the same
status as plain API data: node usage, the pods' usage, the prod pods and the system usage."""

from __future__ import annotations

from agent.nodemetric import (
    MetricCollectPolicy,
    PodMeta,
    PodUsage,
    UsageSample,
    UsageStore,
    build_nodemetric_status,
    nodemetric_object,
)
from common.cluster.memory import MemoryCluster
from common.objects import NodeMetricView, ReportedPods
from scheduler.loadaware.args import LoadAwareArgs
from scheduler.loadaware.cache import metric_load

GiB = 2**30


def test_typed_and_plain_reports_give_the_same_metric_load() -> None:
    policy = MetricCollectPolicy()
    store = UsageStore(policy, interval_seconds=60.0)
    pods = {"u1": PodUsage(0.4999, 100 * 2**20 + 0.7), "u2": PodUsage(2.0, GiB), "u3": PodUsage(0.0, 0.0),
            "u4": PodUsage(None, 3 * 1024.0)}
    metas = [PodMeta("ns", "prod-a", "u1", "koord-prod", "LS"), PodMeta("ns", "batch-b", "u2", "koord-batch", "BE"),
             PodMeta("other", "idle", "u3", "koord-prod", "LS"), PodMeta("ns", "mem-only", "u4", "koord-mid", "")]
    for k in range(11):
        store.record(60.0 * k, UsageSample(7.25 + 0.001 * k, 12 * GiB + 0.5, pods=pods))
    now = 600.0
    cluster = MemoryCluster()
    cluster.create("NodeMetric", nodemetric_object("n1", policy))
    for t in (now - 60.0, now):  # the second write keeps the writer's maps: the cache takes the typed views
        typed = build_nodemetric_status(store, t, policy, metas, typed=True)
        cluster.write_status("NodeMetric", "n1", typed)
    plain = build_nodemetric_status(store, now, policy, metas)
    stored = cluster.get("NodeMetric", "n1")
    typed_view = NodeMetricView.parse({**stored, "status": typed})
    plain_view = NodeMetricView.parse({**stored, "status": plain})
    assert typed_view.node_usage is typed["podsMetric"].node_usage[1]
    three = LoadAwareArgs(resource_weights={"cpu": 1, "memory": 1, "ephemeral-storage": 1})
    for args in (LoadAwareArgs(), LoadAwareArgs(prod_usage_include_sys=True), three):
        assert metric_load(typed_view, args) == metric_load(plain_view, args)
        assert metric_load(typed_view, args) == metric_load(NodeMetricView.parse(stored), args)
    # the pods were read as handed over: no view made until asked for, then the parsed ones
    assert type(typed_view.pods) is ReportedPods and typed_view.pods._views is None
    assert typed_view == plain_view and hash(typed_view.pods) == hash(plain_view.pods)
    assert typed_view.pods == plain_view.pods and list(typed_view.pods) == list(plain_view.pods)
    assert typed_view.pods[1] == plain_view.pods[1] and len(typed_view.pods) == len(plain_view.pods) == 4
