"""enqueue: admit pending jobs (PodGroup Pending → Inqueue) queue by queue (docs/design/scheduler.md §3.1)."""

from __future__ import annotations

from collections.abc import Collection
from itertools import compress, filterfalse
from operator import attrgetter

from scheduler.framework.api import JobInfo, QueueInfo
from scheduler.framework.keyed import OrderedQueue
from scheduler.framework.plugin import register_action
from scheduler.framework.session import PriorityQueue, Session

__all__ = ["Enqueue"]

_START = attrgetter("schedule_start")
_PHASE = attrgetter("phase")
_PENDING_PHASES = frozenset({"", "Pending"})   # JobInfo.is_pending


class Enqueue:
    name = "enqueue"

    def execute(self, ssn: Session) -> None:
        jobs = ssn.jobs_in_play()   # the others are admitted
        _stamp(ssn.unstamped_jobs(), ssn.now)
        queues: PriorityQueue[QueueInfo] = ssn.queue_queue()
        # every queue holding a job, in the order of its first job: the others are never pushed
        for name in ssn.job_queue_names():
            queue = ssn.queues.get(name)
            if queue is not None:
                queues.push(queue)
        # a job is changed only once popped (admitted): its queue may be read by order keys (the same order)
        pending: dict[str, OrderedQueue[JobInfo]] = {}
        for job in compress(jobs, map(_PENDING_PHASES.__contains__, map(_PHASE, jobs))):
            queue = ssn.queues.get(job.queue)
            if queue is not None:
                jq = pending.get(queue.name)
                if jq is None:
                    jq = pending[queue.name] = ssn.settled_job_queue()
                jq.push(job)
        while not queues.empty():
            queue = queues.pop()
            jq = pending.get(queue.name)
            if jq is None or jq.empty():
                continue
            job = jq.pop()
            if not job.min_resources or ssn.job_enqueueable(job):
                ssn.job_enqueued(job)
                job.phase = "Inqueue"
            queues.push(queue)


def _stamp(jobs: Collection[JobInfo], now: float) -> None:
    """Stamp ``schedule_start`` on the jobs without one.  Not noted as a change (SingleJob): a carried job keeps
    its stamp, so a session is handed only the jobs made anew since it was stamped; the jobs are sifted in C (a
    falsy stamp is checked for None)."""
    for job in filterfalse(_START, jobs):
        if job.schedule_start is None:
            object.__setattr__(job, "schedule_start", now)


@register_action("enqueue")
def _factory() -> Enqueue:
    return Enqueue()
