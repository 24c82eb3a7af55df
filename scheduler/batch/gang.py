"""Gang (all-or-nothing) arithmetic (docs/design/scheduler.md §4.1)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "GangJob",
    "gang_victims",
    "gang_job_order",
    "validity_error",
    "unschedulable_message",
    "job_fit_error",
    "READY_REASON",
    "NOT_ENOUGH_TASKS",
    "NOT_ENOUGH_PODS_OF_TASK",
    "NOT_ENOUGH_RESOURCES",
]

NOT_ENOUGH_TASKS = "NotEnoughTasks"
NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
NOT_ENOUGH_RESOURCES = "NotEnoughResources"
READY_REASON = "tasks in gang are ready to be scheduled"


@dataclass(frozen=True, slots=True)
class GangJob:
    """Counts gang needs about one job."""

    ready: int
    min_available: int


def gang_victims(preemptee_jobs: Sequence[str], jobs: Mapping[str, GangJob]) -> list[int]:
    """Indices of preemptees (given by job id, in list order) gang lets go.

    Each victim job keeps a counter starting at its ready count; a preemptee is a victim only while
    the counter exceeds minAvailable, so at most ``ready − minAvailable`` tasks per job are taken.
    """
    counters: dict[str, int] = {}
    chosen: list[int] = []
    for index, job_id in enumerate(preemptee_jobs):
        job = jobs[job_id]
        left = counters.get(job_id, job.ready)
        if left > job.min_available:
            counters[job_id] = left - 1
            chosen.append(index)
        else:
            counters[job_id] = left
    return chosen


def gang_job_order(left_ready: bool, right_ready: bool) -> int:
    """A not-ready job sorts before a ready one; -1 means ``left`` first."""
    if left_ready == right_ready:
        return 0
    return 1 if left_ready else -1


def validity_error(
    valid_tasks: int, min_available: int, role_valid: Mapping[str, int], role_minimum: Mapping[str, int]
) -> tuple[str, str] | None:
    """``(reason, message)`` when the job cannot be gang-scheduled at all, else None."""
    for role, minimum in role_minimum.items():
        if role_valid.get(role, 0) < minimum:
            return NOT_ENOUGH_PODS_OF_TASK, "Not enough valid pods of each task for gang-scheduling"
    if valid_tasks < min_available:
        return (
            NOT_ENOUGH_TASKS,
            f"Not enough valid tasks for gang-scheduling, valid: {valid_tasks}, min: {min_available}",
        )
    return None


def unschedulable_message(min_available: int, schedulable: int, task_count: int, fit_error: str) -> str:
    """PodGroup ``Unschedulable`` condition message, e.g. ``"3/4 tasks in gang unschedulable: ..."``."""
    return f"{min_available - schedulable}/{task_count} tasks in gang unschedulable: {fit_error}"



def _histogram(counts: Mapping[str, int]) -> str:
    return ", ".join(sorted(f"{n} {name}" for name, n in counts.items() if n > 0))


def job_fit_error(
    ready: bool,
    status_counts: Mapping[str, int],
    min_available: int,
    pending_reasons: Mapping[str, int],
    origin: str = "",
) -> str:
    """Volcano's ``JobInfo.FitError()``: why a job as a whole did not fit.

    ``status_counts`` are task counts per status name, ``pending_reasons`` the Pending tasks' reasons
    (``Schedulable``/``Unschedulable``); both histograms are printed as sorted ``"<count> <name>"``
    strings.  ``origin`` is the job-level error, or ``"<task>: <task fit message>"`` of the first
    task that failed, appended as "Origin reason is ...".
    """
    parts = sorted([f"{n} {name}" for name, n in status_counts.items() if n > 0] + [f"{min_available} minAvailable"])
    head = "pod group is ready" if ready else "pod group is not ready"
    msg = f"{head}, {', '.join(parts)}"
    pending = _histogram(pending_reasons)
    if pending:
        msg += f"; Pending: {pending}"
    if origin:
        msg += f". Origin reason is {origin}"
    return msg
