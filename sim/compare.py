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
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, replace
from typing import Any

from sim.measures import DEFINITIONS, Measures, comparison, measure
from sim.model import Workload
from sim.record import RunRecord
from sim.run import Policy, SimOptions, run

__all__ = ["parse_seeds", "run_all", "run_seeds", "summary", "default_jobs", "measure_all", "longest_first"]

_PROGRESS_EVERY = 20

# Set in each worker by the pool initializer (fork context: inherited, not pickled per task).
_worker_workloads: Mapping[int, Workload] = {}
_worker_queue: Any = None


def parse_seeds(text: str) -> list[int]:
    """``"1-5"``, ``"1,3,7"`` or a mix (``"1-3,9"``): the seeds in the order given, each once."""
    seeds: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        lo, sep, hi = part.partition("-")
        try:
            span = range(int(lo), int(hi) + 1) if sep else range(int(part), int(part) + 1)
        except ValueError:
            raise ValueError(f"--seeds: {part!r} is not a seed or a range of seeds such as 1-5") from None
        if not span:
            raise ValueError(f"--seeds: the range {part!r} is empty")
        seeds += [s for s in span if s not in seeds]
    return seeds


def default_jobs(n_runs: int) -> int:
    """One process per run, up to twice the cores: three runs time-sharing two cores finish sooner than two in
    parallel followed by one alone."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(n_runs, 2 * cpus))


def _init_worker(workloads: Mapping[int, Workload], progress: Any) -> None:
    global _worker_workloads, _worker_queue
    _worker_workloads = workloads
    _worker_queue = progress


def _run_in_worker(seed: int, policy: Policy, options: SimOptions) -> RunRecord:
    pending = 0

    def tick(n: int) -> None:
        nonlocal pending
        pending += n
        if pending >= _PROGRESS_EVERY and _worker_queue is not None:
            _worker_queue.put(pending)
            pending = 0

    rec = run(_worker_workloads[seed], policy, replace(options, seed=seed), progress=tick)
    if pending and _worker_queue is not None:
        _worker_queue.put(pending)
    return rec


def _drain(q: Any, progress: Callable[[int], None] | None, *, wait: float) -> bool:
    """Pass one progress report on (waiting up to ``wait`` s); False when none came."""
    try:
        n = q.get(timeout=wait) if wait > 0 else q.get_nowait()
    except queue.Empty:
        return False
    if progress is not None:
        progress(int(n))
    return True


def run_seeds(
    workloads: Mapping[int, Workload],
    policies: Sequence[Policy],
    options: SimOptions,
    *,
    jobs: int = 1,
    progress: Callable[[int], None] | None = None,
) -> dict[int, list[RunRecord]]:
    """Per seed (each with its own workload), one record per policy in the order given; the policy × seed runs
    go to ``jobs`` worker processes."""
    if jobs <= 1 or len(policies) * len(workloads) <= 1:
        return {s: [run(w, p, replace(options, seed=s), progress=progress) for p in policies]
                for s, w in workloads.items()}
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_init_worker,
                             initargs=(workloads, q)) as pool:
        futures = {(s, k): pool.submit(_run_in_worker, s, policies[k], options)
                   for s, k in longest_first(workloads, policies)}
        while not all(f.done() for f in futures.values()):
            _drain(q, progress, wait=0.2)
        while _drain(q, progress, wait=0):
            pass
        return {s: [futures[s, k].result() for k in range(len(policies))] for s in workloads}


def longest_first(workloads: Mapping[int, Workload], policies: Sequence[Policy]) -> list[tuple[int, int]]:
    """(seed, policy index) of every run, the likely longest first, so no long run starts last and leaves the
    other cores idle at the end: runs with waterlines, then with node agents (their reports), then the rest,
    each on the larger workloads first."""
    def cost(run: tuple[int, int]) -> tuple[bool, bool, int]:
        seed, k = run
        policy = policies[k]
        return bool(policy.waterline), policy.node_agents, len(workloads[seed].pods)

    return sorted(((s, k) for s in workloads for k in range(len(policies))), key=cost, reverse=True)


def run_all(
    workload: Workload,
    policies: Sequence[Policy],
    options: SimOptions,
    *,
    jobs: int = 1,
    progress: Callable[[int], None] | None = None,
) -> list[RunRecord]:
    """One record per policy, in the order given, on one workload with ``options.seed``."""
    return run_seeds({options.seed: workload}, policies, options, jobs=jobs, progress=progress)[options.seed]


def summary(
    workload: Workload,
    options: SimOptions,
    policies: Sequence[Policy],
    results: Sequence[Measures],
    *,
    records: Sequence[RunRecord] = (),
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``-o json`` document: what was run, the definitions, every policy's measures, and the comparison."""
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
