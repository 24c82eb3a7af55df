"""The scheduler daemon's HTTP surface: /metrics, /healthz, /readyz on aiohttp, in process and as the real daemon."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from aiohttp.test_utils import TestClient, TestServer

from common.clock import FakeClock
from common.cluster.memory import MemoryCluster
from scheduler.conf import default_conf
from scheduler.engine import Scheduler
from scheduler.server import BackgroundServer, make_app


def _scheduler() -> Scheduler:
    return Scheduler(MemoryCluster(), default_conf(), clock=FakeClock(1_700_000_000.0))


async def test_endpoints() -> None:
    sched, ready = _scheduler(), threading.Event()
    client = TestClient(TestServer(make_app(sched, ready)))
    await client.start_server()
    try:
        assert (await client.get("/healthz")).status == 200
        resp = await client.get("/readyz")
        assert (resp.status, await resp.text()) == (503, "not synced")
        sched.start()
        assert (await client.get("/readyz")).status == 503  # started, but the daemon has not said ready
        ready.set()
        resp = await client.get("/readyz")
        assert (resp.status, await resp.text()) == (200, "ok")
        sched.run_once()
        resp = await client.get("/metrics")
        assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/plain")
        assert "loadwise_scheduler_" in await resp.text()
        assert (await client.get("/nothing")).status == 404
    finally:
        await client.close()
        sched.stop()


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_background_server_serves_and_stops() -> None:
    server = BackgroundServer(make_app(_scheduler(), threading.Event()), "127.0.0.1", 0)
    server.start()
    url = f"http://127.0.0.1:{server.port}"
    assert _get(url + "/healthz") == (200, "ok")
    assert _get(url + "/readyz") == (503, "not synced")
    server.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(url + "/healthz", timeout=2)


def test_background_server_refuses_a_taken_port() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        server = BackgroundServer(make_app(_scheduler(), threading.Event()), "127.0.0.1", taken.getsockname()[1])
        with pytest.raises(OSError):
            server.start()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_daemon_serves_until_sigterm() -> None:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "loadwise", "scheduler", "--memory", "--listen", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        status = 0
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                status, _ = _get(f"http://127.0.0.1:{port}/readyz")
            except OSError:
                status = 0
            if status == 200:
                break
            time.sleep(0.1)
        assert status == 200, proc.stderr.read() if proc.poll() is not None else "not ready in 30 s"
        status, text = _get(f"http://127.0.0.1:{port}/metrics")
        assert status == 200 and "loadwise_scheduler_session_duration_seconds" in text
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_daemon_reports_a_taken_port() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        proc = subprocess.run([sys.executable, "-m", "loadwise", "scheduler", "--memory", "--listen", "127.0.0.1",
                               "--port", str(taken.getsockname()[1])], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "cannot listen on 127.0.0.1:" in proc.stderr
