"""What a session writes back when it closes (specs/volcano.md §5.3, kube's PodScheduled reporting):
pod ``PodScheduled`` conditions and ``FailedScheduling`` events, ``nominatedNodeName`` after preemption, PodGroup
status (phase, counts, conditions) and Queue status (allocated, PodGroup counts) — each written only when it
changed."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from common.clock import to_rfc3339
from common.cluster import ApiError, Cluster, EventRecord
from common.resources import Resources
from scheduler.batch.lifecycle import (
    GangCounts,
    PodGroupPhase,
    merge_condition,
    podgroup_condition,
    podgroup_phase,
    queue_status_counts,
    status_changed,
)
from scheduler.framework.api import ALLOCATED_STATUS, SCHEDULED_STATUS, JobInfo, TaskInfo, TaskStatus
from scheduler.framework.session import Session

from .binder import COMPONENT, EventLimiter

__all__ = ["WriteBack", "pending_message", "podgroup_status", "queue_allocated"]

log = logging.getLogger(__name__)


def pending_message(ssn: Session, job: JobInfo, task: TaskInfo) -> tuple[str, str]:
    """(reason, message) of the PodScheduled=False condition for a task that was not bound in this session."""
    if task.status is TaskStatus.PIPELINED:
        return "Unschedulable", (f"Pod {task.key} can possibly be assigned to {task.node_name}, once resource is "
                                 "released and minAvailable is satisfied")
    if task.status is TaskStatus.ALLOCATED:
        return "Schedulable", (f"Pod {task.key} can possibly be assigned to {task.node_name}, once minAvailable is "
                               "satisfied")
    if job.uid in ssn.missing_queue:
        return "Unschedulable", job.job_fit_error
    if job.is_pending():
        detail = job.job_fit_error or "the pod group is not admitted yet (enqueue)"
        return "Unschedulable", f"pod group {job.uid} is Pending: {detail}"
    if task.last_fit_message:
        return "Unschedulable", task.last_fit_message
    if job.job_fit_error:
        return "Unschedulable", job.job_fit_error
    return "Unschedulable", "pod group is not ready"


def podgroup_status(ssn: Session, job: JobInfo) -> dict[str, Any]:
    """The PodGroup's status after this session (§5.1 getPodGroupPhase)."""
    pg = job.podgroup
    assert pg is not None
    old: dict[str, Any] = dict(pg.raw.get("status") or {})
    running = job.count(TaskStatus.RUNNING)
    succeeded = job.count(TaskStatus.SUCCEEDED)
    failed = job.count(TaskStatus.FAILED)
    releasing_on_node = sum(1 for t in job.tasks_in(TaskStatus.RELEASING) if t.node_name)
    scheduled = job.count(*SCHEDULED_STATUS, TaskStatus.BINDING, TaskStatus.ALLOCATED) + releasing_on_node
    try:
        previous = PodGroupPhase(job.phase or "Pending")
    except ValueError:
        previous = PodGroupPhase.PENDING
    phase = podgroup_phase(previous, GangCounts(job.min_available, running, scheduled, succeeded + failed,
                                                job.unschedulable))
    now = to_rfc3339(ssn.now)
    conditions = [dict(c) for c in old.get("conditions") or [] if isinstance(c, Mapping)]
    if job.unschedulable:
        pending = len(job.tasks) - job.ready_task_num()
        msg = f"{pending}/{len(job.tasks)} tasks in gang unschedulable: {job.job_fit_error}".rstrip(": ")
        conditions = merge_condition(conditions, podgroup_condition(
            "Unschedulable", "NotEnoughResources", msg, session_uid=ssn.uid, now=now))
    elif phase in (PodGroupPhase.RUNNING, PodGroupPhase.COMPLETED) or job.is_ready():
        conditions = [c for c in conditions if c.get("type") != "Unschedulable"]
        conditions = merge_condition(conditions, podgroup_condition(
            "Scheduled", "tasks in gang are ready to be scheduled", "pod group is ready", session_uid=ssn.uid,
            now=now))
    new = dict(old)
    new.update({"phase": phase.value, "running": running, "succeeded": succeeded, "failed": failed,
                "conditions": conditions})
    return new


def queue_allocated(ssn: Session) -> dict[str, Resources]:
    out: dict[str, Resources] = {q: Resources() for q in ssn.queues}
    for job in ssn.jobs.values():
        if job.queue not in out:
            continue
        for t in job.tasks_in(*ALLOCATED_STATUS):
            out[job.queue] = out[job.queue] + t.resreq
    return out


