"""The real agent daemon's CPU and memory at N pods (prints figures; asserts nothing).

What runs: ``loadwise agent --standalone`` as its own process, on this machine's /proc and on pod
cgroups this script creates (default 200 pods, 1-2 containers each, cgroupfs layout, under a private
parent directory ``loadwise-bench-<pid>`` in the writable cgroup v1 hierarchies cpuacct, cpu and
memory).  Where those hierarchies are not writable (not root, no v1) the same tree is written as
plain files in a temporary directory instead, and the output says so: a fixture tree costs less
to read than cgroupfs, so its figures flatter the agent.

While the daemon runs, this script scrapes ``/metrics`` every 15 s and ``/nodemetric`` (on the debug
port) every 60 s, as Prometheus and a curious operator would.  After a warm-up it reads the daemon's utime+stime
from ``/proc/PID/stat`` at the start and end of the measured window and VmRSS/VmHWM from
``/proc/PID/status`` at the end.  CPU in millicores = CPU seconds / wall seconds * 1000.  The
cgroups are removed afterwards, also on failure or Ctrl-C.  Targets: <= 20 millicores and <= 80 MiB
at 200 pods; what comparable agents budget and use: docs/design/performance.md §2.

Usage: .venv/bin/python benchmarks/agent_overhead.py [--pods 200] [--seconds 180] [--json]
       [--fixture] [--config FILE]   (as root for real cgroups; time it under the shared lock)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

TARGET_MILLI = 20.0
TARGET_RSS_MIB = 80.0
HIERARCHIES = ("cpuacct", "cpu", "memory")
TIERS = ("", "burstable", "besteffort")  # Guaranteed pods sit in kubepods itself
WARMUP_SECONDS = 20.0
METRICS_EVERY = 15.0
NODEMETRIC_EVERY = 60.0


def _uid(i: int) -> str:
    return f"00000000-0000-4000-8000-{i:012d}"


def _pod_rels(pods: int) -> list[str]:
    """Every pod and container directory, parents before children (cgroupfs driver names)."""
    rels = ["kubepods", "kubepods/burstable", "kubepods/besteffort"]
    for i in range(pods):
        tier = TIERS[i % 3]
        pod = f"kubepods/{tier}/pod{_uid(i)}" if tier else f"kubepods/pod{_uid(i)}"
        rels.append(pod)
        rels.append(f"{pod}/{i:060d}a1b2")  # the app container
        if i % 2 == 0:
            rels.append(f"{pod}/{i:060d}ffff")  # every other pod has a sidecar
    return rels


@dataclass
class Tree:
    """Where the pod cgroups are: a cgroup root and the private parent under it."""

    root: str
    parent: str
    kind: str  # "cgroupfs v1" or "fixture (reason)"
    made: list[Path]


def _real_tree(pods: int) -> Tree:
    root = Path("/sys/fs/cgroup")
    parent = f"loadwise-bench-{os.getpid()}"
    made: list[Path] = []
    tree = Tree(str(root), parent, "cgroupfs v1 (real cgroups)", made)
    try:
        for h in HIERARCHIES:
            for rel in [""] + _pod_rels(pods):
                p = root / h / parent / rel
                p.mkdir()
                made.append(p)
    except OSError:
        _remove(tree)
        raise
    return tree


def _fixture_tree(pods: int, reason: str) -> Tree:
    root = Path(tempfile.mkdtemp(prefix="loadwise-bench-"))
    files = {
        "cpuacct": {"cpuacct.usage": "123456789\n"},
        "cpu": {"cpu.cfs_quota_us": "-1\n", "cpu.cfs_period_us": "100000\n"},
        "memory": {
            "memory.stat": "".join(f"total_{k} {v}\n" for k, v in (("inactive_anon", 1 << 20), ("active_anon", 4 << 20),
                                                                    ("inactive_file", 1 << 20), ("active_file", 1 << 20),
                                                                    ("unevictable", 0))),
            "memory.usage_in_bytes": f"{8 << 20}\n",
        },
    }
    for h in HIERARCHIES:
        for rel in [""] + _pod_rels(pods):
            d = root / h / "bench" / rel
            d.mkdir(parents=True, exist_ok=True)
            for name, text in files[h].items():
                (d / name).write_text(text)
    return Tree(str(root), "bench", f"fixture files in {root} ({reason}): cheaper than cgroupfs", [root])


def _remove(tree: Tree) -> None:
    if tree.kind.startswith("fixture"):
        shutil.rmtree(tree.made[0], ignore_errors=True)
        return
    for p in reversed(tree.made):
        try:
            p.rmdir()
        except OSError as exc:
            print(f"warning: could not remove {p}: {exc.strerror}", file=sys.stderr)


@contextmanager
def pod_tree(pods: int, force_fixture: bool) -> Iterator[Tree]:
    """Real pod cgroups when the v1 hierarchies are writable, a fixture tree otherwise; removed after."""
    if force_fixture:
        tree = _fixture_tree(pods, "--fixture")
    else:
        try:
            tree = _real_tree(pods)
        except OSError as exc:
            tree = _fixture_tree(pods, f"cgroups not writable: {exc.strerror} on {exc.filename}")
    try:
        yield tree
    finally:
        _remove(tree)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(port: int, path: str) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return bytes(r.read())


def _cpu_seconds(pid: int) -> tuple[float, float]:
    """(utime, stime) of a process in seconds, from /proc/PID/stat."""
    data = Path(f"/proc/{pid}/stat").read_text()
    fields = data.rsplit(")", 1)[1].split()  # the command name may contain spaces
    hz = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / hz, int(fields[12]) / hz


def _status_kib(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM", "Threads"):
            out[key] = int(rest.split()[0])
    return out


@dataclass
class Result:
    pods: int
    containers: int
    tree: str
    seconds: float
    cpu_seconds: float
    user_seconds: float
    system_seconds: float
    millicores: float
    rss_mib: float
    hwm_mib: float
    threads: int
    metrics_scrapes: int
    nodemetric_reads: int
    pods_in_nodemetric: int
    metrics_bytes: int
    cpu_target_met: bool
    rss_target_met: bool


def _wait_ready(proc: subprocess.Popen[bytes], port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the agent exited with status {proc.returncode} before it was ready")
        try:
            _get(port, "/readyz")
            return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the agent was not ready within {timeout:.0f} s")


def _write_config(tree: Tree, directory: str, extra: str | None, debug_port: int) -> str:
    doc: dict[str, Any] = {
        "cgroupRoot": tree.root,
        "cgroupParent": tree.parent,
        "cgroupVersion": "v1",
        "cgroupDriver": "cgroupfs",
        "listenAddress": "127.0.0.1",
        "debugAddress": "127.0.0.1",
        "debugPort": debug_port,
    }
    if extra:
        with open(extra) as f:
            doc.update(json.load(f))
    path = os.path.join(directory, "agent.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def _measure(proc: subprocess.Popen[bytes], port: int, debug_port: int, seconds: float) -> dict[str, Any]:
    """Scrape on schedule for ``seconds`` after the warm-up; the daemon's CPU over that window."""
    time.sleep(WARMUP_SECONDS)
    u0, s0 = _cpu_seconds(proc.pid)
    t0 = time.monotonic()
    scrapes = reads = in_nodemetric = metrics_bytes = 0
    next_metrics = next_nodemetric = t0
    while (now := time.monotonic()) < t0 + seconds:
        if proc.poll() is not None:
            raise RuntimeError(f"the agent exited with status {proc.returncode} during the run")
        if now >= next_metrics:
            metrics_bytes = len(_get(port, "/metrics"))
            scrapes += 1
            next_metrics += METRICS_EVERY
        if now >= next_nodemetric:
            nm = json.loads(_get(debug_port, "/nodemetric"))  # served on the debug port
            in_nodemetric = len(nm.get("status", {}).get("podsMetric") or [])
            reads += 1
            next_nodemetric += NODEMETRIC_EVERY
        time.sleep(max(0.0, min(next_metrics, next_nodemetric, t0 + seconds) - time.monotonic()))
    u1, s1 = _cpu_seconds(proc.pid)
    wall = time.monotonic() - t0
    status = _status_kib(proc.pid)
    return {"seconds": wall, "user": u1 - u0, "system": s1 - s0, "status": status, "scrapes": scrapes,
            "reads": reads, "in_nodemetric": in_nodemetric, "metrics_bytes": metrics_bytes}


