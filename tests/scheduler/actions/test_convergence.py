"""Proportion over repeated sessions: queue allocations converge to the weighted fair share.

Queue ``a`` (weight 1) first holds the whole cluster; ``b`` (2) and ``c`` (3) arrive with more work than fits.
Each session binds what the scheduler decides; between sessions a fifth of the running pods finish and every queue
tops its backlog up again.  Since proportion never lets a queue allocate beyond its deserved share, ``a`` drains to
its share as its pods finish while ``b`` and ``c`` fill up to theirs: 2, 4 and 6 of 12 cpu.
"""

from __future__ import annotations

import random
from typing import Any

from tests.scheduler.actions.helpers import FULL
from tests.scheduler.factories import T0, node, pod, podgroup, queue, run

CONF = FULL.replace("enqueue, allocate, preempt, reclaim, backfill", "enqueue, allocate, backfill")
WEIGHTS = {"a": 1, "b": 2, "c": 3}
FAIR_CPU = {"a": 2000, "b": 4000, "c": 6000}
BACKLOG = 12
SESSIONS = 40


def _objects(running: dict[str, tuple[str, str]], pending: dict[str, str]) -> list[dict[str, Any]]:
    objs: list[dict[str, Any]] = [node(f"n{i}", cpu="4", memory="64Gi") for i in range(3)]
    objs += [queue(q, w) for q, w in WEIGHTS.items()]
    objs += [podgroup(f"{q}-job", 1, queue=q, phase="Running") for q in WEIGHTS]
    objs += [pod(name, cpu="1", memory=None, group=f"{q}-job", node_name=n, created=T0)
             for name, (q, n) in running.items()]
    objs += [pod(name, cpu="1", memory=None, group=f"{q}-job", created=T0) for name, q in pending.items()]
    return objs


def test_queue_shares_converge_to_weighted_fair_share() -> None:
    rng = random.Random(11)
    serial = 0
    running: dict[str, tuple[str, str]] = {}
    for i in range(12):
        running[f"a-{serial}"] = ("a", f"n{i % 3}")
        serial += 1
    pending: dict[str, str] = {}
    history: list[dict[str, int]] = []
    for _ in range(SESSIONS):
        for q in WEIGHTS:
            while sum(1 for v in pending.values() if v == q) < BACKLOG:
                pending[f"{q}-{serial}"] = q
                serial += 1
        ssn, sink = run(_objects(running, pending), CONF)
        for key, node_name in sink.binds.items():
            name = key.split("/", 1)[1]
            running[name] = (pending.pop(name), node_name)
        alloc = {q: 1000 * sum(1 for v in running.values() if v[0] == q) for q in WEIGHTS}
        history.append(alloc)
        assert sum(alloc.values()) <= 12000
        for name in [n for n in running if rng.random() < 0.2]:
            del running[name]
    converged = next(i for i, alloc in enumerate(history) if alloc == FAIR_CPU)
    # bounded: within 20 sessions of the start, and it stays there
    assert converged <= 20, history
    assert all(alloc == FAIR_CPU for alloc in history[converged:]), history[converged:]
    # and a never gained anything above its share once it got there
    assert max(h["a"] for h in history[converged:]) == FAIR_CPU["a"]