@dataclass(slots=True)
class WriteBackStats:
    pod_conditions: int = 0
    podgroup_status: int = 0
    queue_status: int = 0
    errors: list[str] = field(default_factory=list)


class WriteBack:
    def __init__(self, cluster: Cluster, events: EventLimiter) -> None:
        self.cluster = cluster
        self.events = events

    def _patch_status(self, kind: str, name: str, patch: Mapping[str, Any], namespace: str | None,
                      stats: WriteBackStats) -> bool:
        try:
            self.cluster.patch_status(kind, name, {"status": dict(patch)}, namespace=namespace)
            return True
        except ApiError as exc:
            stats.errors.append(f"{kind} {namespace + '/' if namespace else ''}{name}: {exc}")
            return False

    def write(self, ssn: Session) -> WriteBackStats:
        stats = WriteBackStats()
        for job in ssn.jobs.values():
            self._pods(ssn, job, stats)
            if job.podgroup is not None:
                self._podgroup(ssn, job, stats)
        self._queues(ssn, stats)
        return stats

    def _pods(self, ssn: Session, job: JobInfo, stats: WriteBackStats) -> None:
        for task in job.tasks_in(TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED):
            pod = task.pod
            reason, message = pending_message(ssn, job, task)
            current = next((c for c in (pod.raw.get("status") or {}).get("conditions") or []
                            if c.get("type") == "PodScheduled"), None)
            patch: dict[str, Any] = {}
            if current is None or current.get("reason") != reason or current.get("message") != message \
                    or current.get("status") != "False":
                others = [c for c in (pod.raw.get("status") or {}).get("conditions") or []
                          if c.get("type") != "PodScheduled"]
                # a JSON merge patch replaces lists, so keep the pod's other conditions explicitly
                patch["conditions"] = [*others, {"type": "PodScheduled", "status": "False", "reason": reason,
                                                 "message": message, "lastTransitionTime": to_rfc3339(ssn.now)}]
            if task.eviction_occurred and task.nominated_node:
                patch["nominatedNodeName"] = task.nominated_node
            if patch and self._patch_status("Pod", pod.name, patch, pod.namespace, stats):
                stats.pod_conditions += 1
            if reason == "Unschedulable":
                self.events.emit(EventRecord(kind="Pod", name=pod.name, namespace=pod.namespace, uid=pod.uid,
                                             reason="FailedScheduling", type="Warning", component=COMPONENT,
                                             action="Scheduling", message=message))

    def _podgroup(self, ssn: Session, job: JobInfo, stats: WriteBackStats) -> None:
        pg = job.podgroup
        assert pg is not None
        old = dict(pg.raw.get("status") or {})
        new = podgroup_status(ssn, job)
        if status_changed(old, new) and self._patch_status("PodGroup", pg.name, new, pg.namespace, stats):
            stats.podgroup_status += 1
            if new["phase"] in ("Running", "Completed") and old.get("phase") != new["phase"]:
                self.events.emit(EventRecord(kind="PodGroup", name=pg.name, namespace=pg.namespace, uid=pg.uid,
                                             reason="Scheduled", type="Normal", component=COMPONENT,
                                             message="pod group is ready"))
        if job.unschedulable and new["phase"] in ("Pending", "Inqueue", "Unknown"):
            pending = len(job.tasks) - job.ready_task_num()
            self.events.emit(EventRecord(kind="PodGroup", name=pg.name, namespace=pg.namespace, uid=pg.uid,
                                         reason="Unschedulable", type="Warning", component=COMPONENT,
                                         message=f"{pending}/{len(job.tasks)} tasks in gang unschedulable: "
                                                 f"{job.job_fit_error}"))

    def _queues(self, ssn: Session, stats: WriteBackStats) -> None:
        allocated = queue_allocated(ssn)
        phases: dict[str, list[PodGroupPhase]] = {}
        for job in ssn.jobs.values():
            if job.podgroup is not None:
                try:
                    phases.setdefault(job.queue, []).append(PodGroupPhase(podgroup_status(ssn, job)["phase"]))
                except ValueError:
                    continue
        for name, q in ssn.queues.items():
            if q.view is None:
                continue
            old = dict(q.view.raw.get("status") or {})
            new = dict(old)
            new["allocated"] = allocated[name].to_kube()
            new.update(queue_status_counts(phases.get(name, [])).to_status())
            new.setdefault("state", q.state or "Open")
            if new != old and self._patch_status("Queue", name, new, None, stats):
                stats.queue_status += 1
