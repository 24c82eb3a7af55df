"""A real Prometheus scrapes a standalone agent and the scheduler on localhost.

Both daemons run as subprocesses through the ``loadwise`` command line, exactly as the images run them.
``promtool check metrics`` lints both endpoints; Prometheus (Debian's ``prometheus`` package, installed by
.ci/run) scrapes them every second, and its HTTP API must return a value for the node CPU series and
show both targets up.  Skips (failures in CI) when the binaries are missing.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import kmock
import pytest

from loadwise.cli import SUBCOMMANDS
from tests.deploy.metric_names import exported_families

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
NODE_CPU = "loadwise_agent_node_cpu_usage_cores"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str, timeout: float = 2.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - localhost only
        return bytes(resp.read())


def wait_http(url: str, proc: subprocess.Popen[bytes], deadline: float) -> bytes:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args} exited with {proc.returncode}")
        try:
            return get(url)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    raise AssertionError(f"{url} did not answer in time")


def start(args: list[str], tmp: Path, name: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    with open(tmp / f"{name}.log", "wb") as log:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=tmp, env=env)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class EmulatedApiServer:
    """The kmock emulator with the wire tests' reactions, on its own event loop thread, for a daemon to use."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="kmock", daemon=True)
        self.url = ""

    async def _start(self) -> str:
        from tests.common.test_kube_wire import ApiState

        self.handler = kmock.KubernetesEmulator()
        await self.handler.__aenter__()
        self.server = kmock.Server(self.handler)
        await self.server.__aenter__()
        self.state = ApiState()
        self.state.install(self.handler)
        for i in range(2):
            self.state.seed(
                "Node",
                {
                    "metadata": {"name": f"n{i}"},
                    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
                },
            )
        self.state.seed("Queue", {"metadata": {"name": "default"}, "spec": {"weight": 1}})
        return str(self.server.url).rstrip("/")

    async def _stop(self) -> None:
        self.state.close_watches()  # end the open watch streams, or the server would wait them out
        await self.server.__aexit__(None, None, None)
        await self.handler.__aexit__(None, None, None)

    def __enter__(self) -> EmulatedApiServer:
        self.thread.start()
        self.url = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    def kubeconfig(self, path: Path) -> Path:
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "kmock",
            "clusters": [{"name": "kmock", "cluster": {"server": self.url}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "kmock", "context": {"cluster": "kmock", "user": "u"}}],
        }
        path.write_text(json.dumps(cfg))
        return path


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """``loadwise agent --standalone`` on this machine's real cgroups (one for the module); yields its port."""
    tmp_path = tmp_path_factory.mktemp("agent")
    port = free_port()
    proc = start(
        [sys.executable, "-m", "loadwise", "agent", "--standalone", "--node", "prom-test", "--port", str(port)],
        tmp_path,
        "agent",
    )
    try:
        try:
            wait_http(f"http://127.0.0.1:{port}/metrics", proc, time.monotonic() + 20)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{(tmp_path / 'agent.log').read_text()[-3000:]}") from None
        yield port
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """``loadwise scheduler`` against the emulated API server (one for the module); yields its metrics port."""
    tmp_path = tmp_path_factory.mktemp("scheduler")
    if "scheduler" not in SUBCOMMANDS:
        pytest.skip("`loadwise scheduler` is not a subcommand yet (loadwise/cli.py SUBCOMMANDS)")
    port = free_port()
    with EmulatedApiServer() as api:
        env = dict(os.environ, POD_NAME="prom-test-scheduler", POD_NAMESPACE="loadwise-system")
        proc = start(
            [
                sys.executable,
                "-m",
                "loadwise",
                "scheduler",
                "--kubeconfig",
                str(api.kubeconfig(tmp_path / "kubeconfig")),
                "--port",
                str(port),
            ],
            tmp_path,
            "scheduler",
            env=env,
        )
        try:
            try:
                wait_http(f"http://127.0.0.1:{port}/metrics", proc, time.monotonic() + 20)
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{(tmp_path / 'scheduler.log').read_text()[-3000:]}") from None
            yield port
        finally:
            stop(proc)


