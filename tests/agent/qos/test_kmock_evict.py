"""Eviction, taint and events over real HTTP (the kube backend against the kmock emulator).

A PodDisruptionBudget refusal (429) is not counted as released, the next pod is tried, and the per-node
rate limit stops a storm.  The emulator reaction below implements exactly what the engine calls.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import kmock
import pytest
from kubernetes import client as kclient
from prometheus_client import CollectorRegistry

from agent.qos.actuate import CONDITION_TYPE, TAINT_KEY, Actuation, ClusterEvictor, NodeScheduling, RecordingActuators
from agent.qos.policy import PolicyStore
from agent.qos.runtime import WaterlineRuntime
from common.clock import FakeClock
from common.cluster import merge_patch
from common.cluster.kube import KubeCluster
from tests.agent.qos.factories import EVICT, T0, node, pod, policy_dict, rule
from tests.common.test_kube_wire import strategic_merge

pytestmark = pytest.mark.kmock


READY = {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": "2024-01-01T00:00:00Z"}


class TickingClock(FakeClock):
    """Event names embed the emit time in ns; distinct reads keep two events on one object apart."""

    def now(self) -> float:
        self.advance(0.001)
        return super().now()


class Api:
    def __init__(self) -> None:
        self.pods = {("default", n): {"metadata": {"name": n, "namespace": "default"}} for n in ("a", "b", "c")}
        self.node: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                                     "spec": {}, "status": {"conditions": [READY]}}
        self.protected = {"default/a"}
        self.evictions: list[tuple[str, int | None, int]] = []  # (pod, grace, HTTP status)
        self.events: list[dict[str, Any]] = []
        self.patches: list[tuple[str, dict[str, Any]]] = []

    async def handle(self, req: kmock.Request) -> Any:
        res = req.resource
        assert res is not None
        method = req.method.value.upper()
        if res.plural == "events" and method == "POST":
            self.events.append(req.data)
            return kmock.Response(status=201, payload=req.data)
        if res.plural == "pods" and req.subresource == "eviction" and method == "POST":
            key = (req.namespace or "", req.name or "")
            grace = (req.data.get("deleteOptions") or {}).get("gracePeriodSeconds")
            if key not in self.pods:
                self.evictions.append((f"{key[0]}/{key[1]}", grace, 404))
                return kmock.Response(status=404, payload={"kind": "Status", "code": 404, "reason": "NotFound",
                                                           "message": f'pods "{key[1]}" not found'})
            if f"{key[0]}/{key[1]}" in self.protected:
                self.evictions.append((f"{key[0]}/{key[1]}", grace, 429))
                return kmock.Response(status=429, payload={
                    "kind": "Status", "code": 429, "reason": "TooManyRequests",
                    "message": "Cannot evict pod as it would violate the pod's disruption budget."})
            del self.pods[key]
            self.evictions.append((f"{key[0]}/{key[1]}", grace, 201))
            return kmock.Response(status=201, payload={"kind": "Status", "status": "Success", "code": 201})
        if res.plural == "nodes" and req.name == "n1":
            if method == "GET":
                return kmock.Response(status=200, payload=self.node)
            if method == "PATCH":
                self.patches.append((req.subresource or "", req.data))
                body = req.data if req.subresource == "status" else {k: v for k, v in req.data.items() if k != "status"}
                strategic = req.headers.get("Content-Type") == "application/strategic-merge-patch+json"
                self.node = (strategic_merge if strategic else merge_patch)(self.node, body)
                return kmock.Response(status=200, payload=self.node)
        return kmock.Response(status=405, payload={"kind": "Status", "code": 405, "message": f"{method} {req.url}"})


@pytest.fixture
def api(kmock: Any) -> Api:
    state = Api()
    for group in ("", "events.k8s.io"):
        kmock[kmock.resource(group=group)] << state.handle
    # the emulator applies PATCHes to its own store before any reaction runs, so it must know the node too
    kmock.objects[kmock.resource(group="", version="v1", plural="nodes"), None, "n1"] = copy.deepcopy(state.node)
    return state


async def test_eviction_over_http_pdb_refusal_not_counted_and_rate_limited(kmock: Any, api: Api) -> None:
    clock = FakeClock(T0)
    kube = KubeCluster(kclient.ApiClient(kclient.Configuration(host=str(kmock.url).rstrip("/"))),
                       component="loadwise-agent", instance="n1", clock=TickingClock(T0))
    store = PolicyStore()
    store.upsert(policy_dict(rule(action=copy.deepcopy(EVICT) | {"eviction": {"terminationGracePeriodSeconds": 3}})))
    registry = CollectorRegistry()
    rt = WaterlineRuntime(kube, "n1", clock,
                          Actuation(RecordingActuators(), ClusterEvictor(kube), NodeScheduling(kube, "n1", clock)),
                          registry=registry, policies=store)
    pods = (pod("a", cpu=3000), pod("b", cpu=800), pod("c", cpu=700))

    # gap (1.1)(7000-6000) = 1100: a is refused by its PDB (no credit), b is accepted (800),
    # then the rate limit (1 per 10 s) stops c for this tick
    r1 = await asyncio.to_thread(rt.tick, node(*pods, cpu=7000, t=T0))
    assert api.evictions == [("default/a", 3, 429), ("default/b", 3, 201)]
    assert [a.pod for a in r1.actions] == ["default/b"]
    assert [(s.pod, s.reason.split(":")[0]) for s in r1.skipped] == [
        ("default/a", "refused"), ("default/c", "per-node eviction rate limit reached")]
    assert ("default", "a") in api.pods and ("default", "b") not in api.pods

    def sample(result: str) -> float | None:
        return registry.get_sample_value("loadwise_agent_waterline_evictions_total",
                                         {"node": "n1", "result": result, "dry_run": "false"})

    assert (sample("accepted"), sample("refused"), sample("rate_limited")) == (1, 1, 1)

    # the node got the soft taint and the condition over HTTP; events were posted
    assert r1.notes == ()
    assert {"key": TAINT_KEY, "effect": "PreferNoSchedule"}.items() <= api.node["spec"]["taints"][0].items()
    # merged by type: the kubelet's Ready is neither sent nor lost
    assert [c["type"] for c in api.node["status"]["conditions"]] == ["Ready", CONDITION_TYPE]
    assert api.node["status"]["conditions"][0] == READY
    status_patches = [body for sub, body in api.patches if sub == "status"]
    assert status_patches and all([c["type"] for c in b["status"]["conditions"]] == [CONDITION_TYPE]
                                  for b in status_patches)
    reasons = [e["reason"] for e in api.events]
    assert "AvoidanceTriggered" in reasons and "WaterlineEviction" in reasons and "SchedulingDisabled" in reasons

    # 10 s later the window has room again: c goes (a is still refused first)
    clock.advance(10)
    r2 = await asyncio.to_thread(rt.tick, node(pods[0], pods[2], cpu=6900, t=T0 + 10))
    assert api.evictions[2:] == [("default/a", 3, 429), ("default/c", 3, 201)]
    assert [a.pod for a in r2.actions] == ["default/c"]
