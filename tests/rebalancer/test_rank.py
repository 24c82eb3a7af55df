"""Which pods may move and in which order, as LowNodeLoad ranks them."""

from __future__ import annotations

from typing import Any

from rebalancer.args import parse_rebalance_args
from rebalancer.rank import rank, removable
from tests.rebalancer.helpers import GI, T0, Cluster, args


def _order(c: Cluster, over: tuple[str, ...] = ("cpu",), **kw: Any) -> list[str]:
    a = parse_rebalance_args(args(**kw))
    snap = c.snapshot()
    pods = [p for p in snap.pods if p.node_name == "n"]
    ranked = rank(removable(pods, snap.node_metrics["n"], a), snap.nodes[0].allocatable, over, a)
    return [r.pod.name for r in ranked]


def _cluster() -> Cluster:
    c = Cluster(cpu=10, memory=32)
    c.node("n")
    return c


def test_priority_class_first_free_batch_mid_prod() -> None:
    c = _cluster()
    c.pod("prod", "n", 3000, priority=9500)
    c.pod("mid", "n", 100, priority=7500)
    c.pod("free", "n", 100, priority=3500)
    c.pod("batch", "n", 100, priority=5500)
    assert _order(c) == ["free", "batch", "mid", "prod"]


def test_then_qos_then_kube_priority() -> None:
    c = _cluster()
    c.pod("ls-high", "n", 100, priority=9900)
    c.pod("ls-low", "n", 100, priority=9100)
    c.pod("lsr", "n", 3000, priority=9000, limits={"cpu": "500m", "memory": "512Mi"})  # Guaranteed: LSR
    assert _order(c) == ["ls-low", "ls-high", "lsr"]


def test_then_biggest_user_of_the_resources_over_threshold() -> None:
    c = _cluster()
    c.pod("cpu-heavy", "n", 3000, 1 * GI)
    c.pod("mem-heavy", "n", 500, 12 * GI)
    assert _order(c, over=("cpu",)) == ["cpu-heavy", "mem-heavy"]
    assert _order(c, over=("memory",)) == ["mem-heavy", "cpu-heavy"]


def test_then_youngest_first() -> None:
    c = _cluster()
    c.pod("old", "n", 1000, created=T0 - 7200)
    c.pod("young", "n", 1000, created=T0 - 60)
    assert _order(c) == ["young", "old"]


def test_pods_no_controller_recreates_gang_members_and_excluded_namespaces_stay() -> None:
    c = _cluster()
    c.pod("bare", "n", 1000, owner="")
    c.pod("daemon", "n", 1000, owner="DaemonSet")
    c.pod("member", "n", 1000, group="g")
    c.pod("system", "n", 1000, namespace="kube-system")
    c.pod("critical", "n", 1000, priority=2_000_000_000)
    c.pod("ok", "n", 1000)
    c.pod("pending", "", 1000)
    assert _order(c, evictableNamespaces={"exclude": ["kube-system"]}) == ["ok"]
    assert _order(c, evictableNamespaces={"include": ["kube-system"]}) == ["system"]


def test_pod_selectors_and_unreported_usage() -> None:
    c = _cluster()
    c.pod("web", "n", 1000, labels={"app": "web"})
    c.pod("db", "n", 1000, labels={"app": "db"})
    c.pod("quiet", "n", 1000, labels={"app": "web"})
    del c.usage["default/quiet"]
    selectors = [{"name": "web", "selector": {"matchLabels": {"app": "web"}}}]
    assert _order(c, podSelectors=selectors) == ["web"]
