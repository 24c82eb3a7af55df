"""The scheduler over real HTTP: ``Scheduler.run_once`` on a :class:`KubeCluster` against the kmock emulator.

Covers the wire behaviour (a pending pod bound through pods/binding, an unschedulable pod's PodScheduled
condition and FailedScheduling event, leader election handing over between two replicas) and the PodGroup /
Queue status write-backs over HTTP.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from common.clock import FakeClock
from common.cluster.kube import KubeCluster
from scheduler.engine import Scheduler
from scheduler.leader import LeaderElector, LeaseConfig
from tests.common.test_kube_wire import fail
from tests.scheduler.factories import T0, conf, node, pod, podgroup, queue
from tests.scheduler.kmock_util import (
    ApiState,
    events_posted,
    eventually,
    kube_cluster,
    patches,
    posts,
    requests_to,
    run_session,
    settle,
    stop,
)

pytestmark = pytest.mark.kmock

FIT = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: noderesources
"""

BATCH = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: proportion
  - name: noderesources
"""


@pytest.fixture
async def api(kmock: Any) -> ApiState:
    state = ApiState()
    state.install(kmock)
    return state


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0 + 60)


def scheduler(cluster: KubeCluster, clock: FakeClock, conf_text: str = FIT) -> Scheduler:
    # no real sleeping between bind retries: the backoff itself is the binder's unit tests' business
    return Scheduler(cluster, conf(conf_text), clock=clock, sleep=lambda s: None)


def pod_condition(api: ApiState, name: str, ns: str = "default") -> dict[str, Any] | None:
    obj = api.get("Pod", name, ns)
    assert obj is not None
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "PodScheduled"), None)


# -- binding --------------------------------------------------------------------------------------------------------
async def test_pending_pod_is_bound_through_pods_binding(kmock: Any, api: ApiState, clock: FakeClock) -> None:
    api.seed("Node", node("small", cpu="1"))
    api.seed("Node", node("big", cpu="4"))
    seeded = api.seed("Pod", pod("web", cpu="2"))
    sched = scheduler(kube_cluster(kmock, instance="sched-0"), clock)
    try:
        res = await run_session(sched, api)
        assert res.placements == {"default/web": "big"} and not res.bind_failures

        (binding,) = posts(kmock, "/api/v1/namespaces/default/pods/web/binding")
        assert binding.data["kind"] == "Binding"
        assert binding.data["target"] == {"apiVersion": "v1", "kind": "Node", "name": "big"}
        assert binding.data["metadata"] == {"name": "web", "namespace": "default", "uid": seeded["metadata"]["uid"]}
        stored = api.get("Pod", "web", "default")
        assert stored is not None and stored["spec"]["nodeName"] == "big"
        (scheduled,) = events_posted(kmock, "Scheduled", pod="web")
        assert scheduled["note"] == "Successfully assigned default/web to big"
        assert scheduled["type"] == "Normal" and scheduled["reportingInstance"] == "sched-0"
        assert scheduled["regarding"]["uid"] == seeded["metadata"]["uid"]
        assert not patches(kmock, "/pods/web/status")  # a bound pod gets no PodScheduled=False

        # the watch confirms the binding and the next session leaves the pod alone
        await eventually(lambda: getattr(sched.cache.pod("default/web"), "node_name", "") == "big")
        again = await run_session(sched, api)
        assert again.placements == {}
        assert len(posts(kmock, "/binding")) == 1
    finally:
        await stop(sched)


async def test_an_assumed_pod_holds_its_node_until_the_watch_confirms(
        kmock: Any, api: ApiState, clock: FakeClock) -> None:
    """The watch is late with the binding (here: it never sends it until told to): the bound pod stays *assumed*
    and keeps its node's resources, however long that takes, so a second pod is not placed on top of it."""
    api.seed("Node", node("a", cpu="2"))
    api.seed("Pod", pod("first", cpu="1500m"))
    sched = scheduler(kube_cluster(kmock, instance="sched-0"), clock)
    original = api._bind

    def unseen_bind(req: Any, key: tuple[str, str, str], cur: dict[str, Any]) -> Any:
        out = original(req, key, cur)
        # drop the MODIFIED event before any watch stream can send it (no await in between)
        api.history = [h for h in api.history if not (h[1] == "pods" and h[2]["object"]["metadata"]["name"] == key[2]
                                                      and h[2]["type"] == "MODIFIED")]
        return out

    api._bind = unseen_bind  # type: ignore[method-assign]
    try:
        assert (await run_session(sched, api)).placements == {"default/first": "a"}
        api.seed("Pod", pod("second", cpu="1500m"))
        await eventually(lambda: sched.cache.pod("default/second") is not None)
        assert sched.cache.pod("default/first").node_name == ""  # type: ignore[union-attr]
        assert sched.cache.assumed() == {"default/first": "a"}
        for _ in range(2):
            res = await asyncio.to_thread(sched.run_once)
            assert res.placements == {"default/second": None}
            assert res.pending_messages["default/second"] == "0/1 nodes are available: 1 Insufficient cpu."
            clock.advance(120)  # a watch outage of minutes (informer backoff, API server restart) changes nothing
        assert len(posts(kmock, "/binding")) == 1

        # the confirmation finally arrives: the assumption is replaced by the pod's own nodeName
        first = api.get("Pod", "first", "default")
        assert first is not None and first["spec"]["nodeName"] == "a"
        api._store("pods", ("pods", "default", "first"), first, "MODIFIED")
        await eventually(lambda: getattr(sched.cache.pod("default/first"), "node_name", "") == "a")
        assert sched.cache.assumed() == {}
        res = await asyncio.to_thread(sched.run_once)
        assert res.placements == {"default/second": None}
    finally:
        await stop(sched)