def promtool(name: str, port: int) -> None:
    if not Path(PROMTOOL).exists():
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    text = get(f"http://127.0.0.1:{port}/metrics")
    assert text.strip(), f"{name} serves no metrics"
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, timeout=30)
    assert lint.returncode == 0, f"{name}: {lint.stdout.decode()}{lint.stderr.decode()}"


def test_promtool_accepts_the_agent_metrics(agent: int) -> None:
    promtool("agent", agent)


def served_families(port: int) -> set[str]:
    text = get(f"http://127.0.0.1:{port}/metrics").decode()
    return {
        name.removesuffix("_total") if kind == "counter" else name
        for name, kind in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M)
        if not name.endswith("_created")
    }


def test_the_metric_scan_matches_the_live_agent(agent: int) -> None:
    """The families tests/deploy/metric_names.py reads from the code are exactly what the agent serves."""
    assert served_families(agent) == {f.name for f in exported_families() if f.where.startswith("agent/")}


# declared in scheduler/loadaware/freshness.py, but the scheduler daemon never creates or serves them
FRESHNESS = {"loadwise_scheduler_nodemetric_age_seconds", "loadwise_scheduler_nodemetric_expired"}


def test_the_metric_scan_matches_the_live_scheduler(scheduler: int) -> None:
    """... and what the scheduler serves: a family declared but never served would leave dashboards empty."""
    scanned = {f.name for f in exported_families() if f.where.startswith("scheduler/")}
    assert served_families(scheduler) == scanned


def test_the_scheduler_serves_its_nodemetric_freshness_gauges(scheduler: int) -> None:
    assert served_families(scheduler) >= FRESHNESS


def test_scheduler_takes_the_lease_through_the_kube_backend(scheduler: int) -> None:
    """The daemon syncs its informers and wins the Lease over real HTTP (KubeCluster against the emulator)."""
    deadline = time.monotonic() + 30  # lease retries on a loaded 2-core machine
    while b"loadwise_scheduler_leader 1.0" not in get(f"http://127.0.0.1:{scheduler}/metrics"):
        assert time.monotonic() < deadline, "the scheduler never became leader"
        time.sleep(0.2)
    assert get(f"http://127.0.0.1:{scheduler}/readyz") == b"ok"


def test_promtool_accepts_the_scheduler_metrics(scheduler: int) -> None:
    promtool("scheduler", scheduler)


def scrape(targets: dict[str, int], tmp_path: Path, query: str) -> tuple[float, dict[str, str]]:
    """Run Prometheus on ``targets`` until ``query`` has a value; returns it and each job's target health."""
    if not Path(PROMETHEUS).exists():
        pytest.skip("prometheus is not installed (apt-get install prometheus)")
    web = free_port()
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "900ms", "evaluation_interval": "1s"},
        "scrape_configs": [
            {"job_name": name, "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]} for name, port in targets.items()
        ],
    }
    (tmp_path / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    prom = start(
        [
            PROMETHEUS,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{web}",
            "--log.level=warn",
        ],
        tmp_path,
        "prometheus",
    )
    try:
        deadline = time.monotonic() + 25
        wait_http(f"http://127.0.0.1:{web}/-/ready", prom, deadline)
        api = f"http://127.0.0.1:{web}/api/v1"
        while True:
            answer = json.loads(get(f"{api}/query?{urllib.parse.urlencode({'query': query})}"))
            assert answer["status"] == "success"
            targets_now = json.loads(get(f"{api}/targets"))["data"]["activeTargets"]
            health = {t["labels"]["job"]: t["health"] for t in targets_now}
            if answer["data"]["result"] and set(health.values()) == {"up"}:
                return float(answer["data"]["result"][0]["value"][1]), health
            if time.monotonic() > deadline:
                log = (tmp_path / "prometheus.log").read_text()
                raise AssertionError(f"no {query} from healthy targets: {answer} {targets_now}\n{log}")
            time.sleep(0.3)
    finally:
        stop(prom)


@pytest.mark.slow
def test_prometheus_scrapes_agent_and_scheduler(agent: int, scheduler: int, tmp_path: Path) -> None:
    value, health = scrape(
        {"agent": agent, "scheduler": scheduler}, tmp_path, f'{NODE_CPU}{{node="prom-test", job="agent"}}'
    )
    assert 0.0 <= value <= (os.cpu_count() or 1) + 0.5  # busy cores of this machine
    assert health == {"agent": "up", "scheduler": "up"}
