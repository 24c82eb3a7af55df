"""Running the real Scheduler over HTTP against the kmock emulator.

The emulator itself (resourceVersions, watches, pods/binding, status, Leases) is
:class:`tests.common.test_kube_wire.ApiState`; this module adds what the scheduler tests need on top: a
:class:`KubeCluster` per replica (each with its own instance name, so events and requests say who sent them),
a scheduler whose watch-fed cache has caught up with the server before a session runs (sessions run in a
worker thread, because the emulator serves HTTP on the test's own event loop), and request filters.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import kmock
from kubernetes import client as kclient

from common.clock import SystemClock
from common.cluster.kube import KubeCluster
from scheduler.engine import Scheduler, SessionResult
from tests.common.test_kube_wire import ApiState, eventually, requests_to

__all__ = ["ApiState", "eventually", "requests_to", "kube_cluster", "settle", "run_session", "posts", "patches",
           "events_posted", "stop"]


def kube_cluster(server: Any, *, instance: str) -> KubeCluster:
    """A client of its own (connection pool and all), as a second scheduler replica would have.

    Its clock (used only to stamp and name Events) is the real one even when the scheduler runs on a FakeClock:
    Event names carry the creation time in nanoseconds as kube's recorder does, and two events about one pod in
    the same session would otherwise collide on a clock that does not move.
    """
    cfg = kclient.Configuration(host=str(server.url).rstrip("/"))
    return KubeCluster(kclient.ApiClient(cfg), component="loadwise-scheduler", instance=instance, clock=SystemClock())


def _cache_matches(sched: Scheduler, api: ApiState) -> bool:
    """True once the scheduler's cache holds exactly the server's current version of every watched object."""
    if not sched.cache.has_synced():
        return False
    with sched.cache._lock:
        seen = {kind: {k: str(v.raw["metadata"]["resourceVersion"]) if hasattr(v, "raw")
                       else str(v["metadata"]["resourceVersion"]) for k, v in objs.items()}
                for kind, objs in sched.cache._objects.items()}
    for (_plural, ns, name), obj in list(api.objects.items()):
        kind = obj.get("kind")
        if kind not in seen:
            continue
        key = f"{ns}/{name}" if ns else name
        if seen[kind].get(key) != obj["metadata"]["resourceVersion"]:
            return False
    wanted = {kind: sum(1 for o in api.objects.values() if o.get("kind") == kind) for kind in seen}
    return all(len(seen[kind]) == n for kind, n in wanted.items())


async def settle(sched: Scheduler, api: ApiState, timeout: float = 5.0) -> None:
    """Start the scheduler's informers (once) and wait until its cache mirrors the emulator."""
    sched.start()
    await eventually(lambda: _cache_matches(sched, api), timeout)


async def run_session(sched: Scheduler, api: ApiState) -> SessionResult:
    """One session on a cache that has caught up with the server, run off the event loop."""
    await settle(sched, api)
    return await asyncio.to_thread(sched.run_once)


async def stop(*scheds: Scheduler) -> None:
    for s in scheds:
        await asyncio.to_thread(s.stop)


def posts(server: Any, fragment: str) -> list[kmock.Request]:
    return [r for r in requests_to(server, fragment) if r.method.value.upper() == "POST"]


def patches(server: Any, fragment: str) -> list[kmock.Request]:
    return [r for r in requests_to(server, fragment) if r.method.value.upper() == "PATCH"]


def events_posted(server: Any, reason: str, *, pod: str | None = None,
                  where: Callable[[dict[str, Any]], bool] = lambda body: True) -> list[dict[str, Any]]:
    """Bodies of the events.k8s.io Events created with this reason (optionally about one pod name)."""
    out = []
    for r in posts(server, "/apis/events.k8s.io/v1/"):
        body = dict(r.data)
        if body.get("reason") != reason:
            continue
        if pod is not None and body["regarding"].get("name") != pod:
            continue
        if where(body):
            out.append(body)
    return out
