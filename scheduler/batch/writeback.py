"""What a closed session means for PodGroup and Queue status (docs/design/scheduler.md §2.1 step 7, §5).

Pure functions of the session's JobInfo/QueueInfo values after ``Session.close()`` (where gang has recorded
``job.unschedulable`` and ``job.job_fit_error``): the engine's write-back compares their result with the object's
current status and patches only when something other than condition timestamps changed
(:func:`scheduler.batch.lifecycle.status_changed`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter
from typing import Any

from common.resources import Resources
from scheduler.batch.gang import NOT_ENOUGH_PODS_OF_TASK, NOT_ENOUGH_RESOURCES, NOT_ENOUGH_TASKS, READY_REASON
from scheduler.batch.lifecycle import (
    POD_GROUP_READY,
    GangCounts,
    PodGroupPhase,
    QueueState,
    merge_condition,
    podgroup_condition,
    podgroup_phase,
    queue_state_after,
    queue_status_counts,
)
from scheduler.framework.api import SCHEDULED_STATUS, JobInfo, QueueInfo, TaskStatus

__all__ = [
    "UNSCHEDULABLE",
    "SCHEDULED",
    "PodGroupEvent",
    "gang_counts",
    "unschedulable_reason",
    "podgroup_phase_after",
    "podgroup_status",
    "podgroup_event",
    "QueueAllocation",
    "queue_allocated",
    "queue_statuses",
    "statuses_of",
    "with_descendants",
]

UNSCHEDULABLE = "Unschedulable"
SCHEDULED = "Scheduled"
_GANG_PREFIX = re.compile(r"^\d+/\d+ tasks in gang unschedulable: ")


def gang_counts(job: JobInfo) -> GangCounts:
    """Counts ``getPodGroupPhase`` needs: scheduled includes this session's binds and releasing pods on a node."""
    releasing_on_node = sum(1 for t in job.tasks_in(TaskStatus.RELEASING) if t.node_name)
    scheduled = job.count(*SCHEDULED_STATUS, TaskStatus.BINDING, TaskStatus.ALLOCATED) + releasing_on_node
    return GangCounts(
        min_member=job.min_available,
        running=job.count(TaskStatus.RUNNING),
        scheduled=scheduled,
        completed=job.count(TaskStatus.SUCCEEDED, TaskStatus.FAILED),
        unschedulable_this_session=job.unschedulable,
    )


def unschedulable_reason(job: JobInfo) -> str:
    """The ``Unschedulable`` condition's reason: why gang gave up on the job."""
    if not job.check_task_valid():
        return NOT_ENOUGH_PODS_OF_TASK
    if job.valid_task_num() < job.min_available:
        return NOT_ENOUGH_TASKS
    return NOT_ENOUGH_RESOURCES


def podgroup_phase_after(job: JobInfo) -> PodGroupPhase:
    """The phase as the session closes; ``job.phase`` already holds enqueue's admission (Pending → Inqueue)."""
    try:
        previous = PodGroupPhase(job.phase or "Pending")
    except ValueError:
        previous = PodGroupPhase.PENDING
    return podgroup_phase(previous, gang_counts(job))


def podgroup_status(job: JobInfo, previous: Mapping[str, Any] | None, *, session_uid: str, now: str,
                    gang: bool = True) -> dict[str, Any]:
    """The PodGroup ``status`` after the session.

    ``previous`` is the object's current status (its other fields and conditions are kept; conditions merge by
    type as Volcano's ``UpdatePodGroupCondition`` does); ``now`` is an RFC 3339 time; ``gang`` says whether the
    gang plugin ran (only it writes ``Unschedulable`` / ``Scheduled`` conditions).
    """
    old = dict(previous or {})
    conditions = [dict(c) for c in old.get("conditions") or [] if isinstance(c, Mapping)]
    if gang and job.tasks:
        if job.unschedulable:
            cond = podgroup_condition(UNSCHEDULABLE, unschedulable_reason(job), job.job_fit_error,
                                      session_uid=session_uid, now=now)
            conditions = merge_condition(conditions, cond)
        elif job.is_ready():
            cond = podgroup_condition(SCHEDULED, READY_REASON, "", session_uid=session_uid, now=now)
            conditions = merge_condition(conditions, cond)
    new = dict(old)
    new.update({
        "phase": podgroup_phase_after(job).value,
        "running": job.count(TaskStatus.RUNNING),
        "succeeded": job.count(TaskStatus.SUCCEEDED),
        "failed": job.count(TaskStatus.FAILED),
        "conditions": conditions,
    })
    return new


