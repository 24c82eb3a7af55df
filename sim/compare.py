"""Run several policies on the same workload — side by side in worker processes when cores allow — and
gather the records, the measures and the machine-readable summary.

Each policy runs in its own process with its own cluster, clock, scheduler and agents; they share nothing but
the (immutable) workload, so the runs are independent and the result does not depend on how many run at once.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict
from typing import Any

from sim.measures import DEFINITIONS, Measures, comparison, measure
from sim.model import Workload
from sim.record import RunRecord
from sim.run import Policy, SimOptions, run

__all__ = ["run_all", "summary", "default_jobs", "measure_all"]

_PROGRESS_EVERY = 20

# Set in each worker by the pool initializer (fork context: inherited, not pickled per task).
_worker_workload: Workload | None = None
_worker_queue: Any = None


def default_jobs(n_policies: int) -> int:
    """One process per policy, up to twice the cores: three runs time-sharing two cores finish sooner than
    two in parallel followed by one alone."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(n_policies, 2 * cpus))


def _init_worker(workload: Workload, progress: Any) -> None:
    global _worker_workload, _worker_queue
    _worker_workload = workload
    _worker_queue = progress


def _run_in_worker(policy: Policy, options: SimOptions) -> RunRecord:
    assert _worker_workload is not None
    pending = 0

    def tick(n: int) -> None:
        nonlocal pending
        pending += n
        if pending >= _PROGRESS_EVERY and _worker_queue is not None:
            _worker_queue.put(pending)
            pending = 0

    rec = run(_worker_workload, policy, options, progress=tick)
    if pending and _worker_queue is not None:
        _worker_queue.put(pending)
    return rec


def run_all(
    workload: Workload,
    policies: Sequence[Policy],
    options: SimOptions,
    *,
    jobs: int = 1,
    progress: Callable[[int], None] | None = None,
) -> list[RunRecord]:
    """One record per policy, in the order given."""
    if jobs <= 1 or len(policies) <= 1:
        return [run(workload, p, options, progress=progress) for p in policies]
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker, initargs=(workload, q)) as pool:
        futures: list[Future[RunRecord]] = [pool.submit(_run_in_worker, p, options) for p in policies]
        while not all(f.done() for f in futures):
            try:
                n = q.get(timeout=0.2)
            except queue.Empty:
                continue
            if progress is not None:
                progress(int(n))
        while True:
            try:
                n = q.get_nowait()
            except queue.Empty:
                break
            if progress is not None:
                progress(int(n))
        return [f.result() for f in futures]


def summary(
    workload: Workload,
    options: SimOptions,
    policies: Sequence[Policy],
    results: Sequence[Measures],
    *,
    records: Sequence[RunRecord] = (),
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``--json`` document: what was run, the definitions, every policy's measures, and the comparison."""
    reasons = {r.policy: dict(r.unschedulable_reasons) for r in records}
    phases = {r.policy: dict(r.phase_seconds) for r in records}
    return {
        "workload": {
            "name": workload.name,
            "nodes": len(workload.nodes),
            "pods": len(workload.pods),
            "gangs": len(workload.groups),
            "notes": list(workload.notes),
        },
        "options": asdict(options),
        "policies": {
            p.name: {
                "conf": p.conf_source,
                "waterline": p.waterline_source or None,
                "measures": m.to_json(),
                "unschedulable_reasons": reasons.get(p.name, {}),
                "phase_seconds": phases.get(p.name, {}),
            }
            for p, m in zip(policies, results, strict=True)
        },
        "comparison": comparison(results),
        "definitions": dict(DEFINITIONS),
        **(dict(extra) if extra else {}),
    }


def measure_all(records: Sequence[RunRecord]) -> list[Measures]:
    return [measure(r) for r in records]
