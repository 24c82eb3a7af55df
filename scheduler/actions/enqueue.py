"""enqueue: admit pending jobs (PodGroup Pending → Inqueue) queue by queue (docs/design/scheduler.md §3.1)."""

from __future__ import annotations

from scheduler.framework.api import JobInfo, QueueInfo
from scheduler.framework.plugin import register_action
from scheduler.framework.session import PriorityQueue, Session

__all__ = ["Enqueue"]


class Enqueue:
    name = "enqueue"

    def execute(self, ssn: Session) -> None:
        queues: PriorityQueue[QueueInfo] = ssn.queue_queue()
        seen: set[str] = set()
        jobs: dict[str, PriorityQueue[JobInfo]] = {}
        for job in ssn.jobs.values():
            if job.schedule_start is None:
                # not noted as a change (SingleJob): every session stamps every job, and taking one over clears it
                object.__setattr__(job, "schedule_start", ssn.now)
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            if queue.name not in seen:
                seen.add(queue.name)
                queues.push(queue)
            if job.is_pending():
                jobs.setdefault(queue.name, ssn.job_queue()).push(job)
        while not queues.empty():
            queue = queues.pop()
            jq = jobs.get(queue.name)
            if jq is None or jq.empty():
                continue
            job = jq.pop()
            if not job.min_resources or ssn.job_enqueueable(job):
                ssn.job_enqueued(job)
                job.phase = "Inqueue"
            queues.push(queue)


@register_action("enqueue")
def _factory() -> Enqueue:
    return Enqueue()
