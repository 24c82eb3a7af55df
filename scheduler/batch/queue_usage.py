"""What the jobs of each queue use, request and hold in reserve at session open (docs/design/scheduler.md §4.5, §4.6).

Shared by proportion and capacity: ``allocated`` and ``request`` (allocated + pending, ``pods`` included),
``inqueue`` (minResources admitted but not yet covered by allocation), ``elastic`` (allocation beyond
minResources, which admission may count as reclaimable) and ``reserved`` (scheduling-gated tasks of admitted jobs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field

from common.resources import Resources
from scheduler.framework.api import ALLOCATED_STATUS, JobInfo, TaskInfo, TaskStatus
from scheduler.framework.memo import SessionMemo

__all__ = ["QueueUsage", "is_gated", "gated_request", "deduct_gated", "job_inqueue", "queue_usage",
           "kept_queue_usage"]


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


# what one job adds to its queue: allocated, its pending tasks' requests, inqueue and elastic (None without
# minResources: then its allocation is all elastic), and its gated request when it holds a reservation (else None)
_Part = tuple[Resources, tuple[Resources, ...], Resources | None, Resources | None, Resources | None]


def _part(job: JobInfo) -> _Part:
    pending = job.tasks_in(TaskStatus.PENDING)
    reserved = gated_request(job) if pending and not job.is_pending() else None
    requests = tuple(t.resreq for t in pending)
    if job.min_resources:
        return job.allocated, requests, job_inqueue(job), job.elastic(), reserved
    return job.allocated, requests, None, None, reserved


class _Sums:
    """A queue's usage while it is summed: how many jobs allocate (or tasks request) each amount — jobs of a few
    shapes share a few amounts — and plain integer sums, made :class:`Resources` once at the end (the same values
    as adding the jobs' Resources one after the other)."""

    __slots__ = ("allocated", "pending", "unreserved", "inqueue", "elastic", "reserved", "jobs")

    def __init__(self) -> None:
        self.allocated: dict[Resources, int] = {}
        self.pending: dict[Resources, int] = {}
        self.unreserved: dict[Resources, int] = {}   # the allocations of jobs without minResources
        self.inqueue: dict[str, int] = {}
        self.elastic: dict[str, int] = {}
        self.reserved: dict[str, int] = {}
        self.jobs = 0

    def apply(self, part: _Part, sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) what one job adds to the queue (:func:`_part`)."""
        allocated, pending, inqueue, elastic, reserved = part
        _count(self.allocated, allocated, sign)
        for r in pending:
            _count(self.pending, r, sign)
        if inqueue is None or elastic is None:
            _count(self.unreserved, allocated, sign)
        else:
            _add(self.inqueue, inqueue, sign)
            _add(self.elastic, elastic, sign)
        if reserved is not None:
            _add(self.reserved, reserved, sign)
        self.jobs += sign

    def usage(self) -> QueueUsage:
        allocated = _weighted({}, self.allocated)
        request = _weighted(dict(allocated), self.pending)
        elastic = _weighted(dict(self.elastic), {r.clamp_nonnegative(): n for r, n in self.unreserved.items()})
        return QueueUsage(Resources(allocated), Resources(request), Resources(self.inqueue), Resources(elastic),
                          Resources(self.reserved))


def _count(counts: dict[Resources, int], vec: Resources, sign: int = 1) -> None:
    n = counts.get(vec, 0) + sign
    if n:
        counts[vec] = n
    else:
        del counts[vec]


def _weighted(total: dict[str, int], counts: Mapping[Resources, int]) -> dict[str, int]:
    for vec, n in counts.items():
        for k, v in vec.items():
            total[k] = total.get(k, 0) + v * n
    return total


def _add(total: dict[str, int], vec: Mapping[str, int], sign: int = 1) -> None:
    for k, v in vec.items():
        total[k] = total.get(k, 0) + sign * v


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
        u.apply(_part(job), 1)
    return {name: u.usage() for name, u in sums.items()}


class _Carried:
    """A claiming session's queue usage at its open, for the next one to update: the sums per queue and what each
    job added to them, for the queues ``known`` then."""

    __slots__ = ("known", "sums", "parts")

    def __init__(self, known: tuple[str, ...]) -> None:
        self.known = known
        self.sums: dict[str, _Sums] = {}
        self.parts: dict[str, tuple[str, _Part]] = {}

    def remove(self, uids: Iterable[str]) -> None:
        for uid in uids:
            queue, part = self.parts.pop(uid)
            self.sums[queue].apply(part, -1)

    def add(self, jobs: Mapping[str, JobInfo], uids: Iterable[str]) -> None:
        known = set(self.known)
        for uid in uids:
            job = jobs[uid]
            if job.queue not in known:
                continue
            part = _part(job)
            self.parts[uid] = (job.queue, part)
            u = self.sums.get(job.queue)
            if u is None:
                u = self.sums[job.queue] = _Sums()
            u.apply(part, 1)


def kept_queue_usage(jobs: Mapping[str, JobInfo], queues: Iterable[str], memo: SessionMemo,
                     changed: Set[str] | None, gone: Set[str] | None = None) -> dict[str, QueueUsage]:
    """:func:`queue_usage` of ``jobs`` (by uid), in ``queues`` order.  A claiming session (``changed``: the jobs it
    did not take over as the previous claiming session had them; ``gone``: a superset of those that session had
    and this one has not, None when not known) starts from the previous one's sums and redoes only those jobs,
    which spares the walk over every job of the cluster; it leaves its own sums to the next."""
    known = tuple(queues)
    base: _Carried | None = memo.carried("queue-usage") if changed is not None else None
    if changed is None or base is None or base.known != known:
        base = _Carried(known)
        base.add(jobs, jobs)
    else:
        parts = base.parts
        stale = changed | (parts.keys() - jobs.keys() if gone is None else gone)
        base.remove([uid for uid in stale if uid in parts])
        base.add(jobs, changed)
    if changed is not None:
        memo.carry("queue-usage", base)
    sums = base.sums
    return {name: sums[name].usage() for name in known if name in sums and sums[name].jobs}
