"""NodeMetric reporting against MemoryCluster: create-if-missing, the object's spec in force,
retries with backoff after injected failures, complete windows in the report that lands."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from agent.nodemetric import MetricCollectPolicy, PodUsage, UsageSample, UsageStore, build_nodemetric_status
from agent.reporter import NodeMetricReporter, TokenBucket
from common.clock import FakeClock
from common.cluster import ApiError
from common.cluster.memory import MemoryCluster
from common.objects import NodeMetricView


class FlakyCluster:
    """MemoryCluster whose next ``fail`` status patches raise a 500 (an API server having a bad minute)."""

    def __init__(self, inner: MemoryCluster, fail: int = 0) -> None:
        self.inner = inner
        self.fail = fail
        self.patches = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def patch_status(self, kind: str, name: str, patch: Mapping[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        self.patches += 1
        if self.fail > 0:
            self.fail -= 1
            raise ApiError("etcdserver: request timed out", status=500)
        return self.inner.patch_status(kind, name, patch, namespace=namespace)


def _setup(fail: int = 0, **kw: Any) -> tuple[FakeClock, FlakyCluster, UsageStore, NodeMetricReporter]:
    clock = FakeClock(1_700_000_000.0)
    cluster = FlakyCluster(MemoryCluster(clock=clock), fail)
    store = UsageStore(MetricCollectPolicy(), 1.0)
    reporter = NodeMetricReporter(cluster, "n1", clock, MetricCollectPolicy(), **kw)  # type: ignore[arg-type]
    return clock, cluster, store, reporter


def _tick(clock: FakeClock, store: UsageStore, seconds: int, cpu: float = 1.0) -> None:
    for _ in range(seconds):
        clock.advance(1)
        store.record(clock.now(), UsageSample(node_cpu_cores=cpu, node_memory_bytes=2**30, pods={"u": PodUsage(0.5, 1.0)}))


def _builder(clock: FakeClock, store: UsageStore) -> Any:
    def build(policy: MetricCollectPolicy) -> dict[str, Any]:
        store.set_policy(policy)
        return build_nodemetric_status(store, clock.now(), policy, [])

    return build


def test_creates_the_nodemetric_when_missing_then_patches_status_on_schedule() -> None:
    clock, cluster, store, reporter = _setup()
    _tick(clock, store, 5)
    assert reporter.due()
    out = reporter.report(_builder(clock, store))
    assert out.ok and out.created
    obj = cluster.inner.get("NodeMetric", "n1")
    assert obj["spec"] == MetricCollectPolicy().to_spec()
    assert NodeMetricView.parse(obj).node_usage["cpu"] == 1000
    assert obj["status"]["updateTime"] == "2023-11-14T22:13:25Z"
    assert out.next_due == clock.now() + 60 and not reporter.due()
    _tick(clock, store, 59)
    assert not reporter.due()
    _tick(clock, store, 1, cpu=3.0)
    assert reporter.due()
    second = reporter.report(_builder(clock, store))
    assert second.ok and not second.created
    assert cluster.inner.get("NodeMetric", "n1")["status"]["updateTime"] == "2023-11-14T22:14:25Z"


def test_an_existing_nodemetric_keeps_its_spec_and_the_agent_follows_it() -> None:
    clock, cluster, store, reporter = _setup()
    spec = {"metricCollectPolicy": {"reportIntervalSeconds": 120, "aggregateDurationSeconds": 60,
                                    "nodeAggregatePolicy": {"durations": ["1m", "2m"]}}}
    cluster.inner.create("NodeMetric", {"metadata": {"name": "n1"}, "spec": spec})
    _tick(clock, store, 130)
    out = reporter.report(_builder(clock, store))
    assert out.ok and not out.created
    assert out.next_due == clock.now() + 120
    status = cluster.inner.get("NodeMetric", "n1")["status"]
    assert [a["duration"] for a in status["nodeMetric"]["aggregatedNodeUsages"]] == ["1m0s", "2m0s"]
    assert cluster.inner.get("NodeMetric", "n1")["spec"] == spec
    # A later, invalid spec is refused: the last good policy keeps running and the error is kept.
    cluster.inner.patch("NodeMetric", "n1", {"spec": {"metricCollectPolicy": {"reportIntervalSeconds": "soon"}}})
    clock.advance(120)
    assert reporter.report(_builder(clock, store)).ok
    assert reporter.policy.report_interval_seconds == 120
    assert "spec.metricCollectPolicy.reportIntervalSeconds" in reporter.policy_error
    # A window longer than the history the agent keeps (allocated up front) is refused the same way.
    cluster.inner.patch("NodeMetric", "n1", {"spec": {"metricCollectPolicy": {
        "reportIntervalSeconds": 120, "nodeAggregatePolicy": {"durations": ["1m", "1000000h"]}}}})
    clock.advance(120)
    assert reporter.report(_builder(clock, store)).ok
    assert reporter.policy.durations == (60.0, 120.0)
    assert "spec.metricCollectPolicy.nodeAggregatePolicy.durations[1]: must be at most 12h" in reporter.policy_error


def test_failed_reports_retry_with_doubling_backoff_and_then_carry_complete_windows() -> None:
    clock, cluster, store, reporter = _setup(fail=4, qps=100.0, burst=100)
    _tick(clock, store, 1800)
    delays = []
    for _ in range(4):
        out = reporter.report(_builder(clock, store))
        assert not out.ok and "timed out" in out.error
        delays.append(out.next_due - clock.now())
        clock.advance(out.next_due - clock.now())
        store.record(clock.now(), UsageSample(node_cpu_cores=1.0, node_memory_bytes=2**30))
    assert delays == [1.0, 2.0, 4.0, 8.0]
    assert reporter.failures == 4
    out = reporter.report(_builder(clock, store))
    assert out.ok and reporter.failures == 0
    view = NodeMetricView.parse(cluster.inner.get("NodeMetric", "n1"))
    # Nothing was lost while the API server failed: every window is complete and current.
    assert set(view.aggregated) == {300.0, 600.0, 1800.0}
    assert all(set(v) == {"avg", "p50", "p90", "p95", "p99"} for v in view.aggregated.values())
    assert view.update_time == clock.now() // 1


def test_backoff_is_capped_by_the_maximum_and_the_report_interval() -> None:
    clock, cluster, store, reporter = _setup(fail=100, qps=100.0, burst=100, retry_initial_seconds=1, retry_max_seconds=45)
    _tick(clock, store, 3)
    delays = []
    for _ in range(8):
        out = reporter.report(_builder(clock, store))
        delays.append(out.next_due - clock.now())
        clock.advance(delays[-1])
    assert delays == [1, 2, 4, 8, 16, 32, 45, 45]
    clock2, cluster2, store2, capped = _setup(fail=100, qps=100.0, burst=100, retry_max_seconds=300)
    gaps = []
    for _ in range(8):
        out = capped.report(_builder(clock2, store2))
        gaps.append(out.next_due - clock2.now())
        clock2.advance(gaps[-1])
    assert gaps[-2:] == [60, 60]  # never later than the next regular report


def test_rate_limit_like_koordlet_client() -> None:
    clock, cluster, store, reporter = _setup(fail=100)
    _tick(clock, store, 2)
    assert not reporter.report(_builder(clock, store)).ok  # token 1
    clock.advance(1)
    assert not reporter.report(_builder(clock, store)).ok  # token 2
    clock.advance(2)
    limited = reporter.report(_builder(clock, store))
    assert limited.error == "rate limited" and cluster.patches == 2
    assert limited.next_due == pytest.approx(clock.now() + 7.0)  # one token per 10 s
    bucket = TokenBucket(0.1, 2, 0.0)
    assert bucket.take(0.0) and bucket.take(0.0) and not bucket.take(5.0) and bucket.take(10.0)


def test_a_deleted_nodemetric_is_recreated_on_the_retry() -> None:
    clock, cluster, store, reporter = _setup(qps=100.0, burst=100)
    _tick(clock, store, 3)
    assert reporter.report(_builder(clock, store)).ok
    cluster.inner.delete("NodeMetric", "n1")
    clock.advance(60)
    failed = reporter.report(_builder(clock, store))
    assert not failed.ok and "not found" in failed.error
    clock.advance(1)
    again = reporter.report(_builder(clock, store))
    assert again.ok and again.created
    assert cluster.inner.get("NodeMetric", "n1")["status"]["nodeMetric"]["nodeUsage"]["resources"]["cpu"] == "1"


def test_jitter_spreads_reports_within_the_fraction() -> None:
    import random

    clock, cluster, store, reporter = _setup(jitter_fraction=0.1, rng=random.Random(3), qps=100.0, burst=100)
    _tick(clock, store, 3)
    gaps = []
    for _ in range(20):
        out = reporter.report(_builder(clock, store))
        gaps.append(out.next_due - clock.now())
        clock.advance(gaps[-1])
    assert all(54 <= g <= 66 for g in gaps) and len(set(gaps)) > 10


def test_values_that_can_no_longer_be_measured_are_removed_not_left_stale() -> None:
    clock, cluster, store, reporter = _setup(qps=100.0, burst=100)
    _tick(clock, store, 5)
    assert reporter.report(_builder(clock, store)).ok
    usage = cluster.inner.get("NodeMetric", "n1")["status"]["nodeMetric"]["nodeUsage"]["resources"]
    assert set(usage) == {"cpu", "memory"}
    # /proc/meminfo becomes unreadable: only cpu is sampled from now on.
    for _ in range(400):
        clock.advance(1)
        store.record(clock.now(), UsageSample(node_cpu_cores=2.0))
    clock.advance(60)
    assert reporter.report(_builder(clock, store)).ok
    usage = cluster.inner.get("NodeMetric", "n1")["status"]["nodeMetric"]["nodeUsage"]["resources"]
    assert usage == {"cpu": "2"}


def test_clear_missing_builds_an_exact_merge_patch() -> None:
    from agent.reporter import clear_missing
    from common.cluster import merge_patch

    old = {"a": {"b": 1, "c": 2}, "d": [1], "e": 3}
    new = {"a": {"b": 5}, "d": [2]}
    patch = clear_missing(old, new)
    assert patch == {"a": {"b": 5, "c": None}, "d": [2], "e": None}
    assert merge_patch(old, patch) == new
