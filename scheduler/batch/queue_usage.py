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


class _Sums:
    """A queue's usage while it is summed: how many jobs allocate (or tasks request) each amount — jobs of a few
    shapes share a few amounts — and plain integer sums, made :class:`Resources` once at the end (the same values
    as adding the jobs' Resources one after the other)."""

    __slots__ = ("allocated", "pending", "unreserved", "inqueue", "elastic", "reserved")

    def __init__(self) -> None:
        self.allocated: dict[Resources, int] = {}
        self.pending: dict[Resources, int] = {}
        self.unreserved: dict[Resources, int] = {}   # the allocations of jobs without minResources
        self.inqueue: dict[str, int] = {}
        self.elastic: dict[str, int] = {}
        self.reserved: dict[str, int] = {}

    def usage(self) -> QueueUsage:
        allocated = _weighted({}, self.allocated)
        request = _weighted(dict(allocated), self.pending)
        elastic = _weighted(dict(self.elastic), {r.clamp_nonnegative(): n for r, n in self.unreserved.items()})
        return QueueUsage(Resources(allocated), Resources(request), Resources(self.inqueue), Resources(elastic),
                          Resources(self.reserved))


def _count(counts: dict[Resources, int], vec: Resources) -> None:
    counts[vec] = counts.get(vec, 0) + 1


def _weighted(total: dict[str, int], counts: Mapping[Resources, int]) -> dict[str, int]:
    for vec, n in counts.items():
        for k, v in vec.items():
            total[k] = total.get(k, 0) + v * n
    return total


def _add(total: dict[str, int], vec: Mapping[str, int]) -> None:
    for k, v in vec.items():
        total[k] = total.get(k, 0) + v


def queue_usage(jobs: Iterable[JobInfo], queues: Iterable[str]) -> dict[str, QueueUsage]:
    """Usage of every queue in ``queues`` that has at least one job (Volcano tracks only those).  A job's
    ``allocated`` is what its Allocated, Binding, Bound and Running tasks request (:class:`JobInfo` keeps it), so
    only its pending tasks are visited, and a job without minResources reserves nothing and holds all of its
    allocation as elastic."""
    known = set(queues)
    sums: dict[str, _Sums] = {}
    for job in jobs:
        if job.queue not in known:
            continue
        u = sums.get(job.queue)
        if u is None:
            u = sums[job.queue] = _Sums()
        allocated = job.allocated
        _count(u.allocated, allocated)
        pending = job.tasks_in(TaskStatus.PENDING)
        for t in pending:
            _count(u.pending, t.resreq)
        if job.min_resources:
            _add(u.inqueue, job_inqueue(job))
            _add(u.elastic, job.elastic())
        else:
            _count(u.unreserved, allocated)
        if pending and not job.is_pending():
            _add(u.reserved, gated_request(job))
    return {name: u.usage() for name, u in sums.items()}
