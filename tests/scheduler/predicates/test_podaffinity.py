"""InterPodAffinity required terms: affinity, anti-affinity, existing pods' anti-affinity, first-pod rule."""

from __future__ import annotations

from typing import Any

from common.objects import PodView
from scheduler.predicates.podaffinity import (
    AFFINITY_REASON,
    ANTI_AFFINITY_REASON,
    EXISTING_ANTI_AFFINITY_REASON,
    pod_affinity_filter,
)

LABELS = [{"zone": "a"}, {"zone": "a"}, {"zone": "b"}, {}]


def _pod(name: str, labels: dict[str, str], affinity: dict[str, Any] | None = None, ns: str = "default") -> PodView:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if affinity:
        spec["affinity"] = affinity
    return PodView.parse({"metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": spec,
                          "status": {"phase": "Running"}})


def _term(kind: str, app: str, key: str = "zone", **extra: Any) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **extra}]}}


def test_affinity_needs_matching_pod_in_domain() -> None:
    pods = [[_pod("cache", {"app": "cache"})], [], [], []]
    ok, reasons = pod_affinity_filter(_pod("web", {"app": "web"}, _term("podAffinity", "cache")), LABELS, pods)
    assert ok.tolist() == [True, True, False, False]
    assert reasons[2] == AFFINITY_REASON
    other_ns = [[_pod("cache", {"app": "cache"}, ns="other")], [], [], []]
    assert not pod_affinity_filter(_pod("web", {"app": "web"}, _term("podAffinity", "cache")), LABELS,
                                   other_ns)[0].any()
    all_ns = _term("podAffinity", "cache", namespaceSelector={})
    assert pod_affinity_filter(_pod("web", {"app": "web"}, all_ns), LABELS, other_ns)[0].tolist() == [
        True, True, False, False]


def test_first_pod_of_self_affine_group() -> None:
    me = _pod("web-0", {"app": "web"}, _term("podAffinity", "web"))
    assert pod_affinity_filter(me, LABELS, [[], [], [], []])[0].tolist() == [True, True, True, False]


def test_anti_affinity_both_directions() -> None:
    pods = [[_pod("web-0", {"app": "web"})], [], [], []]
    ok, reasons = pod_affinity_filter(_pod("web-1", {"app": "web"}, _term("podAntiAffinity", "web")), LABELS, pods)
    assert ok.tolist() == [False, False, True, True] and reasons[0] == ANTI_AFFINITY_REASON
    guard = [[], [], [_pod("db", {"app": "db"}, _term("podAntiAffinity", "web"))], []]
    ok, reasons = pod_affinity_filter(_pod("web-2", {"app": "web"}), LABELS, guard)
    assert ok.tolist() == [True, True, False, True] and reasons[2] == EXISTING_ANTI_AFFINITY_REASON