@dataclass(frozen=True, slots=True)
class PodGroupEvent:
    type: str      # Normal | Warning
    reason: str    # Unschedulable | Scheduled
    message: str


def podgroup_event(job: JobInfo, new_phase: str, *, status_changed: bool) -> PodGroupEvent | None:
    """Volcano's ``RecordJobStatusEvent``: a Warning every session while the group waits (Pending, Inqueue,
    Unknown) and gang found it unschedulable, a Normal ``Scheduled`` when its status changed otherwise."""
    if new_phase in (PodGroupPhase.PENDING, PodGroupPhase.INQUEUE, PodGroupPhase.UNKNOWN):
        if not job.unschedulable:
            return None
        detail = _GANG_PREFIX.sub("", job.job_fit_error)
        pending = job.count(TaskStatus.PENDING)
        return PodGroupEvent("Warning", UNSCHEDULABLE, f"{pending}/{len(job.tasks)} tasks in gang unschedulable: "
                                                       f"{detail}")
    if status_changed:
        return PodGroupEvent("Normal", SCHEDULED, POD_GROUP_READY)
    return None


class QueueAllocation:
    """The queues' allocation (:func:`queue_allocated`) kept from one session to the next.

    A job's ``allocated`` is an immutable :class:`Resources`, and a session takes most jobs over from the one
    before (:mod:`scheduler.framework.memo`): a job object still in the same queue with the very same
    ``allocated`` object adds what it added last time.  So the per-queue sums are kept, with what each job (by uid)
    added, and only the jobs that came, went, or hold another queue or amount than last time — a few per session:
    those whose tasks moved, and the PodGroup jobs, whose total is summed afresh each session — change them.
    :meth:`own` compares every job; :meth:`own_changed` only those its caller names.  Integer sums: taking a job's
    amount away and adding the new one gives exactly the fresh sum."""

    __slots__ = ("_held", "_sums")

    def __init__(self) -> None:
        self._held: dict[str, tuple[JobInfo, str, Resources]] = {}   # job uid -> (job, queue, allocated) counted
        self._sums: dict[str, dict[str, int]] = {}   # per queue name (present or not), its jobs' total

    def own(self, jobs: Sequence[JobInfo], queues: Mapping[str, QueueInfo]) -> dict[str, Resources]:
        """Per queue of ``queues``, the sum of its jobs' ``allocated`` (without its descendants')."""
        held = dict(zip(map(_UID, jobs), zip(jobs, map(_QUEUE, jobs), map(_ALLOCATED, jobs), strict=True),
                        strict=True))
        if len(held) != len(jobs):   # a uid listed twice counts twice: summed afresh, nothing kept
            self._held, self._sums = {}, {}
            return _summed(jobs, queues)
        if held != self._held:
            # tuples compare item by item, the same object being equal: only a changed job reaches Resources.__eq__
            self._recount(held, held.keys() | self._held.keys())
        return self._totals(queues)

    def own_changed(self, jobs: Mapping[str, JobInfo], queues: Mapping[str, QueueInfo],
                    changed: Iterable[str], gone: Iterable[str] | None = None) -> dict[str, Resources]:
        """:meth:`own` of ``jobs`` (by uid), when every job not in ``changed`` is the job object the last call
        counted under its uid, with the same queue and ``allocated`` objects: only the named jobs and those gone
        since are looked at (``gone``: a superset of the uids the last call counted that ``jobs`` lacks, when the
        caller knows one; else every counted uid is looked up)."""
        self._recount(jobs, chain(changed, self._held.keys() - jobs.keys() if gone is None else gone))
        return self._totals(queues)

    def _recount(self, jobs: Mapping[str, JobInfo | tuple[JobInfo, str, Resources]], uids: Iterable[str]) -> None:
        """Count each of ``uids`` as ``jobs`` has it now (a job, or a job with its queue and amount), or not at
        all when it is not there."""
        held, sums = self._held, self._sums
        for uid in uids:
            got = jobs.get(uid)
            now = got if got is None or isinstance(got, tuple) else (got, got.queue, got.allocated)
            was = held.get(uid)
            if was is not None and now is not None and was[0] is now[0] and was[1] is now[1] and was[2] is now[2]:
                continue
            if was is not None:
                del held[uid]
                _accumulate(sums, was[1], was[2], -1)
            if now is not None:
                held[uid] = now
                _accumulate(sums, now[1], now[2], 1)

    def _totals(self, queues: Mapping[str, QueueInfo]) -> dict[str, Resources]:
        sums = self._sums
        return {name: Resources(sums.get(name) or {}) for name in queues}