def run(pods: int, seconds: float, force_fixture: bool, extra_config: str | None) -> Result:
    with pod_tree(pods, force_fixture) as tree, tempfile.TemporaryDirectory(prefix="loadwise-bench-") as tmp:
        port, debug_port = _free_port(), _free_port()
        cmd = [sys.executable, "-m", "loadwise", "agent", "--standalone", "--node", "bench", "--config",
               _write_config(tree, tmp, extra_config, debug_port), "--port", str(port), "--log-level", "warning"]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
        try:
            _wait_ready(proc, port)
            m = _measure(proc, port, debug_port, seconds)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    cpu = m["user"] + m["system"]
    milli = cpu / m["seconds"] * 1000
    rss = m["status"]["VmRSS"] / 1024
    return Result(
        pods=pods, containers=sum(1 if i % 2 else 2 for i in range(pods)), tree=tree.kind, seconds=m["seconds"],
        cpu_seconds=cpu, user_seconds=m["user"], system_seconds=m["system"], millicores=milli, rss_mib=rss,
        hwm_mib=m["status"]["VmHWM"] / 1024, threads=m["status"]["Threads"], metrics_scrapes=m["scrapes"],
        nodemetric_reads=m["reads"], pods_in_nodemetric=m["in_nodemetric"], metrics_bytes=m["metrics_bytes"],
        cpu_target_met=milli <= TARGET_MILLI, rss_target_met=rss <= TARGET_RSS_MIB,
    )


