"""What the jobs of each queue use, request and hold in reserve at session open (docs/design/scheduler.md §4.5, §4.6).

Shared by proportion and capacity: ``allocated`` and ``request`` (allocated + pending, ``pods`` included),
``inqueue`` (minResources admitted but not yet covered by allocation), ``elastic`` (allocation beyond
minResources, which admission may count as reclaimable) and ``reserved`` (scheduling-gated tasks of admitted jobs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from common.resources import Resources
from scheduler.framework.api import ALLOCATED_STATUS, JobInfo, TaskInfo, TaskStatus

__all__ = ["QueueUsage", "is_gated", "gated_request", "deduct_gated", "job_inqueue", "queue_usage"]


def is_gated(task: TaskInfo) -> bool:
    """A pod held back by a kube scheduling gate is not a scheduling candidate yet."""
    return task.gated


def gated_request(job: JobInfo) -> Resources:
    total = Resources()
    for t in job.tasks_in(TaskStatus.PENDING):
        if is_gated(t):
            total = total + t.resreq
    return total


def deduct_gated(res: Mapping[str, int], job: JobInfo) -> Resources:
    """``DeductSchGatedResources``: what gated tasks request is not reserved (never below zero)."""
    gated = gated_request(job)
    if not gated:
        return Resources(res)
    return Resources({k: max(v - gated.get(k, 0), 0) for k, v in res.items()})


def job_inqueue(job: JobInfo) -> Resources:
    """The reservation an admitted job holds: Inqueue, or Running with at least minMember tasks allocated."""
    if not job.min_resources:
        return Resources()
    allocated_tasks = job.count(*ALLOCATED_STATUS)
    if job.phase == "Inqueue" or (job.phase == "Running" and allocated_tasks >= job.min_available):
        return deduct_gated(job.inqueue_resource(), job)
    return Resources()


@dataclass(slots=True)
class QueueUsage:
    allocated: Resources = field(default_factory=Resources)
    request: Resources = field(default_factory=Resources)
    inqueue: Resources = field(default_factory=Resources)
    elastic: Resources = field(default_factory=Resources)
    reserved: Resources = field(default_factory=Resources)


def queue_usage(jobs: Iterable[JobInfo], queues: Iterable[str]) -> dict[str, QueueUsage]:
    """Usage of every queue in ``queues`` that has at least one job (Volcano tracks only those)."""
    known = set(queues)
    out: dict[str, QueueUsage] = {}
    for job in jobs:
        if job.queue not in known:
            continue
        u = out.setdefault(job.queue, QueueUsage())
        for t in job.tasks_in(*ALLOCATED_STATUS):
            u.allocated = u.allocated + t.resreq
            u.request = u.request + t.resreq
        for t in job.tasks_in(TaskStatus.PENDING):
            u.request = u.request + t.resreq
        u.inqueue = u.inqueue + job_inqueue(job)
        u.elastic = u.elastic + job.elastic()
        if not job.is_pending():
            u.reserved = u.reserved + gated_request(job)
    return out
