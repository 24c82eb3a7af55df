"""The scheduler daemon's HTTP surface, on aiohttp like the agent's.

* ``/metrics`` — Prometheus text format from the scheduler's registry;
* ``/healthz`` — 200 while the process serves;
* ``/readyz``  — 200 once the daemon is started and the cache has synced, else 503 ``not synced``.

The scheduler's own loop is synchronous, so :class:`BackgroundServer` runs the application on an event loop of
its own in a daemon thread; a port that cannot be bound fails in :meth:`BackgroundServer.start`, before the daemon
starts scheduling.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from scheduler.engine import Scheduler

__all__ = ["health_app", "make_app", "BackgroundServer"]

Readiness = Callable[[], bool]
REGISTRY_KEY: web.AppKey[CollectorRegistry] = web.AppKey("registry", CollectorRegistry)
READY_KEY: web.AppKey[Readiness] = web.AppKey("ready")


async def metrics(request: web.Request) -> web.Response:
    body = await asyncio.to_thread(generate_latest, request.app[REGISTRY_KEY])
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def readyz(request: web.Request) -> web.Response:
    ok = request.app[READY_KEY]()
    return web.Response(text="ok" if ok else "not synced", status=200 if ok else 503)


def health_app(registry: CollectorRegistry, ready: Readiness) -> web.Application:
    """``/metrics`` from ``registry``, ``/healthz``, and ``/readyz`` answering ``ready()``: the surface the
    scheduler and the rebalancer daemons share."""
    app = web.Application()
    app[REGISTRY_KEY] = registry
    app[READY_KEY] = ready
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app


def make_app(sched: Scheduler, ready: threading.Event) -> web.Application:
    """``ready`` is set by the daemon once it has started the scheduler."""
    return health_app(sched.metrics.registry, lambda: ready.is_set() and sched.cache.has_synced())


class BackgroundServer:
    """An aiohttp application served from its own event loop on a daemon thread."""

    def __init__(self, app: web.Application, host: str, port: int) -> None:
        self._runner = web.AppRunner(app, access_log=None)
        self._host, self._port = host, port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="http", daemon=True)

    def start(self) -> None:
        """Bind and start serving; raises ``OSError`` when the address cannot be bound."""
        try:
            self._loop.run_until_complete(self._runner.setup())
            self._loop.run_until_complete(web.TCPSite(self._runner, self._host, self._port).start())
        except BaseException:
            self._loop.run_until_complete(self._runner.cleanup())
            self._loop.close()
            raise
        self._thread.start()

    @property
    def port(self) -> int:
        """The bound port (useful when started on port 0)."""
        return int(self._runner.addresses[0][1])

    def stop(self, timeout: float = 5.0) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        self._loop.close()