def _print(r: Result) -> None:
    print(f"agent daemon overhead: {r.pods} pods, {r.containers} containers, tree: {r.tree}")
    print(f"  measured window {r.seconds:.0f} s wall after a {WARMUP_SECONDS:.0f} s warm-up; "
          f"{r.metrics_scrapes} /metrics scrapes ({r.metrics_bytes} bytes), {r.nodemetric_reads} /nodemetric reads "
          f"({r.pods_in_nodemetric} pods in podsMetric)")
    print(f"  CPU {r.cpu_seconds:.2f} s (user {r.user_seconds:.2f} s, system {r.system_seconds:.2f} s) = "
          f"{r.millicores:.1f} millicores (target <= {TARGET_MILLI:.0f}: {'met' if r.cpu_target_met else 'NOT met'})")
    print(f"  VmRSS {r.rss_mib:.1f} MiB, VmHWM {r.hwm_mib:.1f} MiB "
          f"(target <= {TARGET_RSS_MIB:.0f} MiB: {'met' if r.rss_target_met else 'NOT met'}); {r.threads} threads")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pods", type=int, default=200, help="pod cgroups to create (default 200)")
    ap.add_argument("--seconds", type=float, default=180.0, help="measured window after the warm-up (default 180)")
    ap.add_argument("--fixture", action="store_true", help="use a fixture file tree even where cgroups are writable")
    ap.add_argument("--config", metavar="FILE", help="JSON agent settings merged over the benchmark's")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON object")
    args = ap.parse_args(argv)
    if args.pods < 1 or args.seconds <= 0:
        ap.error("--pods and --seconds must be positive")
    result = run(args.pods, args.seconds, args.fixture, args.config)
    if args.json:
        print(json.dumps(asdict(result), indent=2))
    else:
        _print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
