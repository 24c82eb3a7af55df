"""proportion: weighted fair share of the cluster between queues (docs/design/scheduler.md §4.5).

At session open every queue that holds a job gets a *deserved* share by water-filling the cluster total by queue
weight, capped by its capability and its request and floored by its guarantee.  Queues are then served in order
of ``spec.priority`` and ``allocated / deserved``; a queue at its deserved share is overused (allocate drops it),
may not allocate or preempt beyond it, lends what it does not use, and gets it back through reclaim.  Admission
(enqueue) checks a job's ``minResources`` against the queue's real capability.  Event handlers keep the queues'
allocations current as the session allocates and evicts; a share is computed from them when read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from common.resources import Resources
from scheduler.batch.proportion import (
    QueueDemand,
    allocatable,
    enqueue_shortfall,
    overused,
    queue_share,
    quota_message,
    real_capability,
    reclaim_victims,
    water_fill,
)
from scheduler.batch.queue_usage import deduct_gated, kept_queue_usage
from scheduler.batch.quota import sum_resources
from scheduler.framework.api import JobInfo, QueueInfo, TaskInfo
from scheduler.framework.plugin import Arguments, register_plugin
from scheduler.framework.session import PERMIT, REJECT, EventHandler, Session

__all__ = ["Proportion", "QueueAttr"]

NAME = "proportion"
# the argument keys this plugin reads (a nested key as parent/child); tests hold the code and docs to it
ARGUMENTS: tuple[str, ...] = ()


@dataclass(slots=True)
class QueueAttr:
    name: str
    weight: int
    priority: int
    deserved: Resources = field(default_factory=Resources)
    allocated: Resources = field(default_factory=Resources)
    request: Resources = field(default_factory=Resources)
    inqueue: Resources = field(default_factory=Resources)
    elastic: Resources = field(default_factory=Resources)
    real_capability: Resources = field(default_factory=Resources)
    # the share, and the allocated and deserved vectors it was computed from (values are immutable: a change
    # replaces the vector): computed when read, as queue order reads it, not at every placement
    _share: float = 0.0
    _share_of: tuple[Resources, Resources] | None = None

    @property
    def share(self) -> float:
        made_of = self._share_of
        if made_of is None or made_of[0] is not self.allocated or made_of[1] is not self.deserved:
            self._share = queue_share(self.allocated, self.deserved)
            self._share_of = (self.allocated, self.deserved)
        return self._share


class Proportion:
    name = NAME

    def __init__(self) -> None:
        self.attrs: dict[str, QueueAttr] = {}
        self.total = Resources()

    def on_session_open(self, ssn: Session) -> None:
        self.total = ssn.total_resource
        # a claiming session redoes only the jobs it did not take over as they were
        usage = kept_queue_usage(ssn.jobs, ssn.queues, ssn.memo, ssn.changed_jobs if ssn.renewing else None,
                                 ssn.gone_jobs)
        total_guarantee = sum_resources(q.guarantee for q in ssn.queues.values())
        self.attrs = {}
        demands: list[QueueDemand] = []
        for name, u in usage.items():
            q = ssn.queues[name]
            self.attrs[name] = QueueAttr(name, q.weight, q.priority, allocated=u.allocated, request=u.request,
                                         inqueue=u.inqueue, elastic=u.elastic,
                                         real_capability=real_capability(self.total, total_guarantee, q.guarantee,
                                                                         q.capability))
            demands.append(QueueDemand(name, q.weight, u.request, u.allocated, q.guarantee, q.capability))
        for name, deserved in water_fill(self.total, demands, total_guarantee).items():
            self.attrs[name].deserved = deserved

        def queue_order(left: QueueInfo, right: QueueInfo) -> int:
            if left.priority != right.priority:
                return -1 if left.priority > right.priority else 1
            ls = self.attrs[left.name].share if left.name in self.attrs else 0.0
            rs = self.attrs[right.name].share if right.name in self.attrs else 0.0
            return 0 if ls == rs else (-1 if ls < rs else 1)

        def reclaimable(reclaimer: TaskInfo, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo] | None, int]:
            cands: list[tuple[str, Resources]] = []
            known: list[TaskInfo] = []
            for t in reclaimees:
                job = ssn.jobs.get(t.job)
                if job is not None and job.queue in self.attrs:
                    cands.append((job.queue, t.resreq))
                    known.append(t)
            chosen = reclaim_victims(cands, {n: a.allocated for n, a in self.attrs.items()},
                                     {n: a.deserved for n, a in self.attrs.items()})
            return [known[i] for i in chosen], PERMIT

        def is_overused(queue: QueueInfo) -> bool:
            attr = self.attrs.get(queue.name)
            return attr is not None and overused(attr.deserved, attr.allocated)

        def may_allocate(queue: QueueInfo, task: TaskInfo) -> bool:
            if not queue.is_open:
                return False
            attr = self.attrs.get(queue.name)
            return attr is None or not allocatable(attr.allocated, task.resreq, attr.deserved)

        def enqueueable(job: JobInfo) -> int:
            queue = ssn.queues.get(job.queue)
            if queue is None or not queue.is_open:
                return REJECT
            attr = self.attrs.get(job.queue)
            if not job.min_resources or attr is None:
                return PERMIT
            short = enqueue_shortfall(job.min_resources, attr.allocated, attr.inqueue, attr.elastic,
                                      attr.real_capability)
            if not short:
                return PERMIT
            job.job_fit_error = quota_message(short)
            return REJECT

        def enqueued(job: JobInfo) -> None:
            attr = self.attrs.get(job.queue)
            # nothing is deducted from nothing: a job without minResources (a group of one) adds nothing
            if attr is not None and job.min_resources:
                attr.inqueue = attr.inqueue + deduct_gated(job.min_resources, job)

        def on_allocate(task: TaskInfo) -> None:
            attr = self._attr_of(ssn, task)
            if attr is not None:
                attr.allocated = attr.allocated + task.resreq

        def on_deallocate(task: TaskInfo) -> None:
            attr = self._attr_of(ssn, task)
            if attr is not None:
                attr.allocated = attr.allocated - task.resreq

        ssn.add_queue_order_fn(NAME, queue_order)
        ssn.add_reclaimable_fn(NAME, reclaimable)
        ssn.add_overused_fn(NAME, is_overused)
        ssn.add_allocatable_fn(NAME, may_allocate)
        ssn.add_preemptive_fn(NAME, may_allocate)
        ssn.add_job_enqueueable_fn(NAME, enqueueable)
        ssn.add_job_enqueued_fn(NAME, enqueued)
        ssn.add_event_handler(EventHandler(allocate=on_allocate, deallocate=on_deallocate))

    def _attr_of(self, ssn: Session, task: TaskInfo) -> QueueAttr | None:
        job = ssn.jobs.get(task.job)
        return self.attrs.get(job.queue) if job is not None else None

    def on_session_close(self, ssn: Session) -> None:
        return None


@register_plugin(NAME)
def _build(args: Arguments) -> Proportion:
    return Proportion()
