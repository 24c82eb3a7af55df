"""The rebalancer daemon's HTTP surface, the scheduler's shared one (``scheduler.server.health_app``).

* ``/metrics`` — Prometheus text format from the rebalancer's registry;
* ``/healthz`` — 200 while the process serves;
* ``/readyz``  — 200 once the informer cache has synced, else 503 ``not synced``.
"""

from __future__ import annotations

from aiohttp import web

from scheduler.cache import SchedulerCache
from scheduler.server import health_app

from .daemon import RebalancerMetrics

__all__ = ["make_app"]


def make_app(registry: RebalancerMetrics, cache: SchedulerCache) -> web.Application:
    return health_app(registry.registry, cache.has_synced)
