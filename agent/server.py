"""The agent's HTTP surface (aiohttp), on two listeners.

The main one (``listenAddress:port``, scraped by Prometheus and probed by the kubelet):

* ``/metrics``    — Prometheus text format from this agent's own registry;
* ``/healthz``    — 200 while collections keep happening, 503 when the collect loop is stuck;
* ``/readyz``     — 200 once the first collection is done and the informers have synced.

The debug one (``debugAddress:debugPort``, localhost by default, reached with ``kubectl port-forward``): what it
serves names every pod on the node and its usage, which an unauthenticated port open to the pod network must not.

* ``/nodemetric`` — the NodeMetric object the agent would write now (JSON);
* ``/debug/state``— the waterline engine's node snapshot of the last tick (the ``qos-plan --state``
  format), plus the last waterline tick report when the engine runs.

Handlers that touch history or build objects run in a worker thread so a scrape never stalls the
event loop that also serves the probes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from agent.daemon import Agent

__all__ = ["make_app", "make_debug_app", "AGENT_KEY"]

AGENT_KEY: web.AppKey[Agent] = web.AppKey("agent", Agent)


def _agent(request: web.Request) -> Agent:
    return request.app[AGENT_KEY]


async def metrics(request: web.Request) -> web.Response:
    body = await asyncio.to_thread(generate_latest, _agent(request).metrics.registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


async def healthz(request: web.Request) -> web.Response:
    ok, reason = _agent(request).healthy()
    return web.Response(text=reason + "\n", status=200 if ok else 503)


async def readyz(request: web.Request) -> web.Response:
    ok, reason = _agent(request).ready()
    return web.Response(text=reason + "\n", status=200 if ok else 503)


async def nodemetric(request: web.Request) -> web.Response:
    obj = await asyncio.to_thread(_agent(request).nodemetric)
    return web.json_response(obj, dumps=_dumps)


async def debug_state(request: web.Request) -> web.Response:
    agent = _agent(request)
    state = await asyncio.to_thread(agent.node_state)
    if state is None:
        return web.json_response({"error": "no collection yet"}, status=503)
    doc: dict[str, Any] = state.to_json()
    if agent.last_waterline is not None:
        doc["waterline"] = agent.last_waterline.to_json()
    if agent.reporter is not None:
        doc["report"] = {
            "lastSuccess": agent.reporter.last_success,
            "lastError": agent.reporter.last_error,
            "failures": agent.reporter.failures,
            "policyError": agent.reporter.policy_error,
        }
    return web.json_response(doc, dumps=_dumps)


def _dumps(obj: Any) -> str:
    import json

    return json.dumps(obj, indent=2, sort_keys=False)


def make_app(agent: Agent) -> web.Application:
    """The main listener: metrics and probes."""
    app = web.Application()
    app[AGENT_KEY] = agent
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    return app


def make_debug_app(agent: Agent) -> web.Application:
    """The debug listener: the objects and state the agent works on."""
    app = web.Application()
    app[AGENT_KEY] = agent
    app.router.add_get("/nodemetric", nodemetric)
    app.router.add_get("/debug/state", debug_state)
    return app
