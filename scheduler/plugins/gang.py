"""gang: all-or-nothing placement by ``minMember`` / ``minTaskMember`` (docs/design/scheduler.md §4.1).

A job whose gang cannot be met is invalid (not scheduled at all), is ready only once ``minMember`` tasks are placed
(allocate binds nothing before that), may be pipelined while victims terminate, and never loses tasks to preemption
below its minimum.  At session close the plugin records on each job why it is not ready, in the words Volcano puts
into the PodGroup's ``Unschedulable`` condition ("3/4 tasks in gang unschedulable: ..."); the engine's write-back
turns that into status and events.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from scheduler.batch.gang import (
    NOT_ENOUGH_PODS_OF_TASK,
    NOT_ENOUGH_TASKS,
    GangJob,
    gang_job_order,
    gang_victims,
    job_fit_error,
    unschedulable_message,
)
from scheduler.framework.api import ALLOCATED_STATUS, SCHEDULED_STATUS, JobInfo, TaskInfo, TaskStatus, compare_tasks
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import PERMIT, REJECT, EventHandler, Session, ValidateResult

__all__ = ["Gang", "gang_fit_error", "schedulable_task_num", "validate"]

NAME = "gang"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ()
SCHEDULABLE, UNSCHEDULABLE = "Schedulable", "Unschedulable"
# SessionMemo value: the claim epoch of the last renewing session this plugin closed
_CLOSED = "gang.closed"


def _pending_reason(task: TaskInfo, last: dict[str, TaskStatus]) -> str:
    """A pending task whose last (discarded) operation was an allocation could be placed: ``Schedulable``."""
    return SCHEDULABLE if last.get(task.uid) in ALLOCATED_STATUS else UNSCHEDULABLE


def schedulable_task_num(job: JobInfo, last: dict[str, TaskStatus]) -> int:
    """Ready tasks plus pending tasks that were allocated in this session before their statement was discarded."""
    pending = sum(1 for t in job.tasks_in(TaskStatus.PENDING) if last.get(t.uid) in ALLOCATED_STATUS)
    return job.ready_task_num() + pending


def gang_fit_error(job: JobInfo, last: dict[str, TaskStatus]) -> str:
    """``JobInfo.FitError()`` for a job at session close: task-status histogram, pending reasons, origin."""
    status_counts = {s.value: n for s in TaskStatus if (n := job.count(s))}
    reasons: dict[str, int] = {}
    for t in job.tasks_in(TaskStatus.PENDING):
        r = _pending_reason(t, last)
        reasons[r] = reasons.get(r, 0) + 1
    origin = job.job_fit_error
    if not origin:
        for t in sorted(job.tasks.values(), key=functools.cmp_to_key(compare_tasks)):
            fe = job.fit_errors.get(t.uid)
            if fe is not None:
                origin = f"{t.name}: {fe.message()}"
                break
    return job_fit_error(job.is_ready(), status_counts, job.min_available, reasons, origin)


def validate(job: JobInfo) -> ValidateResult | None:
    """Not schedulable at all: too few valid tasks of some role, or in total (Volcano's gang jobValid)."""
    if not job.check_task_valid():
        return ValidateResult(False, NOT_ENOUGH_PODS_OF_TASK, "Not enough valid pods of each task for gang-scheduling")
    valid = job.valid_task_num()
    if valid < job.min_available:
        return ValidateResult(False, NOT_ENOUGH_TASKS,
                              f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_available}")
    return None


def _releasing_but_scheduled(job: JobInfo) -> bool:
    """A running gang with tasks being deleted is not "unschedulable": it still holds its minimum on nodes."""
    releasing = [t for t in job.tasks_in(TaskStatus.RELEASING) if t.node_name]
    if not releasing:
        return False
    return job.count(*SCHEDULED_STATUS) + len(releasing) >= job.min_available


class Gang:
    name = NAME

    def __init__(self) -> None:
        # each task's status right after its latest in-session placement (Volcano's LastTransaction)
        self.last: dict[str, TaskStatus] = {}
        # the jobs whose tasks were placed, moved or released in the session (every status change fires an event)
        self.moved: set[str] = set()

    def on_session_open(self, ssn: Session) -> None:
        self.last = {}
        self.moved = set()

        def valid(job: JobInfo) -> ValidateResult | None:
            return validate(job)

        def victims(preemptor: TaskInfo, preemptees: list[TaskInfo]) -> tuple[list[TaskInfo] | None, int]:
            known = [t for t in preemptees if t.job in ssn.jobs]
            gangs = {t.job: GangJob(ssn.jobs[t.job].ready_task_num(), ssn.jobs[t.job].min_available) for t in known}
            chosen = gang_victims([t.job for t in known], gangs)
            return [known[i] for i in chosen], PERMIT

        def job_order(left: JobInfo, right: JobInfo) -> int:
            return gang_job_order(left.is_ready(), right.is_ready())

        def ready(job: JobInfo) -> bool:
            return job.check_task_ready() and job.is_ready()

        def pipelined(job: JobInfo) -> int:
            return PERMIT if job.check_task_pipelined() and job.is_pipelined() else REJECT

        def starving(job: JobInfo) -> bool:
            return job.is_starving()

        def on_allocate(task: TaskInfo) -> None:
            self.last[task.uid] = task.status
            self.moved.add(task.job)

        def on_deallocate(task: TaskInfo) -> None:
            self.moved.add(task.job)

        ssn.add_job_valid_fn(NAME, valid)
        ssn.add_preemptable_fn(NAME, victims)
        ssn.add_reclaimable_fn(NAME, victims)
        ssn.add_job_order_fn(NAME, job_order, key=lambda job: job.is_ready())   # not ready (False) first
        ssn.add_job_ready_fn(NAME, ready)
        ssn.add_job_pipelined_fn(NAME, pipelined)
        ssn.add_job_starving_fn(NAME, starving)
        ssn.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate))

    def on_session_close(self, ssn: Session) -> None:
        for job in self._to_close(ssn):
            if not job.tasks:
                continue
            # validate(job) is None without role minimums and with enough valid tasks (most jobs): not called then
            invalid = None if not job.min_task_member and job.valid_task_num() >= job.min_available else validate(job)
            if invalid is not None:
                job.job_fit_error = invalid.message
                job.unschedulable = True
                continue
            if job.is_ready() or _releasing_but_scheduled(job):
                if job.unschedulable:   # set only when it changes: a job nothing changed may be taken over as it is
                    job.unschedulable = False
                continue
            schedulable = schedulable_task_num(job, self.last)
            job.job_fit_error = unschedulable_message(job.min_available, schedulable, len(job.tasks),
                                                      gang_fit_error(job, self.last))
            job.unschedulable = True
        if ssn.renewing:
            ssn.memo.set_value(_CLOSED, ssn.memo.claimed_epoch)

    def _to_close(self, ssn: Session) -> Iterable[JobInfo]:
        """The jobs whose close may set something: every job, or — in a renewing session following one whose close
        this plugin ran — those not taken over as that session left them (``changed_jobs``) and those moved in this
        one.  A kept job is one that close set nothing on, so it was valid and ready (or releasing but scheduled)
        and not unschedulable; with its tasks where they were, it still is, and its close sets nothing again."""
        memo = ssn.memo
        if not ssn.renewing or memo.value(_CLOSED) != memo.previous_claim:
            return ssn.jobs.values()
        jobs = ssn.jobs
        uids = set(ssn.changed_jobs)
        uids.update(self.moved)
        return [jobs[uid] for uid in uids if uid in jobs]


@register_plugin(NAME)
def _build(args: Arguments) -> Gang:
    return Gang()
