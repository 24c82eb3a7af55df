"""``loadwise explain``: exactly one scheduling session in memory on a snapshot, reported per pod, node and plugin
(docs/design/cli.md §2).  Nothing is written anywhere; binds and evictions are recorded."""

from __future__ import annotations

from typing import Any

from common.clock import Clock
from scheduler.conf import SchedulerConf
from scheduler.framework.api import TaskInfo, TaskStatus
from scheduler.framework.plugin import actions
from scheduler.framework.session import ExplainRecord, Session
from scheduler.framework.snapshot import DEFAULT_SCHEDULER_NAME, Snapshot
from scheduler.writeback import pending_message, podgroup_status

__all__ = ["explain", "render_table"]


class _Recorder:
    def __init__(self) -> None:
        self.binds: dict[str, str] = {}
        self.evictions: list[str] = []

    def bind(self, task: TaskInfo, node: str) -> bool:
        self.binds[task.key] = node
        return True

    def evict(self, task: TaskInfo, reason: str) -> bool:
        self.evictions.append(task.key)
        return True


def explain(snapshot: Snapshot, conf: SchedulerConf, *, clock: Clock, scheduler_name: str = DEFAULT_SCHEDULER_NAME,
            seed: int = 0) -> dict[str, Any]:
    sink = _Recorder()
    ssn = Session(snapshot, conf, clock=clock, sink=sink, scheduler_name=scheduler_name, seed=seed, explain=True,
                  uid="explain")
    registry = actions()
    for name in conf.actions:
        registry[name]().execute(ssn)
    ssn.close()
    assert ssn.explain is not None
    placements: dict[str, str | None] = {}
    pods: dict[str, Any] = {}
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            if task.pod.node_name or task.pod.terminal:
                continue
            node = sink.binds.get(task.key)
            placements[task.key] = node
            rec = ssn.explain.get(task.key, ExplainRecord())
            if node is None and task.status in (TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED):
                message = pending_message(ssn, job, task)[1]
            else:
                message = rec.message
            pods[task.key] = {"node": node, "filter": rec.filter, "scores": rec.scores, "total": rec.total,
                              "message": message}
            if task.status is TaskStatus.PIPELINED:
                pods[task.key]["pipelinedOn"] = task.node_name
    phases = {job.uid: str(podgroup_status(ssn, job)["phase"]) for job in ssn.jobs.values()
              if job.podgroup is not None}
    return {"placements": dict(sorted(placements.items())), "evictions": list(sink.evictions),
            "podGroupPhases": dict(sorted(phases.items())), "pods": dict(sorted(pods.items()))}


def render_table(report: dict[str, Any]) -> str:
    """A terminal view: one block per pending pod with its per-node filter verdicts and scores."""
    lines: list[str] = []
    for key, info in report["pods"].items():
        lines.append(f"{key} -> {info['node'] or 'pending'}")
        if info.get("message"):
            lines.append(f"  {info['message']}")
        nodes = sorted(info["filter"]) or sorted(info["total"])
        plugins = sorted({p for s in info["scores"].values() for p in s})
        if nodes:
            head = f"  {'node':<24} {'filter':<44} " + " ".join(f"{p[:12]:>12}" for p in plugins) + f" {'total':>7}"
            lines.append(head)
        for n in nodes:
            verdict = "; ".join(f"{p}: {r}" for p, r in info["filter"].get(n, {}).items()) or "ok"
            scores = info["scores"].get(n, {})
            cols = " ".join(f"{scores.get(p, ''):>12}" for p in plugins)
            total = info["total"].get(n, "")
            lines.append(f"  {n:<24} {verdict[:44]:<44} {cols} {total:>7}")
    if report["evictions"]:
        lines.append("evictions: " + ", ".join(report["evictions"]))
    for group, phase in report["podGroupPhases"].items():
        lines.append(f"podgroup {group}: {phase}")
    return "\n".join(lines)