_UID = attrgetter("uid")
_ALLOCATED = attrgetter("allocated")
_QUEUE = attrgetter("queue")


def _summed(jobs: Iterable[JobInfo], queues: Mapping[str, QueueInfo]) -> dict[str, Resources]:
    """:meth:`QueueAllocation.own` job by job, from nothing."""
    sums: dict[str, dict[str, int]] = {name: {} for name in queues}
    for job in jobs:
        acc = sums.get(job.queue)
        if acc is not None:
            for k, v in job.allocated.as_dict().items():
                acc[k] = acc.get(k, 0) + v
    return {name: Resources(acc) for name, acc in sums.items()}


def _accumulate(sums: dict[str, dict[str, int]], queue: str, amount: Resources, times: int) -> None:
    acc = sums.get(queue)
    if acc is None:
        acc = sums[queue] = {}
    for k, v in amount.as_dict().items():
        acc[k] = acc.get(k, 0) + times * v


def queue_allocated(jobs: Iterable[JobInfo], queues: Mapping[str, QueueInfo],
                    kept: QueueAllocation | None = None) -> dict[str, Resources]:
    """``status.allocated`` per queue: requests of Allocated/Binding/Bound/Running tasks.

    When a ``root`` queue exists the queues form a tree through ``spec.parent`` (default ``root``) and every
    ancestor accumulates its descendants' allocation.  ``kept``: the sums of the previous call (updated).
    """
    return with_descendants((kept if kept is not None else QueueAllocation()).own(list(jobs), queues), queues)


def with_descendants(own: Mapping[str, Resources], queues: Mapping[str, QueueInfo]) -> dict[str, Resources]:
    """Each queue's own allocation plus, under a ``root`` queue, its descendants' (:func:`queue_allocated`)."""
    out = dict(own)
    if "root" not in queues:
        return out
    for name, amount in own.items():
        seen = {name}
        parent = (queues[name].parent or "root") if name != "root" else ""
        while parent and parent in queues and parent not in seen:
            out[parent] = out[parent] + amount
            seen.add(parent)
            parent = (queues[parent].parent or "root") if parent != "root" else ""
    return out


def queue_statuses(jobs: Iterable[JobInfo], queues: Mapping[str, QueueInfo],
                   phases: Mapping[str, PodGroupPhase], kept: QueueAllocation | None = None
                   ) -> dict[str, dict[str, Any]]:
    """Each queue's status: ``allocated``, PodGroup counts per phase, and ``state``.

    ``phases`` maps job uid → phase after this session (:func:`podgroup_phase_after`) for jobs that have a
    PodGroup object.  The state follows the queue controller's drain rule (a Closing queue without PodGroups is
    Closed), since no other component drives it.  ``kept``: the allocation sums of the previous call (updated).
    """
    job_list = list(jobs)
    grouped = [(job.queue, phase) for job in job_list if (phase := phases.get(job.uid)) is not None]
    return statuses_of(queues, queue_allocated(job_list, queues, kept), grouped)


def statuses_of(queues: Mapping[str, QueueInfo], allocated: Mapping[str, Resources],
                grouped: Iterable[tuple[str, PodGroupPhase]]) -> dict[str, dict[str, Any]]:
    """:func:`queue_statuses` from each queue's allocation (with its descendants') and the (queue, phase after
    the session) of every job with a PodGroup object."""
    per_queue: dict[str, list[PodGroupPhase]] = {}
    for queue, phase in grouped:
        per_queue.setdefault(queue, []).append(phase)
    out: dict[str, dict[str, Any]] = {}
    for name, q in queues.items():
        groups = per_queue.get(name, [])
        try:
            current = QueueState(q.state or "Open")
        except ValueError:
            current = QueueState.UNKNOWN
        status: dict[str, Any] = {"state": queue_state_after(current, None, len(groups)).value,
                                  "allocated": allocated[name].to_kube()}
        status.update(queue_status_counts(groups).to_status())
        out[name] = status
    return out