async def test_binding_retries_server_errors_and_gives_up_on_conflict(
        kmock: Any, api: ApiState, clock: FakeClock) -> None:
    api.seed("Node", node("a", cpu="4"))
    api.seed("Pod", pod("flaky", cpu="1"))
    api.seed("Pod", pod("taken", cpu="1"))
    api.seed("Pod", pod("lost", cpu="1"))
    sched = scheduler(kube_cluster(kmock, instance="sched-0"), clock)
    original = api._bind
    failures = {"flaky": 2}
    lost = {"lost": 1}

    def bind(req: Any, key: tuple[str, str, str], cur: dict[str, Any]) -> Any:
        if failures.get(key[2], 0) > 0:
            failures[key[2]] -= 1
            return fail(500, "InternalError", "etcd timeout")
        out = original(req, key, cur)
        if lost.get(key[2], 0) > 0:  # stored, but the client hears a gateway timeout
            lost[key[2]] -= 1
            return fail(504, "Timeout", "the server was unable to return a response in the time allotted")
        return out

    api._bind = bind  # type: ignore[method-assign]
    try:
        await settle(sched, api)
        # someone else binds "taken" after our cache last heard of it (the watch is blind to this write)
        api.objects[("pods", "default", "taken")]["spec"]["nodeName"] = "a"
        res = await asyncio.to_thread(sched.run_once)
        assert res.placements["default/flaky"] == "a"
        assert len(posts(kmock, "/pods/flaky/binding")) == 3  # two 500s, then the bind
        assert "default/taken" in res.bind_failures and "already assigned" in res.bind_failures["default/taken"]
        assert len(posts(kmock, "/pods/taken/binding")) == 1  # a Conflict is final: never retried
        rejected = events_posted(kmock, "FailedScheduling", pod="taken")
        assert [e["note"] for e in rejected if e["note"].startswith("Binding rejected: ")] == [
            'Binding rejected: pod taken is already assigned to node "a"']
        assert "default/taken" not in sched.cache.assumed()
        # the lost answer: the retry hears "already assigned", which is our own binding, so the pod counts as bound
        assert res.placements["default/lost"] == "a" and "default/lost" not in res.bind_failures
        assert len(posts(kmock, "/pods/lost/binding")) == 2
        assert not [e for e in events_posted(kmock, "FailedScheduling", pod="lost")]
    finally:
        await stop(sched)


# -- unschedulable reporting ----------------------------------------------------------------------------------------
async def test_unschedulable_pod_gets_condition_and_event(kmock: Any, api: ApiState, clock: FakeClock) -> None:
    api.seed("Node", node("a", cpu="2"))
    api.seed("Node", node("b", cpu="2"))
    api.seed("Node", node("gpu", cpu="16", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]))
    api.seed("Pod", pod("huge", cpu="8"))
    sched = scheduler(kube_cluster(kmock, instance="sched-0"), clock)
    # kube's FitError format; the taint wording is kube >= 1.35 (docs/design/kube-scoring.md)
    expected = "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    try:
        res = await run_session(sched, api)
        assert res.placements == {"default/huge": None}
        assert res.pending_messages["default/huge"] == expected
        assert not posts(kmock, "/binding")

        (patch,) = patches(kmock, "/api/v1/namespaces/default/pods/huge/status")
        # only the scheduler's own condition, merged by type on the server
        assert patch.headers["Content-Type"] == "application/strategic-merge-patch+json"
        assert [c["type"] for c in patch.data["status"]["conditions"]] == ["PodScheduled"]
        cond = pod_condition(api, "huge")
        assert cond is not None
        assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", expected)
        assert cond["lastTransitionTime"].endswith("Z")

        (event,) = events_posted(kmock, "FailedScheduling", pod="huge")
        assert (event["type"], event["action"], event["note"]) == ("Warning", "Scheduling", expected)
        assert event["regarding"]["kind"] == "Pod" and event["regarding"]["namespace"] == "default"
        assert event["reportingController"] == "loadwise-scheduler"

        # nothing changed: the next session neither re-patches the same condition nor repeats the event
        again = await run_session(sched, api)
        assert again.pending_messages["default/huge"] == expected
        assert len(patches(kmock, "/pods/huge/status")) == 1
        assert len(posts(kmock, "/apis/events.k8s.io/v1/")) == 1

        # a new node that fits: the pod is bound and its stale condition is not rewritten
        api.seed("Node", node("c", cpu="8"))
        bound = await run_session(sched, api)
        assert bound.placements == {"default/huge": "c"}
        assert len(patches(kmock, "/pods/huge/status")) == 1
    finally:
        await stop(sched)


