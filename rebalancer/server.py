"""The rebalancer daemon's HTTP surface, served like the scheduler's (``scheduler.server.BackgroundServer``).

* ``/metrics`` — Prometheus text format from the rebalancer's registry;
* ``/healthz`` — 200 while the process serves;
* ``/readyz``  — 200 once the informer cache has synced, else 503 ``not synced``.
"""

from __future__ import annotations

import asyncio

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from scheduler.cache import SchedulerCache

from .daemon import RebalancerMetrics

__all__ = ["make_app"]

METRICS_KEY: web.AppKey[RebalancerMetrics] = web.AppKey("metrics", RebalancerMetrics)
CACHE_KEY: web.AppKey[SchedulerCache] = web.AppKey("cache", SchedulerCache)


async def metrics(request: web.Request) -> web.Response:
    body = await asyncio.to_thread(generate_latest, request.app[METRICS_KEY].registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def readyz(request: web.Request) -> web.Response:
    ok = request.app[CACHE_KEY].has_synced()
    return web.Response(text="ok" if ok else "not synced", status=200 if ok else 503)


def make_app(registry: RebalancerMetrics, cache: SchedulerCache) -> web.Application:
    app = web.Application()
    app[METRICS_KEY] = registry
    app[CACHE_KEY] = cache
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app
