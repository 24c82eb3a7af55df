"""What a session writes back when it closes (docs/design/scheduler.md §5.3, kube's PodScheduled reporting):
pod ``PodScheduled`` conditions and ``FailedScheduling`` events, ``nominatedNodeName`` after preemption, PodGroup
status (phase, counts, conditions) and Queue status (allocated, PodGroup counts) — each written only when it
changed."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from common.clock import to_rfc3339
from common.cluster import ApiError, Cluster, EventRecord
from common.resources import Resources
from scheduler.batch import writeback as batch_wb
from scheduler.batch.lifecycle import PodGroupPhase, status_changed
from scheduler.framework.api import JobInfo, TaskInfo, TaskStatus, unsettled_or_grouped
from scheduler.framework.memo import IdentityMemo, SessionMemo
from scheduler.framework.session import Session

from .binder import COMPONENT, EventLimiter

__all__ = ["WriteBack", "pending_message", "podgroup_status"]

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
    """The PodGroup's status after this session (docs/design/scheduler.md §5.1, conditions written by gang)."""
    assert job.podgroup is not None
    return batch_wb.podgroup_status(job, job.podgroup.raw.get("status") or {}, session_uid=ssn.uid,
                                    now=to_rfc3339(ssn.now), gang="gang" in ssn.plugins)


@dataclass(slots=True)
class WriteBackStats:
    pod_conditions: int = 0
    podgroup_status: int = 0
    queue_status: int = 0
    errors: list[str] = field(default_factory=list)


def _written(stats: WriteBackStats, kind: str, name: str, namespace: str | None, write: Callable[[], Any]) -> bool:
    """Whether ``write`` went through; an API error is kept in ``stats`` (the session goes on)."""
    try:
        write()
        return True
    except ApiError as exc:
        stats.errors.append(f"{kind} {namespace + '/' if namespace else ''}{name}: {exc}")
        return False


