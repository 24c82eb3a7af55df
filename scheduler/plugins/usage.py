"""usage: Volcano's load-aware plugin (docs/design/scheduler.md §4.12) fed by the NodeMetric objects the agent writes.

Volcano reads each node's average cpu/memory usage percent over a 10-minute period from Prometheus; here the
percent is the NodeMetric's 10-minute ``avg`` aggregate (its latest ``nodeUsage`` when that window is not
reported) over the node's capacity, and the metrics time is the NodeMetric's ``updateTime``.  Metrics older than
5 minutes, absent, or without ``status.nodeMetric`` are unavailable: the node passes and scores 0.

* predicate: cpu% > ``thresholds.cpu`` (else mem% > ``thresholds.mem``) → UnschedulableAndUnresolvable "the CPU
  (memory) load of the node exceeds the upper limit." — strictly greater, measured usage only.
* nodeOrder: ``((1 − U_cpu)·cpu.weight + (1 − U_mem)·memory.weight) / (cpu.weight + memory.weight) × 100 ×
  usage.weight`` where ``U`` = (measured + shadow estimate) / capacity, clamped to 0..1.  The shadow holds the
  tasks on the node that metrics cannot show yet — Allocated/Binding/Bound, or Running for less than the metrics
  interval (30 s) — plus every task this session allocates or pipelines (removed again on deallocate), each
  estimated with the ``estimator`` arguments; ``risk_factor`` applies on nodes whose measured weighted load is at
  least ``risk_threshold``.  The score excludes the task being placed (the spec's worked example: 30 % cpu, 50 %
  memory, weights 1/1/5 → 300) and is truncated to an integer.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from common.objects import NodeMetricView
from common.resources import CPU, MEMORY
from scheduler.framework.api import TaskInfo, TaskStatus
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import EventHandler, Session
from scheduler.framework.status import Code, FilterResult
from scheduler.scoring.usage import (
    UsageArgs,
    available,
    composite_load,
    parse_usage_arguments,
    risk_factors,
    task_estimate,
    usage_predicate,
    usage_score,
)

__all__ = ["NAME", "PERIOD_SECONDS", "METRICS_INTERVAL_SECONDS", "Usage", "node_percent"]

NAME = "usage"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = (
    "usage.weight", "cpu.weight", "memory.weight", "thresholds/cpu", "thresholds/mem", "estimator/request_ratio",
    "estimator/burst_ratio", "estimator/risk_threshold", "estimator/risk_factor", "estimator/be_cpu",
    "estimator/be_mem",
)
PERIOD_SECONDS = 600.0
METRICS_INTERVAL_SECONDS = 30.0
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
_SHADOW_STATUSES = frozenset({TaskStatus.ALLOCATED, TaskStatus.BINDING, TaskStatus.BOUND, TaskStatus.PIPELINED})


def node_percent(metric: NodeMetricView | None, capacity: int, resource: str) -> tuple[float, float]:
    """(usage percent of capacity, metrics time or NaN when the metric is missing or carries no node usage)."""
    if metric is None or metric.update_time is None or (metric.raw.get("status") or {}).get("nodeMetric") is None:
        return 0.0, float("nan")
    window = metric.aggregated.get(PERIOD_SECONDS, {}).get("avg")
    used = (window if window is not None else metric.node_usage).get(resource, 0)
    return (used * 100.0 / capacity if capacity > 0 else 0.0), metric.update_time


class Usage:
    name = NAME

    def __init__(self, args: Arguments) -> None:
        self.args: UsageArgs = parse_usage_arguments(args)
        self.weight = args.score_weight()

    def on_session_open(self, ssn: Session) -> None:
        a = self.args
        n = len(ssn.nodes)
        cap_cpu = np.array([nd.view.capacity.get(CPU, 0) for nd in ssn.nodes], dtype=np.float64)
        cap_mem = np.array([nd.view.capacity.get(MEMORY, 0) for nd in ssn.nodes], dtype=np.float64)
        cpu_pct, mem_pct, mtime = np.zeros(n), np.zeros(n), np.full(n, np.nan)
        for i, nd in enumerate(ssn.nodes):
            metric = ssn.snapshot.node_metrics.get(nd.name)
            cpu_pct[i], mtime[i] = node_percent(metric, int(cap_cpu[i]), CPU)
            mem_pct[i], _ = node_percent(metric, int(cap_mem[i]), MEMORY)
        ok = available(mtime, ssn.now)
        zero = np.zeros(n, dtype=np.float64)
        risk = risk_factors(a, composite_load(cpu_pct, cap_cpu, zero), composite_load(mem_pct, cap_mem, zero))
        index = {nd.name: i for i, nd in enumerate(ssn.nodes)}
        shadow_cpu, shadow_mem = zero.copy(), zero.copy()
        shadow: dict[str, tuple[int, float, float]] = {}

        def estimate(task: TaskInfo, i: int) -> tuple[float, float]:
            pod, r = task.pod, risk[i:i + 1]
            cpu = task_estimate(a, float(pod.requests.get(CPU, 0)), float(pod.limits.get(CPU, 0)), cpu=True,
                                best_effort=task.best_effort, risk=r)
            mem = task_estimate(a, float(pod.requests.get(MEMORY, 0)), float(pod.limits.get(MEMORY, 0)), cpu=False,
                                best_effort=task.best_effort, risk=r)
            return float(cpu[0]), float(mem[0])

        def remove(task: TaskInfo) -> None:
            old = shadow.pop(task.uid, None)
            if old is not None:
                shadow_cpu[old[0]] -= old[1]
                shadow_mem[old[0]] -= old[2]

        def add(task: TaskInfo) -> None:
            remove(task)
            i = index.get(task.node_name)
            if i is None:
                return
            recent = (task.status is TaskStatus.RUNNING and task.pod.start_time is not None
                      and ssn.now - task.pod.start_time < METRICS_INTERVAL_SECONDS)
            if task.status not in _SHADOW_STATUSES and not recent:
                return
            cpu, mem = estimate(task, i)
            shadow[task.uid] = (i, cpu, mem)
            shadow_cpu[i] += cpu
            shadow_mem[i] += mem

        for nd in ssn.nodes:
            for task in nd.tasks.values():
                add(task)
        threshold = usage_predicate(a, cpu_pct, mem_pct, mtime, ssn.now)
        reasons = {i: [(Code.UNRESOLVABLE, r)] for i, r in enumerate(threshold[1]) if r}

        def predicate(task: TaskInfo) -> FilterResult:
            return FilterResult(threshold[0], reasons)

        def score(task: TaskInfo) -> FloatArray:
            u_cpu = composite_load(cpu_pct, cap_cpu, shadow_cpu)
            u_mem = composite_load(mem_pct, cap_mem, shadow_mem)
            out: FloatArray = usage_score(a, u_cpu, u_mem, ok) * self.weight  # float64, as Volcano's
            return out

        ssn.add_vector_predicate_fn(NAME, predicate)
        ssn.add_vector_score_fn(NAME, score)
        ssn.add_event_handler(EventHandler(add, remove))

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> Usage:
    return Usage(args)
