"""The scheduling taint is written conflict-safe: a taint another controller adds between our read and
our write survives (resourceVersion precondition, 409, read again), on the in-memory backend and over
HTTP against the kmock emulator."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as kclient

from agent.qos.actuate import TAINT_KEY, NodeScheduling
from common.clock import FakeClock
from common.cluster import Cluster, Conflict
from common.cluster.kube import KubeCluster
from common.cluster.memory import MemoryCluster
from tests.common.test_kube_wire import ApiState

OTHER = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


class RacingCluster:
    """A cluster whose first Node read is followed at once by another controller's write."""

    def __init__(self, inner: Cluster, race: Callable[[], Any], races: int = 1) -> None:
        self.inner = inner
        self.race = race
        self.races = races

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get(self, kind: str, name: str, *, namespace: str | None = None) -> dict[str, Any]:
        obj = self.inner.get(kind, name, namespace=namespace)
        if kind == "Node" and self.races > 0:
            self.races -= 1
            self.race()
        return obj


def _add_other(cluster: Cluster) -> Callable[[], Any]:
    def race() -> None:
        node = cluster.get("Node", "n1")
        taints = [*((node.get("spec") or {}).get("taints") or []), OTHER]
        cluster.patch("Node", "n1", {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                                     "spec": {"taints": taints}})
    return race


def _keys(cluster: Cluster) -> list[str]:
    return [t["key"] for t in cluster.get("Node", "n1").get("spec", {}).get("taints", [])]


def test_memory_patch_honours_a_resource_version_precondition() -> None:
    cluster = MemoryCluster()
    node = cluster.create("Node", {"metadata": {"name": "n1"}})
    cluster.patch("Node", "n1", {"metadata": {"labels": {"a": "b"}}})
    with pytest.raises(Conflict):
        cluster.patch("Node", "n1", {"metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                                     "spec": {"taints": []}})


def test_a_taint_added_concurrently_survives_ours_on_the_memory_backend() -> None:
    clock = FakeClock()
    inner = MemoryCluster(clock=clock)
    inner.create("Node", {"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "a", "effect": "NoExecute"}]}})
    sched = NodeScheduling(RacingCluster(inner, _add_other(inner)), "n1", clock)  # type: ignore[arg-type]
    assert sched.set_scheduling(False, "busy").ok
    assert _keys(inner) == ["a", OTHER["key"], TAINT_KEY]
    sched.cluster = RacingCluster(inner, lambda: inner.patch("Node", "n1", {"metadata": {"labels": {"x": "y"}}}))
    assert sched.set_scheduling(True, "calm").ok  # removing ours after a conflicting write keeps theirs
    assert _keys(inner) == ["a", OTHER["key"]]


def test_a_writer_that_never_stops_conflicting_fails_the_write_instead_of_clobbering() -> None:
    clock = FakeClock()
    inner = MemoryCluster(clock=clock)
    inner.create("Node", {"metadata": {"name": "n1"}})
    bump = RacingCluster(inner, lambda: inner.patch("Node", "n1", {"metadata": {"labels": {"t": str(clock.now())}}}),
                         races=100)
    res = NodeScheduling(bump, "n1", clock).set_scheduling(False, "busy")  # type: ignore[arg-type]
    assert not res.ok and "409" in res.message
    assert TAINT_KEY not in _keys(inner)


@pytest.mark.kmock
async def test_a_taint_added_concurrently_survives_ours_over_http(kmock: Any) -> None:
    api = ApiState()
    api.install(kmock)
    api.seed("Node", {"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "a", "effect": "NoExecute"}]}})
    clock = FakeClock()
    kube = KubeCluster(kclient.ApiClient(kclient.Configuration(host=str(kmock.url).rstrip("/"))), clock=clock)
    sched = NodeScheduling(RacingCluster(kube, _add_other(kube)), "n1", clock)  # type: ignore[arg-type]
    res = await asyncio.to_thread(sched.set_scheduling, False, "busy")
    assert res.ok, res.message
    stored = api.get("Node", "n1")
    assert stored is not None
    assert [t["key"] for t in stored["spec"]["taints"]] == ["a", OTHER["key"], TAINT_KEY]
    patches = [r for r in kmock if r.method.value.upper() == "PATCH" and r.url.path.endswith("/nodes/n1")]
    assert len(patches) == 3  # theirs, our stale one (409), ours again
    assert all("resourceVersion" in p.data["metadata"] for p in patches)
