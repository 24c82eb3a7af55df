"""``loadwise explain``: exactly one scheduling session in memory on a snapshot, reported per pod, node and plugin.

Nothing is written anywhere; binds and evictions are recorded.  Every verdict and score comes with the numbers
behind it (:mod:`scheduler.explain_numbers`), pending pods of other schedulers are listed with the reason they
were not considered, and a pod that is a group of one is never described in gang terms.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from common.clock import Clock
from common.config import ConfigError
from common.waterline import WaterlinePolicy
from scheduler.conf import SchedulerConf
from scheduler.explain_numbers import node_inputs, pod_numbers
from scheduler.framework.api import JobInfo, TaskInfo, TaskStatus
from scheduler.framework.evaluate import evaluate_nodes
from scheduler.framework.plugin import actions
from scheduler.framework.session import ExplainRecord, Session
from scheduler.framework.snapshot import DEFAULT_SCHEDULER_NAME, Snapshot
from scheduler.plugins.loadaware import WATERLINE_POLICIES_KEY
from scheduler.writeback import pending_message, podgroup_status

__all__ = ["explain", "adopt_pods", "not_considered", "unready_nodes"]


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


def _pending(obj: Mapping[str, Any]) -> bool:
    spec = obj.get("spec") or {}
    phase = (obj.get("status") or {}).get("phase") or "Pending"
    return obj.get("kind") == "Pod" and not spec.get("nodeName") and phase not in ("Succeeded", "Failed")


def adopt_pods(objects: Iterable[Mapping[str, Any]], scheduler_name: str) -> list[dict[str, Any]]:
    """``--all-schedulers``: every pending pod as if it named ``scheduler_name`` (copies; the input is kept)."""
    out: list[dict[str, Any]] = []
    for obj in objects:
        copied = dict(obj)
        if _pending(obj) and (obj.get("spec") or {}).get("schedulerName", "default-scheduler") != scheduler_name:
            copied = copy.deepcopy(copied)
            copied.setdefault("spec", {})["schedulerName"] = scheduler_name
        out.append(copied)
    return out


def not_considered(snapshot: Snapshot, scheduler_name: str) -> list[dict[str, str]]:
    """Pending pods another scheduler owns, each with why this session leaves it alone."""
    out = []
    for pod in snapshot.pods:
        if pod.node_name or pod.terminal or pod.scheduler_name == scheduler_name:
            continue
        out.append({"pod": pod.key, "schedulerName": pod.scheduler_name,
                    "reason": f"spec.schedulerName is {pod.scheduler_name!r}, not {scheduler_name!r} "
                              f"(--scheduler-name {pod.scheduler_name} or --all-schedulers to explain it)"})
    return sorted(out, key=lambda p: p["pod"])


def unready_nodes(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """Warnings for the Nodes a session leaves out because their Ready condition is not True."""
    out = []
    for obj in objects:
        if obj.get("kind") != "Node":
            continue
        ready = [c for c in (obj.get("status") or {}).get("conditions") or []
                 if isinstance(c, Mapping) and c.get("type") == "Ready"]
        if ready and ready[-1].get("status") != "True":
            name = (obj.get("metadata") or {}).get("name", "?")
            out.append(f"Node {name}: not considered: its Ready condition is {ready[-1].get('status')!r}")
    return out


def _policy_warnings(snapshot: Snapshot) -> list[str]:
    """WaterlinePolicies in the snapshot the load-aware plugin skips (invalid) or accepts with a remark."""
    out: list[str] = []
    raw = snapshot.extra.get(WATERLINE_POLICIES_KEY)
    for obj in raw if isinstance(raw, list) else []:
        name = (obj.get("metadata") or {}).get("name", "?")
        try:
            policy = WaterlinePolicy.parse(obj)
        except ConfigError as exc:
            out.append(f"WaterlinePolicy {name}: ignored, invalid: {exc}")
            continue
        out.extend(f"WaterlinePolicy {name}: {w}" for w in policy.warnings)
    return out


def explain(snapshot: Snapshot, conf: SchedulerConf, *, clock: Clock, scheduler_name: str = DEFAULT_SCHEDULER_NAME,
            seed: int = 0, notes: Sequence[str] = ()) -> dict[str, Any]:
    """Run one session and report it: placements, evictions, PodGroup phases, per pending pod its verdict, per-node
    filter results, scores and their numbers, the nodes' load-aware inputs, pods not considered, warnings (``notes``
    first: what the caller found while reading the snapshot)."""
    sink = _Recorder()
    ssn = Session(snapshot, conf, clock=clock, sink=sink, scheduler_name=scheduler_name, seed=seed, explain=True,
                  uid="explain")
    try:
        nodes, warnings = node_inputs(ssn)
        pending = [(job, task) for job in ssn.jobs.values() for task in job.tasks.values()
                   if not task.pod.node_name and not task.pod.terminal]
        numbers = {task.key: pod_numbers(ssn, task, ssn.nodes) for _, task in pending}
        registry = actions()
        for name in conf.actions:
            registry[name]().execute(ssn)
        pods = {task.key: _pod_report(ssn, job, task, sink, numbers[task.key]) for job, task in pending}
    finally:
        ssn.close()
    phases = {job.uid: str(podgroup_status(ssn, job)["phase"]) for job in ssn.jobs.values()
              if job.podgroup is not None}
    return {"placements": {k: sink.binds.get(k) for k in sorted(pods)}, "evictions": list(sink.evictions),
            "podGroupPhases": dict(sorted(phases.items())), "pods": dict(sorted(pods.items())),
            "nodes": nodes, "notConsidered": not_considered(snapshot, scheduler_name),
            "warnings": [*notes, *warnings, *_policy_warnings(snapshot)]}


def _pod_report(ssn: Session, job: JobInfo, task: TaskInfo, sink: _Recorder,
                numbers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    assert ssn.explain is not None
    node = sink.binds.get(task.key)
    rec = ssn.explain.get(task.key)
    if rec is None or not rec.filter:
        # never evaluated (its group was not admitted, or an action gave up first): filter it now, for the table
        evaluate_nodes(ssn, task)
        rec = ssn.explain.setdefault(task.key, ExplainRecord())
    if node is None and task.status in (TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED):
        message = pending_message(ssn, job, task)[1]
    else:
        message = rec.message
    if _single(job) and not node:
        message = _single_pod_message(task, rec, len(ssn.nodes)) or message
    out: dict[str, Any] = {"node": node, "message": message, "filter": _dedup(rec.filter), "scores": rec.scores,
                           "total": rec.total, "numbers": numbers}
    if task.status is TaskStatus.PIPELINED:
        out["pipelinedOn"] = task.node_name
    return out


def _single(job: JobInfo) -> bool:
    """A pod on its own: no PodGroup, or a group of one task needing one."""
    return job.podgroup is None or (len(job.tasks) == 1 and job.min_available <= 1)


def _single_pod_message(task: TaskInfo, rec: ExplainRecord, total: int) -> str:
    """kube's "0/N nodes are available: ..." for a pod alone, from its own filter results (no gang wording)."""
    if task.last_fit_message and "gang" not in task.last_fit_message:
        return task.last_fit_message
    counts: dict[str, int] = {}
    for reasons in _dedup(rec.filter).values():
        for reason in dict.fromkeys(r for text in reasons.values() for r in text.split("; ")):
            counts[reason] = counts.get(reason, 0) + 1
    if not counts:
        return ""
    parts = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"0/{total} nodes are available: {parts}."


def _dedup(filters: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, str]]:
    """Each plugin's reasons on a node, each reason once ("Insufficient cpu; Insufficient cpu" -> once)."""
    return {node: {plugin: "; ".join(dict.fromkeys(text.split("; "))) for plugin, text in per.items()}
            for node, per in filters.items()}