# -- leader election ------------------------------------------------------------------------------------------------
class Replica:
    """One scheduler process: its own client, cache, elector and scheduling loop (``run_forever``)."""

    def __init__(self, server: Any, identity: str, clock: FakeClock) -> None:
        self.cluster = kube_cluster(server, instance=identity)
        self.elector = LeaderElector(self.cluster, clock, LeaseConfig(identity=identity))
        self.sched = scheduler(self.cluster, clock)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.sched.run_forever, args=(self.stopped,),
                                       kwargs={"period": 0.02, "is_leader": self.elector.is_leader}, daemon=True)

    async def elect(self) -> bool:
        return await asyncio.to_thread(self.elector.try_acquire_or_renew)

    def bound_by(self, server: Any) -> set[str]:
        return {e["regarding"]["name"] for e in events_posted(
            server, "Scheduled", where=lambda b: b["reportingInstance"] == self.elector.config.identity)}


def gauge(r: Replica) -> float:
    """``loadwise_scheduler_leader`` as the replica's scheduling loop last set it."""
    value = r.sched.metrics.registry.get_sample_value("loadwise_scheduler_leader")
    return -1.0 if value is None else value


async def test_leader_election_hands_over_between_two_schedulers(
        kmock: Any, api: ApiState, clock: FakeClock) -> None:
    api.seed("Node", node("a", cpu="8"))
    one, two = Replica(kmock, "sched-1", clock), Replica(kmock, "sched-2", clock)
    for r in (one, two):
        await settle(r.sched, api)
        r.thread.start()

    async def bound(name: str) -> str:
        await eventually(lambda: bool((api.get("Pod", name, "default") or {}).get("spec", {}).get("nodeName")))
        return str(api.get("Pod", name, "default")["spec"]["nodeName"])  # type: ignore[index]

    try:
        assert await one.elect()
        assert not await two.elect()  # the lease is held and fresh
        lease = api.get("Lease", "loadwise-scheduler", "loadwise-system")
        assert lease is not None and lease["spec"]["holderIdentity"] == "sched-1"
        assert lease["spec"]["leaseDurationSeconds"] == 15

        api.seed("Pod", pod("p1", cpu="1"))
        assert await bound("p1") == "a"
        await eventually(lambda: one.bound_by(kmock) == {"p1"})  # the Scheduled event follows the binding
        assert two.bound_by(kmock) == set()
        assert two.sched.sessions == 0  # a follower never even opens a session

        # sched-1 stops renewing (hung, partitioned): past the renew deadline it stops scheduling at once ...
        clock.advance(11)
        assert not one.elector.is_leader()
        await eventually(lambda: gauge(one) == 0)  # its loop has seen it: no session is in flight any more
        sessions = one.sched.sessions
        # ... but sched-2 must wait for the lease itself to expire (15 s after the last renewal)
        assert not await two.elect()
        api.seed("Pod", pod("p2", cpu="1"))
        await asyncio.sleep(0.2)  # several loop periods: nobody may bind p2 now
        assert (api.get("Pod", "p2", "default") or {})["spec"].get("nodeName") is None
        assert two.sched.sessions == 0 and one.sched.sessions == sessions
        clock.advance(5)
        assert await two.elect()
        assert await bound("p2") == "a"
        await eventually(lambda: two.bound_by(kmock) == {"p2"})
        assert one.bound_by(kmock) == {"p1"}
        assert not await one.elect()  # the old leader finds the lease taken and stays a follower
        lease = api.get("Lease", "loadwise-scheduler", "loadwise-system")
        assert lease is not None and lease["spec"]["holderIdentity"] == "sched-2"
        assert lease["spec"]["leaseTransitions"] == 1
        lease_writes = [r for r in requests_to(kmock, "/apis/coordination.k8s.io/v1/namespaces/loadwise-system/leases")
                        if r.method.value.upper() in ("POST", "PUT")]
        assert [r.method.value.upper() for r in lease_writes] == ["POST", "PUT"]

        # a graceful shutdown releases the lease: the other replica takes over without waiting for expiry
        await asyncio.to_thread(two.elector.release)
        assert not two.elector.is_leader()
        await eventually(lambda: gauge(two) == 0)
        assert await one.elect()
        api.seed("Pod", pod("p3", cpu="1"))
        assert await bound("p3") == "a"
        await eventually(lambda: one.bound_by(kmock) == {"p1", "p3"})
        assert two.bound_by(kmock) == {"p2"}
        assert len(posts(kmock, "/binding")) == 3  # every pod bound once, by exactly one replica
        await eventually(lambda: gauge(one) == 1)
        assert gauge(two) == 0
    finally:
        for r in (one, two):
            r.stopped.set()
        for r in (one, two):
            if r.thread.is_alive():
                await asyncio.to_thread(r.thread.join, 5)
        await stop(one.sched, two.sched)


