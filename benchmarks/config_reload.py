"""Cost of the agent's config reload poll: an unchanged file, and a changed one read, checked and applied.

A standalone agent on this machine (its /proc and cgroups, as ``loadwise agent --standalone``) with a config file
in a temporary directory.  The unchanged polls are what the agent does every 10 s (one ``stat``); the changed
polls rewrite the file between polls, alternating ``collectIntervalSeconds`` and ``podMetrics``, so each one reads
the file, checks it against the schema and swaps the values into the running agent.  Prints the mean wall and CPU
time of each kind of poll (``time.process_time``: this process only) and the unchanged poll's CPU share of one
core at one poll per 10 s.

Usage: .venv/bin/python benchmarks/config_reload.py [--polls 5000] [--changes 50] [--json]
       (time it under the shared lock: flock /tmp/loadwise-timing.lock ...)
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from agent.config import AgentConfig
from agent.reload import POLL_SECONDS, ConfigReloader
from loadwise.cmd_agent import build_agent


def _timed(step: Callable[[int], object], n: int) -> tuple[float, float]:
    """Mean wall and CPU seconds of ``step(i)`` over ``n`` calls."""
    w0, c0 = time.perf_counter(), time.process_time()
    for i in range(n):
        step(i)
    return (time.perf_counter() - w0) / n, (time.process_time() - c0) / n


def measure(polls: int, changes: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "agent.yaml"
        path.write_text(yaml.safe_dump({"port": 0, "debugPort": 0}))
        agent = build_agent(AgentConfig.load(path), "bench", cluster=None)
        reloader = ConfigReloader(agent, path)
        reloader.check()
        unchanged_wall, unchanged_cpu = _timed(lambda i: reloader.check(), polls)

        def change(i: int) -> None:
            path.write_text(yaml.safe_dump({"port": 0, "debugPort": 0, "collectIntervalSeconds": 2 - i % 2,
                                            "podMetrics": i % 2 == 1}))
            if reloader.check() is None:
                raise RuntimeError("a changed config was not applied")

        changed_wall, changed_cpu = _timed(change, changes)
    return {"polls": polls, "changes": changes,
            "unchanged_wall_us": round(unchanged_wall * 1e6, 2), "unchanged_cpu_us": round(unchanged_cpu * 1e6, 2),
            "changed_wall_ms": round(changed_wall * 1e3, 3), "changed_cpu_ms": round(changed_cpu * 1e3, 3),
            "core_share_at_10s_percent": round(unchanged_cpu / POLL_SECONDS * 100, 6)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--polls", type=int, default=5000, help="unchanged polls to time (default 5000)")
    parser.add_argument("--changes", type=int, default=50, help="changed polls to time (default 50)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args()
    if args.polls < 1 or args.changes < 1:
        parser.error("--polls and --changes must be at least 1")
    logging.disable(logging.WARNING)  # a "reloaded" line per change would time the log, not the reload
    r = measure(args.polls, args.changes)
    if args.json:
        print(json.dumps(r))
        return 0
    print(f"config poll, file unchanged ({r['polls']} polls): wall {r['unchanged_wall_us']:.1f} us, "
          f"CPU {r['unchanged_cpu_us']:.1f} us ({r['core_share_at_10s_percent']:.5f} % of a core at one poll "
          f"per {POLL_SECONDS:.0f} s); file changed ({r['changes']} polls): wall {r['changed_wall_ms']:.2f} ms, "
          f"CPU {r['changed_cpu_ms']:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