class WriteBack:
    def __init__(self, cluster: Cluster, events: EventLimiter) -> None:
        self.cluster = cluster
        self.events = events
        # per PodGroup object: the inputs of its last status computation that found nothing to patch, and the
        # event it gave; the same inputs for the same object give the same answer (timestamps aside)
        self._unchanged: IdentityMemo[tuple[tuple[Any, ...], batch_wb.PodGroupEvent | None]] = IdentityMemo()
        # the queues' allocation sums, updated from one session to the next by the jobs that changed
        self._allocation = batch_wb.QueueAllocation()
        # the memo and claim of the renewing session whose jobs the sums last counted (None: look at every job)
        self._counted: tuple[SessionMemo, int] | None = None

    def _patch_status(self, kind: str, name: str, patch: Mapping[str, Any], namespace: str | None,
                      stats: WriteBackStats) -> bool:
        return _written(stats, kind, name, namespace,
                        lambda: self.cluster.patch_status(kind, name, {"status": dict(patch)}, namespace=namespace))

    def _patch_conditions(self, kind: str, name: str, conditions: list[dict[str, Any]], fields: Mapping[str, Any],
                          namespace: str | None, stats: WriteBackStats) -> bool:
        return _written(stats, kind, name, namespace,
                        lambda: self.cluster.patch_conditions(kind, name, conditions, namespace=namespace,
                                                              status=fields))

    def write(self, ssn: Session) -> WriteBackStats:
        stats = WriteBackStats()
        self._unchanged.rotate()
        grouped: list[tuple[str, PodGroupPhase]] = []
        moved: list[str] = []   # the jobs whose tasks may have changed status in the session
        for job in unsettled_or_grouped(ssn.jobs_in_play()):   # the others need nothing
            if job.may_be_unsettled():   # else no task is Pending, Pipelined or Allocated, nor moved
                moved.append(job.uid)
                self._pods(ssn, job, stats)
            if job.podgroup is not None:
                grouped.append((job.queue, self._podgroup(ssn, job, stats)))
        self._queues(ssn, stats, grouped, moved)
        return stats

    def _pods(self, ssn: Session, job: JobInfo, stats: WriteBackStats) -> None:
        for task in job.tasks_in(TaskStatus.PENDING, TaskStatus.PIPELINED, TaskStatus.ALLOCATED):
            pod = task.pod
            reason, message = pending_message(ssn, job, task)
            current = next((c for c in (pod.raw.get("status") or {}).get("conditions") or []
                            if c.get("type") == "PodScheduled"), None)
            conditions: list[dict[str, Any]] = []
            if current is None or current.get("reason") != reason or current.get("message") != message \
                    or current.get("status") != "False":
                # merged by type: the pod's other conditions are the other writers' to keep
                conditions.append({"type": "PodScheduled", "status": "False", "reason": reason, "message": message,
                                   "lastTransitionTime": to_rfc3339(ssn.now)})
            fields: dict[str, Any] = {}
            if task.eviction_occurred and task.nominated_node:
                fields["nominatedNodeName"] = task.nominated_node
            if (conditions or fields) and self._patch_conditions("Pod", pod.name, conditions, fields, pod.namespace,
                                                                 stats):
                stats.pod_conditions += 1
            if reason == "Unschedulable":
                self.events.emit(EventRecord(kind="Pod", name=pod.name, namespace=pod.namespace, uid=pod.uid,
                                             reason="FailedScheduling", type="Warning", component=COMPONENT,
                                             action="Scheduling", message=message))

    def _podgroup(self, ssn: Session, job: JobInfo, stats: WriteBackStats) -> PodGroupPhase:
        """Patch the PodGroup's status if it changed, emit its event; returns its phase after the session."""
        pg = job.podgroup
        assert pg is not None
        phase = batch_wb.podgroup_phase_after(job)
        gang = "gang" in ssn.plugins
        # everything podgroup_status and podgroup_event read from the job (and the session), timestamps aside
        inputs = (gang, phase, len(job.tasks), job.unschedulable, job.job_fit_error,
                  batch_wb.unschedulable_reason(job) if gang and job.tasks and job.unschedulable else "",
                  gang and bool(job.tasks) and not job.unschedulable and job.is_ready(),
                  job.count(TaskStatus.RUNNING), job.count(TaskStatus.SUCCEEDED), job.count(TaskStatus.FAILED),
                  job.count(TaskStatus.PENDING))
        kept = self._unchanged.get(pg)
        if kept is not None and kept[0] == inputs:
            event = kept[1]
        else:
            old = dict(pg.raw.get("status") or {})
            new = podgroup_status(ssn, job)
            changed = status_changed(old, new)
            if changed and self._patch_status("PodGroup", pg.name, new, pg.namespace, stats):
                stats.podgroup_status += 1
            event = batch_wb.podgroup_event(job, str(new["phase"]), status_changed=changed)
            if not changed:
                self._unchanged.put(pg, (inputs, event))
        if event is not None:
            self.events.emit(EventRecord(kind="PodGroup", name=pg.name, namespace=pg.namespace, uid=pg.uid,
                                         reason=event.reason, type=event.type, component=COMPONENT,
                                         message=event.message))
        return phase

    def _queues(self, ssn: Session, stats: WriteBackStats, grouped: list[tuple[str, PodGroupPhase]],
                moved: list[str]) -> None:
        statuses = batch_wb.statuses_of(ssn.queues, batch_wb.with_descendants(self._allocated(ssn, moved),
                                                                              ssn.queues), grouped)
        for name, q in ssn.queues.items():
            if q.view is None:
                continue
            old = dict(q.view.raw.get("status") or {})
            new = dict(old)
            new.update(statuses[name])
            if new != old and self._patch_status("Queue", name, new, None, stats):
                stats.queue_status += 1

    def _allocated(self, ssn: Session, moved: list[str]) -> dict[str, Resources]:
        """Each queue's own allocation after the session.  A renewing session that follows the one these sums
        last counted names the jobs that may differ from then: those it did not take over as that session left
        them (``changed_jobs``: all but the groups of one nothing set anything on since), those gone since
        (``gone_jobs``) and those whose tasks moved in it (any change of ``allocated`` moves a task); the others
        are the same objects with the same amounts."""
        counted, self._counted = self._counted, None   # an error below leaves the sums to be checked in full
        memo = ssn.memo
        if ssn.renewing and counted is not None and counted[0] is memo and counted[1] == memo.previous_claim:
            changed = set(ssn.changed_jobs)
            changed.update(moved)
            own = self._allocation.own_changed(ssn.jobs, ssn.queues, changed, ssn.gone_jobs)
        else:
            own = self._allocation.own(list(ssn.jobs.values()), ssn.queues)
        if ssn.renewing:
            self._counted = (memo, memo.claimed_epoch)
        return own