# -- PodGroup and Queue status --------------------------------------------------------------------------------------
async def test_podgroup_and_queue_status_written_back(kmock: Any, api: ApiState, clock: FakeClock) -> None:
    api.seed("Node", node("a", cpu="4", memory="8Gi"))
    api.seed("Queue", queue("team", weight=1))
    api.seed("PodGroup", podgroup("fits", 2, queue="team", phase="Pending"))
    for i in range(2):
        api.seed("Pod", pod(f"fits-{i}", cpu="1", memory="1Gi", group="fits"))
    api.seed("PodGroup", podgroup("toobig", 3, queue="team", phase="Inqueue"))
    for i in range(3):
        api.seed("Pod", pod(f"toobig-{i}", cpu="1500m", memory="1Gi", group="toobig"))
    sched = scheduler(kube_cluster(kmock, instance="sched-0"), clock, BATCH)
    try:
        res = await run_session(sched, api)
        assert sorted(k for k, v in res.placements.items() if v) == ["default/fits-0", "default/fits-1"]
        assert res.podgroup_phases == {"default/fits": "Running", "default/toobig": "Inqueue"}

        fits = api.get("PodGroup", "fits", "default")
        assert fits is not None and fits["status"]["phase"] == "Running"
        assert fits["spec"] == {"minMember": 2, "queue": "team"}  # the status subresource leaves spec alone
        cond = fits["status"]["conditions"][-1]
        assert (cond["type"], cond["status"], cond["reason"]) == ("Scheduled", "True", "tasks in gang are ready to be scheduled")
        assert patches(kmock, "/apis/scheduling.loadwise.io/v1alpha1/namespaces/default/podgroups/fits/status")

        toobig = api.get("PodGroup", "toobig", "default")
        assert toobig is not None and toobig["status"]["phase"] == "Inqueue"
        (unsched,) = [c for c in toobig["status"]["conditions"] if c["type"] == "Unschedulable"]
        assert unsched["status"] == "True" and unsched["reason"] == "NotEnoughResources"
        # as in Volcano the condition counts minMember minus the schedulable tasks (one of the three would fit) and
        # the event counts the pending tasks of the job
        assert unsched["message"].startswith("2/3 tasks in gang unschedulable: ")
        assert unsched["message"].count("tasks in gang unschedulable") == 1
        (warning,) = [e for e in posts(kmock, "/apis/events.k8s.io/v1/namespaces/default/events")
                      if e.data["regarding"]["kind"] == "PodGroup" and e.data["reason"] == "Unschedulable"]
        assert warning.data["regarding"]["name"] == "toobig" and warning.data["type"] == "Warning"
        assert warning.data["note"].startswith("3/3 tasks in gang unschedulable: ")

        team = api.get("Queue", "team", "")
        assert team is not None
        assert team["status"]["allocated"] == {"cpu": "2", "memory": "2Gi", "pods": "2"}
        assert team["status"]["state"] == "Open"
        assert team["status"]["running"] == 1 and team["status"]["inqueue"] == 1
        (qpatch,) = patches(kmock, "/apis/scheduling.loadwise.io/v1alpha1/queues/team/status")
        assert qpatch.headers["Content-Type"] == "application/merge-patch+json"
        assert set(qpatch.data) == {"status"}
    finally:
        await stop(sched)
