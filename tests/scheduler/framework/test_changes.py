"""The cache's change log: what changed between two snapshots, by kind and key."""

from __future__ import annotations

import pytest

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from scheduler.cache import SchedulerCache
from scheduler.framework.changes import ChangeLog
from tests.scheduler.factories import T0, node, pod


def test_between_names_each_key_once_and_whether_it_left() -> None:
    log = ChangeLog()
    log.note("Pod", "a")
    log.note("Pod", "b", removed=True)
    log.note("Pod", "b")
    log.note("Node", "n0")
    assert log.generation == 4
    assert log.between(0, 4) == {"Pod": {"a": False, "b": True}, "Node": {"n0": False}}
    assert log.between(2, 3) == {"Pod": {"b": False}}
    assert log.between(4, 4) == {}


def test_a_log_that_no_longer_reaches_back_says_so() -> None:
    log = ChangeLog(limit=4)
    for i in range(9):
        log.note("Pod", f"p{i}")
    assert log.between(0, 9) is None
    assert log.between(7, 9) == {"Pod": {"p7": False, "p8": False}}
    assert log.between(3, 12) is None   # not there yet
    with pytest.raises(ValueError, match="limit"):
        ChangeLog(limit=1)


def test_the_cache_notes_every_event_and_assumed_binding() -> None:
    clock = FakeClock(T0)
    cluster = MemoryCluster(clock=clock)
    cluster.load([node("n0"), pod("p0", cpu="100m")])
    cache = SchedulerCache(cluster, clock)
    cache.start()
    first = cache.snapshot()
    assert first.pod_by_key is not None and list(first.pod_by_key) == ["default/p0"]
    cache.assume("default/p0", "n0")
    second = cache.snapshot()
    assert second.changes is cache.changes
    assert cache.changes.between(first.generation, second.generation) == {"Pod": {"default/p0": False}}
    # an assumed pod is the same view in every snapshot while nothing changes it
    assert cache.snapshot().pods[0] is second.pods[0] and second.pods[0].node_name == "n0"
    cluster.delete("Pod", "p0", namespace="default")
    third = cache.snapshot()
    assert cache.changes.between(second.generation, third.generation) == {"Pod": {"default/p0": True}}
    assert third.pods == []


def test_snapshots_show_node_and_metric_changes_in_fresh_containers() -> None:
    """Nodes and NodeMetrics are derived again only when one changed, and each snapshot gets its own containers."""
    clock = FakeClock(T0)
    cluster = MemoryCluster(clock=clock)
    cluster.load([node("n1"), node("n0")])
    cache = SchedulerCache(cluster, clock)
    cache.start()
    first = cache.snapshot()
    assert [n.name for n in first.nodes] == ["n0", "n1"] and first.node_metrics == {}
    first.nodes.clear()
    second = cache.snapshot()
    assert [n.name for n in second.nodes] == ["n0", "n1"]
    cluster.replace("Node", node("n1", cpu="8"))
    cluster.create("Node", node("a"))
    cluster.create("NodeMetric", {"apiVersion": "slo.loadwise.io/v1alpha1", "kind": "NodeMetric",
                                  "metadata": {"name": "n0"}, "status": {}})
    third = cache.snapshot()
    assert [n.name for n in third.nodes] == ["a", "n0", "n1"]
    assert third.nodes[2].allocatable["cpu"] == 8000
    assert list(third.node_metrics) == ["n0"]
